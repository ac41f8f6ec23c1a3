"""ruff (configured in pyproject.toml) over the library and the tests: a finding fails the suite."""
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    p = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "lib", "tests"],
                       cwd=REPO, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-5000:] + p.stderr[-2000:]
