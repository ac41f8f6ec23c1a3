"""What a study is, for the loop, the planner, the runner and the report: a `Study` — its
kind's class, whose methods are the hooks, each with its one default here — and the
`Answer` it gives. A study package defines a subclass (of its kind's: `steps.SysbenchStudy`
drives sysbench) that overrides what differs, and exposes one instance as `STUDY`, which
`study.load` returns. Every hook that reads a run takes `(run, p)`: the run and its typed
parameters (`Run.params`); a `Study` is generic over its `Params`, so a hook reads `p.count`,
never `getattr(p, "count", 0)`.

The study's class is all a notebook, the loop or the report may call on it: its hooks, the
helpers its notebook calls (`study.relative_layout(…)`), the constants it declares in its
body; nothing else of its module is reached through it. Its module is the study's home: its
narrative (the module's docstring: its first line is the title).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, ClassVar, Generic, Mapping, TypeVar

from ..core.comparisons import Comparison


@dataclass
class Answer:
    """What a study answers from a run — every study's `answer(run, p)` returns one, and every
    notebook shows it the same way (`report.answer`): its `tables` by key (the measured steps,
    summaries, comparison tables …), which of them hold its verdicts (`verdicts`: words → key,
    in the order the answer lists them), its `conclusion` (Markdown, computed from the
    tables, no claim hard-coded), the source's `claims` it tests (`analysis.claims.Claim`) and
    the `comparisons` its tables are of; `headline`: its own decisive lines (Markdown), which
    join the comparisons' at a glance (dbt3's geometric mean: not one of its per-query cells)."""
    tables: dict[str, Any]
    verdicts: dict[str, str]
    conclusion: str
    claims: list[Any] = field(default_factory=list)
    comparisons: tuple[Comparison, ...] = ()  # the study's (`Params.COMPARISONS`)
    headline: list[str] = field(default_factory=list)

    def __getitem__(self, key: str) -> Any:
        return self.tables[key]

    def take(self, *keys: str) -> tuple[Any, ...]:
        """Several tables at once, for a notebook's later sections."""
        return tuple(self.tables[k] for k in keys)

    def verdict_tables(self) -> dict[str, Any]:
        """The verdict tables by their words, in order."""
        return {words: self.tables[key] for words, key in self.verdicts.items()}


P = TypeVar("P")  # a study's parameters (a `studykit.StudyParams`, which stands above this contract)


class Study(Generic[P]):
    """A kind of study: the hooks the loop, the planner, a sweep and the report call, each
    with its default. `Params` (a `studykit.StudyParams`) and `PROFILES` are required, and so
    are `arms` and `answer`; `GOVERNING` names the server variables its report shows."""
    Params: ClassVar[type]
    PROFILES: ClassVar[Mapping[str, Mapping[str, Any]]]
    GOVERNING: ClassVar[tuple[str, ...]] = ()
    # the notebook it shares with the other faces of one experiment (its name, without
    # .ipynb); None: a notebook of its own, named after the study
    NOTEBOOK: ClassVar[str | None] = None
    # a face's own words in that shared notebook, by part (`report.narrative`)
    NARRATIVE: ClassVar[Mapping[str, str]] = {}

    # ---------------------------------------------------------------- what it compares
    def arms(self, p: P) -> list[Any]:
        """The configurations compared (`studykit.Arm`), the baseline first."""
        raise NotImplementedError(f"{type(self).__name__} declares no arms")

    def answer(self, run: Any, p: P) -> Answer:
        """What the run answers (its tables, verdicts, conclusion)."""
        raise NotImplementedError(f"{type(self).__name__} declares no answer")

    def observations(self, run: Any, p: P) -> Any:
        """What its judged `Params.COMPARISONS` are computed on (a DataFrame: one row per
        observation, the comparisons' columns and cells): `dbstudies plan`, the loop's
        precision and a replication read it."""
        raise NotImplementedError(f"{type(self).__name__} declares no observations")

    # ---------------------------------------------------------------- its plan
    def cells(self, p: P) -> list[dict[str, Any]]:
        """What one block measures (default: the parameters' own cells)."""
        return p.cells()

    def table_cells(self, p: P) -> list[dict[str, Any]] | None:
        """The cells of its comparison tables where they are not the plan's (None: the plan's)."""
        return None

    def block_seconds(self, p: P) -> float:
        """One block's wall-clock estimate (default: the parameters')."""
        return p.block_seconds()

    def warmup_seconds(self, p: P) -> float:
        """The part of `block_seconds` one arm's warm-up takes (default: the parameters')."""
        return p.warmup_seconds()

    def describe(self, p: P, steps: int) -> str | None:
        """What a run measures, in words (None: its steps, rounds and arms)."""
        return None

    # ---------------------------------------------------------------- its loop
    def client(self, p: P, server: Any, record: dict[str, Any]) -> Any:
        """The client a step's context holds for `server` (None: none)."""
        return None

    def prepare(self, ctx: Any) -> None:
        """Load a server's data, once per server (default: nothing)."""

    def warmup(self, ctx: Any) -> None:
        """Warm a server up for the context's arm after each start (default: nothing)."""

    def step(self, ctx: Any, cell: dict[str, Any]) -> None:
        """Measure one cell on the context's arm and store it."""
        raise NotImplementedError(f"{type(self).__name__} declares no step")

    def pair(self, begin: Any, cells: list[dict[str, Any]]) -> None:
        """The steps of one pair, one after another (`begin(i, cell)` readies the `i`-th and
        says it runs; `begin(i, cell, announce=False)` only readies it)."""
        for i, cell in enumerate(cells):
            self.step(begin(i, cell), cell)

    def follow_up(self, run: Any, p: P) -> list[dict[str, Any]]:
        """Cells chosen from what the plan measured, measured after it (default: none)."""
        return []

    def profile_cells(self, run: Any, p: P) -> list[dict[str, Any]]:
        """With `cpu_profile`: the cells measured once more with the server profiled."""
        return []

    def sweep_steps(self, run: Any, p: P) -> Any:
        """The steps a sweep shows side by side (None: every measured step)."""
        return None

    # ---------------------------------------------------------------- its home
    @property
    def module(self) -> ModuleType:
        """The study's module (its package's `__init__`)."""
        return sys.modules[type(self).__module__]


def study_name(study: Study) -> str:
    """The study's name (its package's last component: the folder's name)."""
    return study.module.__name__.rsplit(".", 1)[-1]


def title(study: Study) -> str:
    """The first line of the study module's docstring."""
    return (study.module.__doc__ or study_name(study)).strip().splitlines()[0]
