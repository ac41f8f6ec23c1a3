"""The positive control: a twin of the baseline whose server process the driver stops
(SIGSTOP) for `pause_ms` every `every_s` seconds of each measured step and lets go again
(SIGCONT) — a disturbance of known size and timing that the run's tables should find, where
the A/A twin shows they do not find what is not there.

`Pause` is the parameter (`positive_control`, e.g. `{"pause_ms": 20, "every_s": 2}`),
`PositiveControl` the parameters' mix-in that checks it, and `Pauser` the observer of a
sysbench run that pauses its server and records each pause: when it began (seconds after
sysbench started) and how long the server was stopped, measured.
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

SUFFIX = " (paused)"     # the positive control's label: the baseline's, and this
MIN_GAP_MS = 100.0       # between two pauses the server runs at least this long


@dataclass(frozen=True)
class Pause:
    """`pause_ms` of every `every_s` seconds stopped; the first pause `every_s` / 2 into a step."""
    pause_ms: float
    every_s: float

    @property
    def share(self) -> float:
        """The fraction of a step the server is stopped.

        >>> Pause(20, 2).share, Pause(200, 1).share
        (0.01, 0.2)
        """
        return self.pause_ms / (1000 * self.every_s)

    def starts(self, duration_s: float) -> list[float]:
        """The model's dose for a step of nominal `duration_s` seconds: when each pause begins
        (seconds after sysbench started), every one that can end inside the step. A step that
        overruns its nominal duration gets no more, and none is cut short by the step's end.

        >>> Pause(200, 1).starts(2), Pause(20, 2).starts(10), Pause(600, 1).starts(0.5)
        ([0.5, 1.5], [1.0, 3.0, 5.0, 7.0, 9.0], [])
        """
        out, k = [], 0
        while self.every_s * (k + 0.5) + self.pause_ms / 1000 <= duration_s + 1e-9:
            out.append(self.every_s * (k + 0.5))
            k += 1
        return out

    def text(self) -> str:
        """The pause in words.

        >>> Pause(20, 2).text()
        '20 ms every 2 s (1 % of the time)'
        """
        return f"{self.pause_ms:g} ms every {self.every_s:g} s ({self.share * 100:.3g} % of the time)"


def parse(value: Mapping[str, Any] | None) -> Pause | None:
    """The `positive_control` parameter as a `Pause` (None: no positive control); check it
    with `problems` first."""
    if not value:
        return None
    return Pause(float(value["pause_ms"]), float(value["every_s"]))


def problems(value: Any) -> list[str]:
    """What is wrong with a `positive_control` parameter (empty: nothing).

    >>> problems({"pause_ms": 20, "every_s": 2}), problems(None)
    ([], [])
    >>> problems({"pause_ms": 950, "every_s": 1})
    ['positive_control: the server must run at least 100 ms between pauses (pause_ms 950 of every_s 1)']
    """
    if value is None or value == {}:
        return []
    usage = 'positive_control: {"pause_ms": <ms>, "every_s": <s>}, e.g. {"pause_ms": 20, "every_s": 2}'
    if not isinstance(value, Mapping) or set(value) != {"pause_ms", "every_s"}:
        return [f"{usage}; got {value!r}"]
    try:
        ms, every = float(value["pause_ms"]), float(value["every_s"])
    except (TypeError, ValueError):
        return [f"{usage}; got {value!r}"]
    if not (ms > 0 and every > 0):
        return [f"{usage} with both above 0; got {value!r}"]
    if every * 1000 - ms < MIN_GAP_MS:
        return [f"positive_control: the server must run at least {MIN_GAP_MS:g} ms between pauses "
                f"(pause_ms {ms:g} of every_s {every:g})"]
    return []


@dataclass(frozen=True, kw_only=True)
class PositiveControl:
    """The `positive_control` parameter (mixed in before a `SysbenchParams`): a paused twin of
    the baseline measured as an arm of its own (`studykit.with_control`)."""
    MEANINGS: ClassVar[dict[str, str]] = {  # the study READMEs' parameter tables, `dbstudies list`
        "positive_control": (
            "also measure a twin of the baseline whose server the driver stops for `pause_ms` "
            "every `every_s` seconds of each measured step, e.g. `-p positive_control "
            "'{\"pause_ms\": 20, \"every_s\": 2}'`: a known disturbance, and a table of whether each "
            "metric found it where it should (see \"Tail latency\")"),
    }
    positive_control: dict | None = None

    def shared_problems(self) -> list[str]:
        return super().shared_problems() + problems(self.positive_control)  # type: ignore[misc]


class Pauser:
    """Pauses process `pid` during a sysbench run of nominal `duration_s` seconds (an observer:
    `start`, `stop`): at `pause.starts(duration_s)` after sysbench started, `pause.pause_ms`
    each, so a step that overruns is dosed as the model says. `pauses`: [{"at_s",
    "paused_ms"}] as measured. The process is always let go (a `stop` cuts a pause short only
    when sysbench ended before its nominal time)."""

    def __init__(self, pid: int, pause: Pause, duration_s: float):
        self.pid, self.pause, self.duration_s = pid, pause, duration_s
        self.pauses: list[dict[str, float]] = []
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, t0: float, client_pid: int) -> None:
        self._thread = threading.Thread(target=self._run, args=(t0,), name="pauser", daemon=True)
        self._thread.start()

    @property
    def finished(self) -> bool:
        """Every pause of the step's dose given (or the pauser stopped)."""
        return self._thread is not None and not self._thread.is_alive()

    def stop(self) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self, t0: float) -> None:
        for at in self.pause.starts(self.duration_s):
            if self._done.wait(max(0.0, t0 + at - time.monotonic())):
                return
            began = time.monotonic()
            try:
                os.kill(self.pid, signal.SIGSTOP)
            except ProcessLookupError:
                return
            try:
                self._done.wait(self.pause.pause_ms / 1000)  # a stop() cuts a pause short
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGCONT)
            self.pauses.append({"at_s": began - t0, "paused_ms": (time.monotonic() - began) * 1000})
