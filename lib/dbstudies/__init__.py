"""dbstudies — reproducible MySQL/MariaDB performance studies (driver library).

The package is a house of wings, one layer each, bottom first (docs/architecture.md, "Layout";
tests/test_layers.py holds the order): core, servers, observe, workloads and tpch, store,
stats and plots, kit, measure and analysis, studies and report, workflows, commands — and
kernel, what a live notebook kernel needs. Import a module from its wing
(`from dbstudies.measure import experiment`, `from dbstudies import report, plots`).

A module's name before the wings (`dbstudies.results`, `from dbstudies import checks`) still
imports the same module: `MOVED` says where each went, for the notebooks and studies written
against those names.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import sys
from types import ModuleType
from typing import Any

__version__ = "0.1.0"

# a module's name before the wings → its home now (a wing's module)
MOVED = {
    "tails": "analysis.tails", "timeseries": "analysis.timeseries", "comparisons": "core.comparisons",
    "errors": "core.errors", "paths": "core.paths", "proc": "core.proc", "lab": "kernel.lab",
    "live": "kernel.live", "passes": "kernel.passes", "contract": "kit.contract",
    "study": "kit.study", "studykit": "kit.studykit", "thread_handling": "kit.thread_handling",
    "checks": "measure.checks", "experiment": "measure.experiment", "inventory": "measure.inventory",
    "ownership": "measure.ownership", "precision": "measure.precision",
    "schedule": "measure.schedule", "steps": "measure.steps", "callgrind": "observe.callgrind",
    "counters": "observe.counters", "pauses": "observe.pauses", "probes": "observe.probes",
    "profiler": "observe.profiler", "flamegraph": "observe.flamegraph", "css": "report.css",
    "described": "report.described", "glance": "report.glance", "instructions": "report.instructions",
    "render": "report.render", "replicated": "report.replicated", "shown": "report.shown",
    "archive": "store.archive", "params": "store.params",
    "provenance": "store.provenance", 
    "results": "store.results", "schema": "store.schema", "settings": "store.settings",
    "tables": "store.tables", "bisection": "workflows.bisection", "cluster": "workflows.cluster",
    "generated": "workflows.generated", "history": "workflows.history", "planner": "workflows.planner",
    "runner": "workflows.runner", "series": "workflows.series", "sharing": "workflows.sharing",
    "sweep": "workflows.sweep",
}


class _Moved(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`import dbstudies.<old name>` gives the module at its new home (the same object)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        old = name.removeprefix(__name__ + ".")
        return importlib.util.spec_from_loader(name, self) if old != name and old in MOVED else None

    def create_module(self, spec: Any) -> ModuleType:
        return importlib.import_module(f"{__name__}.{MOVED[spec.name.removeprefix(__name__ + '.')]}")

    def exec_module(self, module: ModuleType) -> None:
        """Nothing: the module was executed at its home."""


sys.meta_path.insert(0, _Moved())


def __getattr__(name: str) -> ModuleType:
    """`dbstudies.<old name>`, `from dbstudies import <old name>`: the module at its home."""
    if name in MOVED:
        return importlib.import_module(f"{__name__}.{MOVED[name]}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if os.environ.get("DBSTUDIES_STACKS_ON_USR1"):  # a kernel the `dbstudies` command started (cli.main)
    import faulthandler
    import signal
    faulthandler.register(signal.SIGUSR1, file=sys.__stderr__, all_threads=True)

if "ipykernel" in sys.modules:  # a live kernel: Run All stops at a failing cell (`passes`)
    from .kernel import passes
    passes.in_kernel()
