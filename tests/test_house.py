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


def test_a_name_from_before_the_wings_imports_the_module_at_its_home():
    """Notebooks and studies written before the wings keep working: `dbstudies.<old name>`,
    imported either way, is the module at its home (the same object: a patch of one is a patch
    of the other); a name that never was one is still an error."""
    import importlib
    import subprocess
    import sys

    import dbstudies
    for old, home in dbstudies.MOVED.items():
        assert importlib.import_module(f"dbstudies.{old}") is importlib.import_module(f"dbstudies.{home}"), old
        assert getattr(dbstudies, old) is importlib.import_module(f"dbstudies.{home}")
        assert not (PACKAGE / f"{old}.py").exists()  # moved, not copied
    fresh = subprocess.run([sys.executable, "-c", "from dbstudies import results, checks\n"
                            "from dbstudies.studykit import arms_of\nfrom dbstudies.errors import ParamError\n"
                            "import dbstudies.experiment as e\nprint(results.__name__, e.__name__, arms_of.__module__)"],
                           capture_output=True, text=True, timeout=60)
    assert fresh.stdout.split() == ["dbstudies.store.results", "dbstudies.measure.experiment", "dbstudies.kit.arms"], fresh.stderr
    try:
        importlib.import_module("dbstudies.no_such_module")
    except ModuleNotFoundError:
        pass
    else:
        raise AssertionError("an unknown name imported")
