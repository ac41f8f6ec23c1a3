"""The report's section on a count run's instructions (`count`): where they went, function
by function (`analysis.counted`). Notebooks call it as `report.count_functions`."""
from __future__ import annotations

from typing import Any

from ..store.results import Run
from .shown import note, skip, table


def count_functions(run: Run, steps: Any, arms: list[Any]) -> None:
    """Where a count run's instructions went (`analysis.counted`): per cell and candidate,
    the functions whose instructions per transaction changed most, with their windows' range."""
    from IPython.display import display

    from ..analysis import counted
    views = counted.differences(counted.per_function(run, steps), arms)
    if not views:
        skip("No counted windows with a candidate in this run (`count`, and an arm besides the baseline).")
        return
    for v in views:
        cell = ", ".join(f"{k} {x}" for k, x in v["cell"].items())
        unnamed = "; ".join(f"{a}: {share:.0%}" for a, share in v["unnamed"].items())
        note(f"**{v['candidate']} against {v['baseline']}** ({cell}; medians of {v['windows'][v['baseline']]} and "
             f"{v['windows'][v['candidate']]} windows): the serving threads' instructions per transaction by function, "
             f"its own (and inclusive of its calls: baseline → candidate), largest change of its own first. Without a name (a stripped binary exports only some): {unnamed}.")
        display(table(v["table"]))
