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


def test_ours_import_each_module_from_its_home():
    """The names from before the wings are for code written before them: the library, its tests,
    notebooks and docs name every module at its home (a newcomer reading one finds the file)."""
    import dbstudies
    root = PACKAGE.parents[1]
    said = re.compile(r"from dbstudies import ([\w, ()]+)|from dbstudies\.(\w+)|import dbstudies\.(\w+)|`dbstudies\.(\w+)[.`(]")
    files = [*root.glob("lib/**/*.py"), *root.glob("tests/**/*.py"), *root.glob("notebooks/*.ipynb"),
             *root.glob("tests/fixtures/**/*.ipynb"), *root.glob("docs/*.md"), root / "README.md",
             *root.glob("lib/dbstudies/studies/**/*.md")]
    old = []
    for f in files:
        if f.name == "test_house.py" or f == PACKAGE / "__init__.py":  # the compatibility itself
            continue
        for n, line in enumerate(f.read_text().splitlines(), 1):
            for m in said.finditer(line):
                names = [x.strip(" ()") for x in m.group(1).split(",")] if m.group(1) else [next(g for g in m.groups() if g)]
                old += [f"{f.relative_to(root)}:{n}: dbstudies.{x}" for x in names if x in dbstudies.MOVED]
    assert old == [], old
    assert said.search("from dbstudies import plots, checks").group(1).endswith("checks")  # the pattern sees one


def test_a_command_that_draws_no_figure_imports_no_plotting_library():
    """The command line's half of `dbstudies run`, `report` and a sweep import what they use:
    rendering a report or listing the studies loads neither matplotlib nor seaborn (≈ 1 s of
    CPU each time; a wing's face once pulled them in through the report and the flame graphs)."""
    import subprocess
    import sys
    probe = ("import sys\nimport dbstudies.workflows.runner, dbstudies.workflows.sweep, dbstudies.report\n"
             "from dbstudies.kit import study\n[study.load(n) for n in study.names()]\n"
             "print(sorted(m for m in ('matplotlib.pyplot', 'seaborn', 'scipy.stats') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
