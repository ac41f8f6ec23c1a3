"""A study notebook run by hand in JupyterLab: what the researcher sees while it works.

- **Progress where they look.** After Run All, JupyterLab shows the notebook's last cell, not
  the measurement cell 25 cells up. `Progress` keeps the step, steps done of planned, elapsed
  and remaining time in the measurement cell's output (HTML, not stderr's error pink) and in a
  small panel fixed to the bottom centre of the window (`banner`: JavaScript in the output,
  which JupyterLab runs for outputs of its own session; centred, as JupyterLab's own notices
  come up at the right), removed when the measurement ends.
- **Errors in one line.** A problem we diagnosed (`DbStudiesError`: a bad parameter, a server
  that would not start …) or an interrupt shows as one message — an error output, so Run All
  stops at that cell — and the panel says where it stopped; `%tb` prints the traceback.

Only in a live IPython kernel: under the CLI (`dbstudies run`), which executes the notebook
with papermill, the terminal keeps its progress bar and nothing here shows.
"""
from __future__ import annotations

import html
import itertools
import json
import sys
import time
from typing import Any

from ..core.errors import DbStudiesError

BANNER = "dbstudies-banner"  # the id of the panel fixed to the bottom of the window
STYLE = {  # panel colours: working (blue), stopped (amber)
    "progress": "background:#eef5ff;border:1px solid #4a7fcf;color:#102a50",
    "stopped": "background:#fff4e5;border:1px solid #d9822b;color:#5c3200",
}
EVERY_S = 0.5  # the display is redrawn at most this often (the last state always)
STALE_S = 60   # a panel's script older than this (a notebook reopened) does not show it
_watched: dict[str, Any] = {}  # the run being measured, for the interrupt's message


def shell() -> Any:
    """The IPython kernel's shell this code runs in, or None (a script, the CLI's process)."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    sh = get() if get else None
    return sh if sh is not None and getattr(sh, "kernel", None) is not None else None


def duration(seconds: float) -> str:
    """Elapsed or remaining time as people say it.

    >>> duration(42), duration(80), duration(3 * 3600 + 125)
    ('42 s', '1 min 20 s', '3 h 2 min')
    """
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min" + (f" {s % 60} s" if s % 60 else "")
    return f"{s // 3600} h {s % 3600 // 60} min"


PRIOR_STEPS = 5  # the plan's pace counts as this many steps in the time left (it steadies the first ones)
LONG_S = 1800    # a run planned this long shows its last stored step's throughput, second by second


def sparkline(values: list[float], what: str, width: int = 360, height: int = 48) -> str:
    """A step's per-second values as a small inline SVG line with its lowest and highest
    value written beside it ('' for fewer than two values).

    >>> svg = sparkline([100, 120, 90], "QPS")
    >>> svg.startswith("<svg") and "90–120 QPS" in svg and svg.count(",") == 3
    True
    """
    vals = [float(v) for v in values if v == v]
    if len(vals) < 2:
        return ""
    lo, hi = min(vals), max(vals)
    span = (hi - lo) or 1.0
    points = " ".join(f"{i * (width - 2) / (len(vals) - 1) + 1:.1f},{height - 2 - (v - lo) / span * (height - 4):.1f}"
                      for i, v in enumerate(vals))
    return (f'<svg width="{width + 130}" height="{height}" role="img" aria-label="{html.escape(what)} per second">'
            f'<polyline fill="none" stroke="#4a7fcf" stroke-width="1.5" points="{points}"/>'
            f'<text x="{width + 8}" y="{height / 2 + 4:.0f}" font-size="12">{lo:,.0f}–{hi:,.0f} {html.escape(what)}</text></svg>')


def time_left(done: int, total: int, elapsed: float, per_step: float | None) -> float | None:
    """Seconds left: the pace of the steps done, with the plan's (`per_step`) as a prior
    worth `PRIOR_STEPS` steps — before the first step, the plan's alone (None: no plan, no step).

    >>> time_left(0, 10, 5, 6.0), time_left(5, 10, 50, 6.0), time_left(5, 10, 50, None), time_left(10, 10, 80, 6.0)
    (55.0, 40.0, 50.0, 0.0)
    """
    if total and done >= total:
        return 0.0
    if not done:
        return max(per_step * total - elapsed, 0.0) if per_step else None
    pace = (PRIOR_STEPS * per_step + elapsed) / (PRIOR_STEPS + done) if per_step else elapsed / done
    return pace * (total - done)


class Tally:
    """Steps done of a total that may grow (the target loop adds rounds as it goes): the
    fraction shown never falls. `shown(done, total)` is the total to show, or None once a grown
    total would have lowered the fraction — from then on the count and what the loop says, no
    fraction (every view of a run's progress goes through one).

    >>> t = Tally()
    >>> [t.shown(d, n) for d, n in ((0, 10), (5, 10), (8, 12), (10, 10), (10, 14), (12, 12))]
    [10, 10, 12, 10, None, None]
    """

    def __init__(self) -> None:
        self.fraction, self.open = 0.0, False

    def shown(self, done: int, total: int) -> int | None:
        if not self.open and total and done / total < self.fraction:
            self.open = True
        if self.open:
            return None
        if total:
            self.fraction = done / total  # not below the last: checked above
        return total


def progress_text(done: int, total: int | None, now: str, elapsed: float, left: float | None) -> str:
    """One line: the current step, steps done of planned (None: the total grows as the loop
    goes), elapsed and remaining time.

    >>> progress_text(12, 48, "r2 pool-of-threads oltp_read_only 64", 80, 240)
    'Measuring step 13 of 48 — r2 pool-of-threads oltp_read_only 64 · 1 min 20 s elapsed, about 4 min left'
    >>> progress_text(0, 48, "starting the servers", 5, 395)
    'Measuring step 1 of 48 — starting the servers · 5 s elapsed, about 6 min 35 s left (planned)'
    >>> progress_text(48, 48, "done", 300, 0)
    'Measured 48 of 48 steps in 5 min'
    >>> progress_text(60, None, "r14 pool-of-threads oltp_read_only 64 · to the target: 5 cells short", 900, None)
    'Measuring step 61 — r14 pool-of-threads oltp_read_only 64 · to the target: 5 cells short · 15 min elapsed'
    """
    if total is None:
        return f"Measuring step {done + 1}" + (f" — {now}" if now else "") + f" · {duration(elapsed)} elapsed"
    if total and done >= total:
        return f"Measured {done} of {total} steps in {duration(elapsed)}"
    if left is None:
        rest = "remaining time known after the first step"
    else:
        rest = f"about {duration(left)} left" + (" (planned)" if not done else "")
    return (f"Measuring step {done + 1} of {total}" + (f" — {now}" if now else "")
            + f" · {duration(elapsed)} elapsed, {rest}")


class Progress:
    """The measurement's progress in a live notebook: a line and a bar in the cell's output,
    the same line in the panel at the bottom of the window, whose elapsed and remaining time
    tick every second in the browser. `update(done, total, now)` as the loop goes (a new step
    or words show at once; the same again at most every `EVERY_S`); `close()` at the end
    (the panel goes; the cell keeps the last line)."""

    def __init__(self, run: Any, total: int, planned: float | None = None):
        from IPython.display import display
        self.run, self.started = run, time.monotonic()
        self.per_step = planned / total if planned and total else None  # the plan's pace: the prior
        self.long = bool(planned and planned >= LONG_S)
        self.figure = ""  # a long run's last stored step, second by second
        self.state: tuple[int, int | None, str] = (0, total, "starting")
        self.tally = Tally()
        self.stopped = False
        self.shown = 0.0
        times = self._times()
        self.cell = display(self._html(times), display_id=True)
        self.panel = display(self._js(times), display_id=True)
        _watched["run"] = run

    def _times(self) -> tuple[float, float | None]:
        done, total, _ = self.state
        elapsed = time.monotonic() - self.started
        return elapsed, None if total is None else time_left(done, total, elapsed, self.per_step)

    def _line(self, times: tuple[float, float | None] | None = None) -> str:
        """The line at `times` (elapsed, left: one reading for the cell and the panel, whose
        clock rewrites the times the line says; None: now)."""
        done, total, now = self.state
        elapsed, left = times or self._times()
        if self.stopped:
            of = f" of {total}" if total is not None else ""
            return f"Stopped after {done}{of} steps, {duration(elapsed)} in (the steps measured are kept)"
        return progress_text(done, total, now, elapsed, left)

    def _html(self, times: tuple[float, float | None]) -> Any:
        from IPython.display import HTML
        done, total, _ = self.state
        bar = ('<progress style="width:24em"></progress> ' if total is None else  # no fraction: it would fall
               f'<progress value="{done}" max="{max(total, 1)}" style="width:24em"></progress> ')
        return HTML(f'<div class="dbstudies-progress" style="font:13px/1.5 system-ui,sans-serif">{bar}'
                    f"{html.escape(self._line(times))}<br><small>run {html.escape(self.run.path.name)}"
                    f"</small>{self.figure}</div>")

    def _js(self, times: tuple[float, float | None]) -> Any:
        return banner(self._line(times), "progress", tick=times)

    def update(self, done: int, total: int, now: str = "") -> None:
        state = (done, self.tally.shown(done, total), now)
        changed = state != self.state
        if self.long and done != self.state[0]:
            self.figure = self._last_step()
        self.state = state
        if changed or time.monotonic() - self.shown >= EVERY_S:
            self._show()

    def _last_step(self) -> str:
        """The throughput of the step stored last, second by second, with its name."""
        rows = self.run.newest_part("intervals")
        if rows.empty or "qps" not in rows:
            return ""
        step = int(rows["step"].iloc[-1])
        line = sparkline(rows.loc[rows["step"] == step].sort_values("second")["qps"].tolist(), "QPS")
        return f"<br><small>the last stored step ({step}), QPS second by second:</small><br>{line}" if line else ""

    def _show(self) -> None:
        self.shown, times = time.monotonic(), self._times()
        self.cell.update(self._html(times))
        self.panel.update(self._js(times))

    def close(self, stopped: bool = False) -> None:
        """The end: the cell keeps the last line (or where it stopped), the panel goes."""
        self.stopped = stopped
        self.cell.update(self._html(self._times()))
        self.panel.update(banner(None))


# the panel's clock: elapsed and remaining time, as `duration` says them, every second
TICK = """
function dbsDuration(s) { s = Math.round(s); if (s < 60) return s + " s";
  if (s < 3600) return Math.floor(s / 60) + " min" + (s % 60 ? " " + (s % 60) + " s" : "");
  return Math.floor(s / 3600) + " h " + Math.floor(s % 3600 / 60) + " min"; }
if (b._dbsTick) clearInterval(b._dbsTick);
var t0 = Date.now(), e0 = ELAPSED, l0 = LEFT;
b._dbsTick = setInterval(function () {
  if (!document.body.contains(b)) { clearInterval(b._dbsTick); return; }
  var d = (Date.now() - t0) / 1000, e = b.querySelector(".dbs-elapsed"), l = b.querySelector(".dbs-left");
  if (e) e.textContent = dbsDuration(e0 + d);
  if (l && l0 !== null) l.textContent = dbsDuration(Math.max(l0 - d, 0));
}, 1000);
"""


def banner(text: str | None, kind: str = "progress", tick: tuple[float, float | None] | None = None) -> Any:
    """JavaScript that shows `text` in the panel fixed to the bottom of the window
    (`kind`: progress, or stopped: with a button that scrolls to the last error output and
    one that closes the panel), or removes it (None). With `tick` (elapsed, left seconds as
    `text` says them) the times in `text` go on counting in the browser."""
    from IPython.display import Javascript
    newest = (f"var s = {_stamp()}; if ((window._dbsPanel || 0) < s) {{ window._dbsPanel = s; "  # an older script
              f'var b = document.getElementById("{BANNER}");')  # run again (a cell drawn anew) changes nothing
    if text is None:
        return Javascript(newest + " if (b) { clearInterval(b._dbsTick); b.remove(); } }")
    show = ("var e = document.querySelectorAll('.jp-OutputArea-output[data-mime-type$=stderr]');"
            "if (e.length) e[e.length - 1].scrollIntoView({block: 'center'});")  # errors show as stderr
    close = (f'<button onclick="{show}" style="margin-left:1em">Show the cell</button>'
             '<button onclick="this.parentNode.remove()" style="margin-left:.5em" title="close">✕</button>'
             if kind == "stopped" else "")
    shown = html.escape(text)
    if tick is not None:  # the times as spans the clock rewrites
        elapsed, left = tick
        shown = shown.replace(f"{duration(elapsed)} elapsed", f'<span class="dbs-elapsed">{duration(elapsed)}</span> elapsed', 1)
        if left is not None:
            shown = shown.replace(f"about {duration(left)} left", f'about <span class="dbs-left">{duration(left)}</span> left', 1)
    body = json.dumps(f"<span>{shown}</span>{close}")
    clock = TICK.replace("ELAPSED", f"{tick[0]:.1f}").replace("LEFT", "null" if tick[1] is None else f"{tick[1]:.1f}") \
        if tick is not None else "if (b._dbsTick) clearInterval(b._dbsTick);"
    return Javascript(  # a notebook reopened later runs its outputs again: an old panel stays away
        newest + f'if (Date.now() - {time.time() * 1000:.0f} > {STALE_S * 1000}) {{ if (b) b.remove(); }} else {{'
        f'if (!b) {{ b = document.createElement("div"); b.id = "{BANNER}"; document.body.appendChild(b); }}'
        f'b.setAttribute("role", "status"); b.setAttribute("style", "position:fixed;left:50%;transform:translateX(-50%);bottom:36px;'
        f'z-index:10000;max-width:46em;padding:8px 12px;border-radius:6px;font:13px/1.45 system-ui,sans-serif;'
        f'box-shadow:0 2px 8px rgba(0,0,0,.25);{STYLE[kind]}");'
        f"b.innerHTML = {body};{clock} }} }}")


_stamps = itertools.count()


def _stamp() -> int:
    """A panel script's place in time, growing with every script this kernel (or a later
    one) shows: the browser applies a script only if no later one ran (`banner`)."""
    return int(time.time() * 1000) * 1000 + next(_stamps) % 1000


def stopped_text(etype: type, value: BaseException) -> str:
    """The one-line message of a problem that stopped a cell.

    >>> stopped_text(ValueError, ValueError("x"))
    'Stopped: ValueError: x'
    """
    if issubclass(etype, KeyboardInterrupt):
        run = _watched.get("run")  # the run measured last in this kernel, if it was interrupted
        where = (f" Run {run.path.name} is marked interrupted, its servers are stopped and the steps "
                 f"it measured are kept: set run_dir = \"{run.path}\" to analyse them."
                 ) if run is not None and run.status == "interrupted" else ""
        return "Stopped: interrupted." + where
    return f"Stopped: {etype.__name__}: {value}"


def _one_line(sh: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None) -> list[str]:
    """IPython's handler for our errors: remember the traceback (for `%tb`), say where the
    run stopped in the panel, and show a one-line traceback as the cell's error."""
    sys.last_type, sys.last_value, sys.last_traceback = etype, value, tb
    text = stopped_text(etype, value)
    from IPython.display import display
    display(banner(text, "stopped"))
    stb = [f"\x1b[0;31m{text}\x1b[0m  (%tb shows the traceback)"]
    sh._showtraceback(etype, value, stb)  # an error output: the kernel stops Run All here
    return stb


def one_line_errors() -> None:
    """In a live kernel, show our errors and interrupts in one line (once per kernel)."""
    sh = shell()
    if sh is None or getattr(sh, "_dbstudies_one_line", False):
        return
    sh.set_custom_exc((DbStudiesError, KeyboardInterrupt), _one_line)
    sh._dbstudies_one_line = True


__all__ = ["DbStudiesError", "Progress", "banner", "duration", "one_line_errors", "progress_text",
           "shell", "stopped_text", "time_left"]
