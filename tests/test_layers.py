"""The package's layers and the one direction of its imports (docs/architecture.md, "Layout").

Every import of a dbstudies module by another one is read from the source, function-local
and type-only ones (`if TYPE_CHECKING:`) included, and must point down this order: a module
imports only modules of an earlier layer, or earlier in its own layer.
"""
from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "lib" / "dbstudies"

# bottom first; docs/architecture.md "Layout" says the same in words
LAYERS = [
    ("ground", ["errors", "paths", "schema", "proc", "css", "live", "passes", "comparisons", "contract"]),
    ("servers", ["servers.cnf", "servers.dialect", "servers.tree", "servers.rootfs", "servers.launch", "servers.flavour", "servers.catalogue",
                 "servers.instance", "servers.remote", "servers.compression", "servers.factory",
                 "servers"]),
    ("workloads, probes, TPC-H", ["pauses", "counters", "callgrind", "workloads", "workloads.sysbench_output", "workloads.sysbench", "workloads.tpcc",
                                  "workloads.linkbench", "workloads.sql", "probes", "profiler", "tpch"]),
    ("store", ["cpus", "provenance", "record", "params", "tables", "results", "exports", "progress", "settings", "archive", "ownership"]),
    ("numbers", ["stats.lazy", "stats.samples", "stats.paired", "stats.profiles", "stats.changepoints", "stats.reach", "stats.stopping", "stats.censored", "stats.replication", "stats", "timeseries", "plots.axes", "plots.*", "plots", "flamegraph"]),
    ("study contract", ["arms", "studykit", "thread_handling", "study"]),
    ("plan", ["schedule", "checks", "tails"]),
    ("measurement loop", ["steps", "precision", "inventory", "loop", "experiment"]),
    ("analysis", ["analysis.words", "analysis", "analysis.claims", "analysis.findings", "analysis.sentences", "analysis.aa", "analysis.caveats", "analysis.transactions", "analysis.control", "analysis.sysbench_answer", "analysis.said", "analysis.runs", "analysis.replication",
                  "analysis.server_view", "analysis.costs", "analysis.cpu_profiles", "analysis.counted"]),
    ("studies", ["studies", "studies.scaling", "studies.*.queries", "studies.*.storage", "studies.*.levels", "studies.*"]),
    ("report", ["shown", "described", "glance", "render", "replicated", "instructions", "report.tables", "report.setup",
                "report.costs", "report.profiles", "report.controls", "report.answer", "report"]),
    ("runner", ["runner"]),
    ("tools", ["planner", "cluster", "sweep", "series", "history", "bisection", "lab", "sharing", "generated"]),
    ("command line", ["commands.kit", "commands.studies", "commands.runs", "commands.servers", "commands.builds",
                      "commands.sweeps", "commands.loader", "commands", "cli", "__main__"]),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts) or "dbstudies"


def rank(name: str) -> tuple[int, int]:
    for i, (_, modules) in enumerate(LAYERS):
        for j, m in enumerate(modules):
            if m == name or fnmatch.fnmatchcase(name, m):
                return i, j
    raise KeyError(name)


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


def violations() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        me = module_name(path)
        if me == "dbstudies":
            continue
        for target, line in imports(path):
            if target == "dbstudies" or rank(target) >= rank(me) and target != me:
                found.append(f"{path.relative_to(PACKAGE)}:{line}: {me} imports {target}, "
                             f"which is not below it")
    return found


def test_every_module_has_a_layer():
    missing = []
    for path in PACKAGE.rglob("*.py"):
        try:
            rank(module_name(path))
        except KeyError:
            missing.append(module_name(path))
    assert module_name(PACKAGE / "__init__.py") == "dbstudies" and sorted(missing) == ["dbstudies"]


def test_imports_go_down_the_layers_only():
    assert violations() == []


@pytest.mark.parametrize("source, bad", [
    ("from . import experiment\n", True),                       # up, at the top
    ("def f():\n    from .runner import execute\n", True),      # up, hidden in a function
    ("import dbstudies.cli\n", True),                           # up, absolute
    ("from . import errors, stats\n", False),                   # down
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .experiment import Context\n", True),
])
def test_the_walk_sees_an_import_against_the_order(tmp_path, monkeypatch, source, bad):
    """The check itself: a module of the numbers layer importing upward is caught, at the
    top, inside a function or for type hints only; importing downward is not."""
    fake = tmp_path / "dbstudies"
    fake.mkdir()
    for path in PACKAGE.rglob("*.py"):
        (fake / path.relative_to(PACKAGE)).parent.mkdir(parents=True, exist_ok=True)
        (fake / path.relative_to(PACKAGE)).write_text(path.read_text())
    (fake / "stats.py").write_text(source)
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    assert bool([v for v in violations() if v.startswith("stats.py")]) is bad


def test_the_readme_layout_names_every_module_layer_by_layer():
    """docs/architecture.md "Layout" names every module, each layer's after the start of the layer below:
    a module added or renamed without the docs saying so fails here."""
    readme = (PACKAGE.parents[1] / "docs" / "architecture.md").read_text()
    layout = readme[readme.index("## Layout"):]
    layout = layout[:layout.index("\nenv/")]
    cursor = layout.index("lib/dbstudies/")
    for layer, modules in LAYERS:
        names = [m.removesuffix(".*").rsplit(".", 1)[-1] for m in modules
                 if m not in ("__main__", "studies")]
        found = {}
        for n in names:  # each name after the start of the layer before
            hit = re.compile(rf"(?<![\w.-]){re.escape(n)}\b").search(layout, cursor)
            found[n] = hit.start() if hit else -1
        missing = [n for n, i in found.items() if i < 0]
        assert not missing, f"docs/architecture.md Layout does not name {missing} in or after the layer before {layer}"
        cursor = min(found.values())


MAX_CHAIN = 12  # files, __main__ to the ground; issue 67: 12 for one commit (the splits added loop and arms), then a folder counts as one room


def reexports_only(path: Path) -> bool:
    """A package `__init__` that only imports and re-exports (a docstring, imports, `__all__`)."""
    return path.name == "__init__.py" and all(
        isinstance(n, (ast.Import, ast.ImportFrom))
        or isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
        or isinstance(n, ast.Assign) and [getattr(t, "id", "") for t in n.targets] == ["__all__"]
        for n in ast.parse(path.read_text()).body)


def longest_chain() -> list[str]:
    """The tallest chain of imports between the package's files; a package whose `__init__`
    only re-exports counts as one file (its folder), imports inside it not counted."""
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    folders = [m for m, p in files.items() if m != "dbstudies" and reexports_only(p)]

    def node(m: str) -> str:
        return next((f for f in folders if m == f or m.startswith(f + ".")), m)

    edges: dict[str, set[str]] = {}
    for m, p in files.items():
        edges.setdefault(node(m), set()).update(
            node(t) for t, _ in imports(p) if t in files and node(t) != node(m))
    memo: dict[str, list[str]] = {}

    def tallest(m: str) -> list[str]:  # of equally tall chains, the first by name: one answer every run
        if m not in memo:
            below = [tallest(t) for t in sorted(edges[m])]
            memo[m] = [m, *max(below, key=len, default=[])]
        return memo[m]

    return max((tallest(m) for m in sorted(edges)), key=len)


def test_the_longest_chain_of_imports_is_at_most_ten_files_tall():
    chain = longest_chain()
    assert len(chain) <= MAX_CHAIN, " → ".join(chain)


def test_the_chain_counts_files_and_sees_a_taller_house(tmp_path, monkeypatch):
    """The measure itself: a module importing the top of the house stands one floor above it."""
    fake = tmp_path / "dbstudies"
    for path in PACKAGE.rglob("*.py"):
        (fake / path.relative_to(PACKAGE)).parent.mkdir(parents=True, exist_ok=True)
        (fake / path.relative_to(PACKAGE)).write_text(path.read_text())
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    before = longest_chain()
    (fake / "roof.py").write_text(f"from . import {before[0].rsplit('.', 1)[-1]}\n")
    assert longest_chain() == ["roof", *before]
    assert not imports(fake / (before[-1].replace(".", "/") + ".py"))  # the chain ends on the ground


def test_no_module_is_over_500_lines():
    """A module that grows past 500 lines is split where a concept splits (issue 44)."""
    sizes = {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    assert {p: n for p, n in sizes.items() if n > 500} == {}
