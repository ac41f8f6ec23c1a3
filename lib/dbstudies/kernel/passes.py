"""A pass through a study notebook in a live kernel (JupyterLab's Run All): it stops at the
first cell that fails, it never shows an earlier pass's numbers, and the kernel remembers
the last run a pass completed (for a re-analysis that measures nothing).

- **Run All stops at a failing cell, every time.** JupyterLab sends every cell's execute
  request at once, each stamped with the time the browser made it. ipykernel 7 aborts, after
  a failing cell, only the requests queued in front of a marker it posts (its
  `stop_on_error_timeout` goes unused): a request of the same Run All that reaches the kernel
  later runs, and the abort that follows an interrupted cell can swallow the head of the
  *next* Run All instead — so cells after a rejected parameters cell ran and showed the
  previous run's tables. `stop_at_errors` replaces that rule with one on the requests
  themselves (`aborts`): a failing request of a JupyterLab Run All aborts the requests its
  browser made with it — stamped, on the browser's own clock, no later than `BURST_S` after it
  (Run All makes them all in one loop of its script, which no reply can interrupt; on a loaded
  host that loop outlasted a fast failing cell, so "made before its error could be read" is
  not a bound) — whenever they arrive, and nothing else: not a
  Run All pressed while an interrupted cell was still stopping. A client that sends one cell at
  a time (nbclient, papermill) reads each reply before its next request: nothing of it is
  aborted (JupyterLab marks its requests: `deletedCells` in their metadata).
- **A pass forgets the one before.** The parameters check starts a pass (`checks.resolve_cell`
  calls `forget`): every result an earlier pass left in the notebook's namespace — an object
  of dbstudies', pandas' or numpy's, or a list, tuple or dict of them — becomes a `Forgotten`
  that stops any cell using it with one line, so no cell can mix the new parameters with the
  old run's numbers.
- **The last complete run.** `remember(run)` when a pass completes a run it measured;
  `last_run()` is what the next pass may re-analyse.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import types
from typing import Any, Iterable, MutableMapping

from ..core.errors import DbStudiesError

BURST_S = 0.5  # one Run All's requests are made in one loop of the browser's script: tens of milliseconds on a loaded host
_state: dict[str, Any] = {"failed": None, "current": None, "last_run": None}


def sent_at(msg: dict[str, Any]) -> dt.datetime | None:
    """When the client made a message (its header's date; None if it gives none).

    >>> sent_at({"header": {"date": "2026-11-27T23:41:07.123Z"}}).microsecond
    123000
    """
    date = (msg.get("header") or {}).get("date")
    if isinstance(date, str):
        try:
            date = dt.datetime.fromisoformat(date.replace("Z", "+00:00"))
        except ValueError:
            return None
    if not isinstance(date, dt.datetime):
        return None
    return date if date.tzinfo else date.replace(tzinfo=dt.timezone.utc)


def aborts(failed: dt.datetime | None, sent: dt.datetime | None) -> bool:
    """Whether a request made at `sent` belongs to the Run All whose request made at
    `failed` failed: made with it or just after (within `BURST_S`, on the same clock).

    >>> t = dt.datetime(2026, 11, 27, tzinfo=dt.timezone.utc)
    >>> [aborts(t, t + dt.timedelta(seconds=s)) for s in (0.003, 0.4, 2.0, -60)]
    [True, True, False, False]
    >>> aborts(None, t), aborts(t, None)
    (False, False)
    """
    if failed is None or sent is None:
        return False
    return dt.timedelta(0) <= sent - failed <= dt.timedelta(seconds=BURST_S)


def batched(msg: dict[str, Any]) -> bool:
    """Whether a request comes from a client that sends a Run All at once (JupyterLab's and
    Notebook 7's carry `deletedCells` in their metadata), not one cell after another's reply."""
    return "deletedCells" in (msg.get("metadata") or {})


def stop_at_errors(kernel: Any) -> None:
    """Make `kernel` (ipykernel's, once) abort the rest of a Run All after a failing cell
    (`aborts`), in place of its own queue abort."""
    if getattr(kernel, "_dbstudies_stops", False):
        return
    execute = kernel.shell_handlers["execute_request"]

    async def execute_request(stream: Any, ident: Any, parent: dict[str, Any]) -> None:
        sent = sent_at(parent) if batched(parent) else None
        if not parent["content"].get("silent") and aborts(_state["failed"], sent):
            kernel._send_abort_reply(stream, parent, ident)  # JupyterLab shows it unrun: [ ]
            return
        _state["current"] = sent
        await execute(stream, ident, parent)

    def failed(*_: Any) -> None:  # ipykernel calls this after a request with stop_on_error fails
        _state["failed"] = _state["current"]

    kernel.shell_handlers["execute_request"] = execute_request
    kernel._abort_queues = failed
    kernel._dbstudies_stops = True
    with contextlib.suppress(Exception):  # made while a request runs (the cell importing us): that one counts
        parent = kernel.get_parent("shell")
        if parent and (parent.get("header") or {}).get("msg_type") == "execute_request" and batched(parent):
            _state["current"] = sent_at(parent)


def in_kernel() -> None:
    """`import dbstudies` in an IPython kernel: Run All stops at a failing cell from the next
    cell on (`stop_at_errors`)."""
    from .live import shell
    sh = shell()
    if sh is not None:
        stop_at_errors(sh.kernel)


class Forgotten:
    """What an earlier pass left under `name`: any use stops the cell with one line."""

    def __init__(self, name: str):
        object.__setattr__(self, "_name", name)

    def _stop(self, *_: Any, **__: Any) -> Any:
        raise DbStudiesError(f"{self._name} belongs to an earlier pass of this notebook: the parameters "
                             "cell has been checked since — run the notebook from there (Run All) to compute it")

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):  # IPython's and pickle's probes: not a use
            raise AttributeError(attr)
        return self._stop()

    __getitem__ = __iter__ = __len__ = __call__ = __bool__ = __setattr__ = __setitem__ = _stop
    __add__ = __sub__ = __mul__ = __truediv__ = __lt__ = __gt__ = __le__ = __ge__ = _stop

    def __repr__(self) -> str:
        return f"<{self._name}: from an earlier pass, forgotten>"


def _result(value: Any) -> bool:
    """Whether `value` is a pass's result: an object of dbstudies', pandas' or numpy's (not a
    module, class or function), or a list, tuple or dict holding one."""
    if isinstance(value, (list, tuple)):
        return any(_result(v) for v in value[:50])
    if isinstance(value, dict):
        return any(_result(v) for v in list(value.values())[:50])
    if callable(value) or isinstance(value, types.ModuleType):  # code, not a result (numpy's ufuncs too)
        return False
    return type(value).__module__.split(".")[0] in ("dbstudies", "pandas", "numpy")


def forget(namespace: MutableMapping[str, Any], keep: Iterable[str] = ()) -> list[str]:
    """A pass starts: every earlier pass's result in `namespace` (`_result`) becomes a
    `Forgotten`; the names in `keep` (the parameters, the study), private names and IPython's
    own stay. The names forgotten, sorted.

    >>> import pandas as pd
    >>> ns = {"summary": pd.DataFrame(), "arms": [pd.Series(dtype=float)], "profile": "quick", "n": 3, "pd": pd}
    >>> forget(ns, keep=["profile"]), ns["summary"]
    (['arms', 'summary'], <summary: from an earlier pass, forgotten>)
    """
    kept = set(keep) | {"In", "Out"}
    gone = sorted(k for k, v in namespace.items() if not k.startswith("_") and k not in kept and _result(v))
    for k in gone:
        namespace[k] = Forgotten(k)
    return gone


def remember(run: Any) -> None:
    """A pass of this kernel completed `run`, which it measured."""
    _state["last_run"] = run


def last_run() -> Any:
    """The run this kernel's last complete pass measured (None: none yet)."""
    return _state["last_run"]


__all__ = ["BURST_S", "Forgotten", "aborts", "forget", "last_run", "remember", "sent_at", "stop_at_errors"]
