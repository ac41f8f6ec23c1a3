"""The house's shape, held: a run's record read through its one reader, a study's hooks its
class's methods (docs/architecture.md). Read from the source, as a newcomer would."""
from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "lib" / "dbstudies"
STUDIES = PACKAGE / "studies"


def sources(root: Path = PACKAGE) -> dict[str, str]:
    return {str(p.relative_to(PACKAGE)): p.read_text() for p in sorted(root.rglob("*.py"))}


def test_a_runs_record_is_read_through_its_one_reader():
    """`meta["…"]` / `.metadata["…"]`: a raw read of a run's metadata.json, whose keys only
    `record` declares (with their types and defaults); every view reads `run.record`."""
    raw = re.compile(r"""\b(meta|\.metadata)\[["']""")
    readers = [name for name, text in sources().items() if raw.search(text)]
    assert readers == [], readers
    assert raw.search('host = run.metadata["host"]') and raw.search("x = meta['arms']")  # the pattern sees one


def test_no_hook_is_bound_twice():
    """A hook is written once, as its class's method: no `staticmethod(…)` binding of a
    module function in any study (a forgotten one silently ran the kind's default)."""
    bound = [name for name, text in sources(STUDIES).items() if "staticmethod(" in text]
    assert bound == [], bound
