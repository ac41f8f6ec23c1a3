"""The package's wings and the one direction of its imports (docs/architecture.md, "Layout").

Every import of a dbstudies module by another one is read from the source, function-local
and type-only ones (`if TYPE_CHECKING:`) included, and must point down the wings' order: a
module imports only modules of a wing below its own, or of its own wing without a circle.
A folder is one room: the house stands on at most ten of them, and so does each wing.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "lib" / "dbstudies"

# the wings, bottom first: a module imports only from a wing below its own, or within its own
# wing without a circle (docs/architecture.md "Layout" says the same in words)
WINGS = [
    ("core", "the ground: errors, paths, the subprocess helper, the comparison record"),
    ("kernel", "what a live notebook kernel needs"),
    ("servers", "a server: flavours, dialects, starting it"),
    ("workloads", "sysbench and our Lua workloads, SQL sessions"),
    ("tpch", "TPC-H data and queries"),
    ("observe", "a server's process observed and paused"),
    ("store", "the run store and what it records"),
    ("stats", "the numbers"),
    ("plots", "the figures"),
    ("kit", "what a study is and is built from"),
    ("analysis", "what a run's tables say"),
    ("measure", "measuring a run"),
    ("studies", "the built-in studies"),
    ("report", "a run's report"),
    ("workflows", "what works over runs"),
    ("commands", "the command line's commands"),
    ("cli", "the console script"),
    ("__main__", "python -m dbstudies"),
]
MAX_ROOT_MODULES = 8  # modules directly in lib/dbstudies (its __init__ among them)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts) or "dbstudies"


def room(name: str) -> str:
    """A module's room: its wing (the folder it lies in), or itself directly in the package."""
    return name.split(".")[0]


def rank(name: str) -> int:
    return [w for w, _ in WINGS].index(room(name))


def imports(path: Path) -> list[tuple[str, int]]:
    """(module imported, line) for every import of a dbstudies module in `path`."""
    tree = ast.parse(path.read_text())
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    known = {module_name(p) for p in PACKAGE.rglob("*.py")}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name.removeprefix("dbstudies.") for a in node.names
                     if a.name == "dbstudies" or a.name.startswith("dbstudies.")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1] if node.level > 1 else package
                base = ".".join(base + ([node.module] if node.module else []))
            elif (node.module or "").split(".")[0] == "dbstudies":
                base = node.module.removeprefix("dbstudies").lstrip(".")
            else:
                continue
            names = [f"{base}.{a.name}".lstrip(".") if f"{base}.{a.name}".lstrip(".") in known
                     else base for a in node.names]
        else:
            continue
        out += [(n or "dbstudies", node.lineno) for n in names]
    return out


def graph() -> dict[str, set[str]]:
    """module → the dbstudies modules it imports (the package itself: an import of a name
    that is no module of its own — a name from before the wings, kept for notebooks only)."""
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {m: {t for t, _ in imports(p)} for m, p in files.items() if m != "dbstudies"}


def violations() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        me = module_name(path)
        if me == "dbstudies":
            continue
        for target, line in imports(path):
            if target == "dbstudies" or room(target) != room(me) and rank(target) >= rank(me):
                found.append(f"{path.relative_to(PACKAGE)}:{line}: {me} imports {target}, "
                             f"which is not below it")
    return found


def circles() -> list[list[str]]:
    """Circles of imports (within a wing: between wings the order forbids them)."""
    edges, found, state = graph(), [], {}

    def walk(m: str, path: list[str]) -> None:
        state[m] = 1
        for t in sorted(edges.get(m, ())):
            if state.get(t) == 1:
                found.append(path[path.index(t):] + [t])
            elif t not in state:
                walk(t, [*path, t])
        state[m] = 2
    for m in sorted(edges):
        if m not in state:
            walk(m, [m])
    return found


def test_every_module_lies_in_a_wing_and_few_lie_loose():
    """Every folder is a wing of the list; at most `MAX_ROOT_MODULES` modules lie directly in
    lib/dbstudies (the console script's, the package's face)."""
    rooms = {room(module_name(p)) for p in PACKAGE.rglob("*.py")} - {"dbstudies"}
    assert rooms == {w for w, _ in WINGS}
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= MAX_ROOT_MODULES and "__init__.py" in loose, loose


def test_imports_go_down_the_wings_only():
    assert violations() == []
    assert circles() == []


@pytest.mark.parametrize("source, bad", [
    ("from ..measure import experiment\n", True),                     # up, at the top
    ("def f():\n    from ..workflows.runner import execute\n", True),  # up, hidden in a function
    ("import dbstudies.cli\n", True),                                 # up, absolute
    ("from .. import results\n", True),                               # a name from before the wings
    ("from ..core import errors\nfrom . import samples\n", False),     # down, and within its wing
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..measure.experiment import Context\n", True),
])
def test_the_walk_sees_an_import_against_the_order(tmp_path, monkeypatch, source, bad):
    """The check itself: a module of the numbers wing importing upward is caught, at the top,
    inside a function or for type hints only; importing downward is not."""
    fake = tmp_path / "dbstudies"
    fake.mkdir()
    for path in PACKAGE.rglob("*.py"):
        (fake / path.relative_to(PACKAGE)).parent.mkdir(parents=True, exist_ok=True)
        (fake / path.relative_to(PACKAGE)).write_text(path.read_text())
    (fake / "stats" / "walk.py").write_text(source)
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    assert bool([v for v in violations() if v.startswith("stats/walk.py")]) is bad


def test_a_circle_within_a_wing_is_seen(tmp_path, monkeypatch):
    fake = tmp_path / "dbstudies"
    for path in PACKAGE.rglob("*.py"):
        (fake / path.relative_to(PACKAGE)).parent.mkdir(parents=True, exist_ok=True)
        (fake / path.relative_to(PACKAGE)).write_text(path.read_text())
    (fake / "core" / "errors.py").write_text("from . import paths\n")
    (fake / "core" / "paths.py").write_text("def f():\n    from .errors import X\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    assert any(set(c) == {"core.errors", "core.paths"} for c in circles()), circles()


def test_the_layout_names_every_wing_in_order_and_every_module_in_its_wing():
    """docs/architecture.md "Layout" names every wing in the order here, and every module in
    its wing's paragraph: a module added, moved or renamed without the docs saying so fails."""
    doc = (PACKAGE.parents[1] / "docs" / "architecture.md").read_text()
    layout = doc[doc.index("## Layout"):]
    layout = layout[:layout.index("\nenv/")]
    heads = [re.search(rf"^\s+{re.escape(w)}(/|\.py)", layout, re.M) for w, _ in WINGS]
    assert all(heads), [w for (w, _), h in zip(WINGS, heads) if not h]
    starts = [h.start() for h in heads]
    assert starts == sorted(starts), "the wings are not in order"
    for k, (wing, _) in enumerate(WINGS):
        part = layout[starts[k]:starts[k + 1] if k + 1 < len(starts) else len(layout)]
        mods = sorted({p.stem for p in (PACKAGE / wing).glob("*.py")} - {"__init__"})
        missing = [m for m in mods if not re.search(rf"(?<![\w.-]){re.escape(m)}\b", part)]
        assert not missing, f"docs/architecture.md Layout does not name {missing} under {wing}/"


MAX_FLOORS = 10  # rooms, __main__ to the ground: a folder counts as one


def tallest(edges: dict[str, set[str]]) -> list[str]:
    """The tallest chain of a graph (of equally tall chains, the first by name)."""
    memo: dict[str, list[str]] = {}

    def up(m: str) -> list[str]:
        if m not in memo:
            memo[m] = [m, *max((up(t) for t in sorted(edges.get(m, ()))), key=len, default=[])]
        return memo[m]
    return max((up(m) for m in sorted(edges)), key=len, default=[])


def floors() -> list[str]:
    """The tallest chain of rooms (wings and loose modules)."""
    edges: dict[str, set[str]] = {}
    for m, targets in graph().items():
        edges.setdefault(room(m), set()).update(room(t) for t in targets if t != "dbstudies" and room(t) != room(m))
    return tallest(edges)


def test_the_house_stands_on_at_most_ten_floors_and_so_does_each_wing():
    house = floors()
    assert len(house) <= MAX_FLOORS, " → ".join(house)
    edges = graph()
    for wing, _ in WINGS:
        inside = {m: {t for t in ts if room(t) == wing} for m, ts in edges.items() if room(m) == wing}
        chain = tallest(inside)
        assert len(chain) <= MAX_FLOORS, " → ".join(chain)


def test_the_floors_are_counted_and_a_taller_house_is_seen(tmp_path, monkeypatch):
    """The measure itself: a loose module importing the top of the house stands above it."""
    fake = tmp_path / "dbstudies"
    for path in PACKAGE.rglob("*.py"):
        (fake / path.relative_to(PACKAGE)).parent.mkdir(parents=True, exist_ok=True)
        (fake / path.relative_to(PACKAGE)).write_text(path.read_text())
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    before = floors()
    assert before[0] in ("__main__", "cli") and before[-1] == "core"
    (fake / "roof.py").write_text("from . import __main__\n")
    assert floors() == ["roof", "__main__", *before[1:]] or floors()[0] == "roof"


MAX_LINES = 400  # a module's; past it, split it where its concepts split (issue 67; 500 before)


def test_no_module_is_over_400_lines():
    sizes = {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    assert {p: n for p, n in sizes.items() if n > MAX_LINES} == {}


LONG, MAX_LONG = 40, 12  # lines of a function (its docstring and decorators included); how many may be longer


def long_functions() -> list[tuple[int, str]]:
    out = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1 + len(node.decorator_list)
                if lines > LONG:
                    out.append((lines, f"{path.relative_to(PACKAGE)}:{node.name}"))
    return sorted(out, reverse=True)


def test_at_most_twelve_functions_are_over_forty_lines():
    """A long function is split where it does two things (issue 67: 30 were over 40 lines)."""
    found = long_functions()
    assert len(found) <= MAX_LONG, found
