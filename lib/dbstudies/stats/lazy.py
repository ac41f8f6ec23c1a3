"""scipy's `stats` and `special`, imported on first use.

Importing scipy.stats costs about 1.2 s of CPU (it builds its distributions' docstrings);
most `dbstudies` commands — a run's command-line half, `list`, `report`, `runs` — import
the statistics without computing any. `sps.t.ppf(…)` works as with `import scipy.stats as sps`.

>>> round(float(sps.norm.ppf(0.975)), 2)
1.96
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class Deferred(ModuleType):
    """A module that imports `name` when one of its attributes is first read."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        if self._module is None:
            self._module = importlib.import_module(self.__name__)
        return getattr(self._module, attr)


sps = Deferred("scipy.stats")
spf = Deferred("scipy.special")
