"""dbstudies — reproducible MySQL/MariaDB performance studies (driver library).

Submodules load on first use (`dbstudies.stats` imports scipy only when touched), so
that `dbstudies list` and the study declarations stay light.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_SUBMODULES = {"analysis", "cli", "errors", "experiment", "params", "paths", "plots", "proc",
               "probes", "results", "runner", "schema", "servers", "stats", "study", "studies",
               "timeseries", "tpch", "workloads"}


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
