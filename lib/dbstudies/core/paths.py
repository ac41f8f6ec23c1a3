"""Where the repository's folders are (the package is installed editable from lib/)."""
from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parents[1]  # lib/dbstudies
REPO = PACKAGE.parents[1]
ENV_DIR = REPO / "env"
SERVERS_DIR = ENV_DIR / "servers"
CNF_DIR = ENV_DIR / "cnf"
NOTEBOOKS_DIR = REPO / "notebooks"
DATA_DIR = REPO / "data"
RUNS_DIR = DATA_DIR / "runs"
FIGURES_DIR = REPO / "figures"
STUDIES_DIR = PACKAGE / "studies"  # the built-in studies, a package each


def study_folder(module: Any) -> Path | None:
    """The folder of a study of your own (a package outside `STUDIES_DIR`); None for a
    built-in study."""
    folder = Path(getattr(module, "__path__", [""])[0] or ".").resolve()
    return None if folder.parent == STUDIES_DIR else folder


def sha256(path: Path) -> str:
    """The SHA-256 of a file (cached data is checked with it before reuse)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def disk_usage(path: Path) -> int:
    """Bytes allocated below `path` (what `du` counts)."""
    total = 0
    for f in Path(path).rglob("*"):
        with contextlib.suppress(OSError):
            if not f.is_symlink():
                total += f.stat().st_blocks * 512
    return total
