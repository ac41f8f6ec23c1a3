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
import json
import sys
import time
from typing import Any

from .errors import DbStudiesError

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


def progress_text(done: int, total: int, now: str, elapsed: float, planned: float | None) -> str:
    """One line: the current step, steps done of planned, elapsed and remaining time (from
    the pace so far; before the first step, from the plan's estimate).

    >>> progress_text(12, 48, "r2 pool-of-threads oltp_read_only 64", 80, 400)
    'Measuring step 13 of 48 — r2 pool-of-threads oltp_read_only 64 · 1 min 20 s elapsed, about 4 min left'
    >>> progress_text(0, 48, "starting the servers", 5, 400)
    'Measuring step 1 of 48 — starting the servers · 5 s elapsed, about 6 min 35 s left (planned)'
    >>> progress_text(48, 48, "done", 300, 400)
    'Measured 48 of 48 steps in 5 min'
    """
    if total and done >= total:
        return f"Measured {done} of {total} steps in {duration(elapsed)}"
    if done:
        left = f"about {duration(elapsed / done * (total - done))} left"
    elif planned:
        left = f"about {duration(max(planned - elapsed, 0))} left (planned)"
    else:
        left = "remaining time known after the first step"
    return (f"Measuring step {done + 1} of {total}" + (f" — {now}" if now else "")
            + f" · {duration(elapsed)} elapsed, {left}")


class Progress:
    """The measurement's progress in a live notebook: a line and a bar in the cell's output,
    the same line in the panel at the bottom of the window. `update(done, total, now)` as the
    loop goes; `close()` at the end (the panel goes; the cell keeps the last line)."""

    def __init__(self, run: Any, total: int, planned: float | None = None):
        from IPython.display import display
        self.run, self.planned, self.started = run, planned, time.monotonic()
        self.state: tuple[int, int, str] = (0, total, "starting")
        self.stopped = False
        self.shown = 0.0
        self.cell = display(self._html(), display_id=True)
        self.panel = display(self._js(), display_id=True)
        _watched["run"] = run

    def _line(self) -> str:
        done, total, now = self.state
        elapsed = time.monotonic() - self.started
        if self.stopped:
            return f"Stopped after {done} of {total} steps, {duration(elapsed)} in (the steps measured are kept)"
        return progress_text(done, total, now, elapsed, self.planned)

    def _html(self) -> Any:
        from IPython.display import HTML
        done, total, _ = self.state
        return HTML(f'<div class="dbstudies-progress" style="font:13px/1.5 system-ui,sans-serif">'
                    f'<progress value="{done}" max="{max(total, 1)}" style="width:24em"></progress> '
                    f"{html.escape(self._line())}<br><small>run {html.escape(self.run.path.name)}"
                    "</small></div>")

    def _js(self) -> Any:
        return banner(self._line(), "progress")

    def update(self, done: int, total: int, now: str = "") -> None:
        self.state = (done, total, now)
        if time.monotonic() - self.shown >= EVERY_S:
            self._show()

    def _show(self) -> None:
        self.shown = time.monotonic()
        self.cell.update(self._html())
        self.panel.update(self._js())

    def close(self, stopped: bool = False) -> None:
        """The end: the cell keeps the last line (or where it stopped), the panel goes."""
        self.stopped = stopped
        self.cell.update(self._html())
        self.panel.update(banner(None))


def banner(text: str | None, kind: str = "progress") -> Any:
    """JavaScript that shows `text` in the panel fixed to the bottom of the window
    (`kind`: progress, or stopped: with a button that scrolls to the last error output and
    one that closes the panel), or removes it (None)."""
    from IPython.display import Javascript
    if text is None:
        return Javascript(f'var b = document.getElementById("{BANNER}"); if (b) b.remove();')
    show = ("var e = document.querySelectorAll('.jp-OutputArea-output[data-mime-type$=stderr]');"
            "if (e.length) e[e.length - 1].scrollIntoView({block: 'center'});")  # errors show as stderr
    close = (f'<button onclick="{show}" style="margin-left:1em">Show the cell</button>'
             '<button onclick="this.parentNode.remove()" style="margin-left:.5em" title="close">✕</button>'
             if kind == "stopped" else "")
    body = json.dumps(f"<span>{html.escape(text)}</span>{close}")
    return Javascript(  # a notebook reopened later runs its outputs again: an old panel stays away
        f'var b = document.getElementById("{BANNER}");'
        f'if (Date.now() - {time.time() * 1000:.0f} > {STALE_S * 1000}) {{ if (b) b.remove(); }} else {{'
        f'if (!b) {{ b = document.createElement("div"); b.id = "{BANNER}"; document.body.appendChild(b); }}'
        f'b.setAttribute("role", "status"); b.setAttribute("style", "position:fixed;left:50%;transform:translateX(-50%);bottom:36px;'
        f'z-index:10000;max-width:46em;padding:8px 12px;border-radius:6px;font:13px/1.45 system-ui,sans-serif;'
        f'box-shadow:0 2px 8px rgba(0,0,0,.25);{STYLE[kind]}");'
        f"b.innerHTML = {body}; }}")


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
           "shell", "stopped_text"]
