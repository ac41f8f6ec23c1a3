"""The positive control's section: the paused twin against the baseline per metric."""

from __future__ import annotations

from typing import Any

from ..kit.contract import Answer
from .shown import skip, table
from .tables import details


def positive_control(said: Answer, arms: list[Any]) -> None:
    """The positive control (`analysis.control`): what a pause of known size and timing must
    do to each metric, and per cell × metric whether the run's tables found it."""
    from IPython.display import Markdown, display

    from ..analysis import control
    arm = control.control_arm(arms)
    found = said.tables.get("control")
    if arm is None or found is None or found.empty:
        skip("The positive control was off (`positive_control = {\"pause_ms\": 20, \"every_s\": 2}` "
             "turns it on).")
        return
    pause = arm.pause
    display(Markdown(f"*{arm.label} is the baseline's twin on a server of its own that "
                     f"{control.model(pause, found)}*"))
    display(Markdown("\n".join(control.lines(found, pause))))
    display(table(control.layout(found)))
    details("The positive control: what the pause must do and what each table found, per cell",
            table(found), "`expectation`: the pause's size against what the metric can see "
            "(the paused share against the cell's MDE; the share of transactions delayed against "
            "the percentile's tail); `measured`: the paused twin "
            "against the baseline with its 95 % CI.")


