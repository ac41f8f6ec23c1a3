"""One base error for everything dbstudies raises on purpose.

A caller (the CLI, a notebook) catches `DbStudiesError` to tell a problem we diagnosed —
bad parameters, a server that would not start, a failed workload, a run directory in the
wrong state — from a bug. Each subclass also derives from the builtin it refines.
"""
from __future__ import annotations


class DbStudiesError(Exception):
    """Base of all errors dbstudies raises on purpose."""


class ParamError(DbStudiesError, ValueError):
    """One or more parameters are invalid; the message lists each problem."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("invalid parameters:\n" + "\n".join(f"  - {p}" for p in problems))


class ReplicationError(DbStudiesError, ValueError):
    """A run cannot be replicated here (a flavour this machine lacks, a workload script the
    run did not keep): one line, before anything is written."""


class ConfigError(DbStudiesError, ValueError):
    """A flavour file (env/servers/*.toml), a my.cnf fragment or another configuration
    value is unknown or malformed."""


class ProcError(DbStudiesError, RuntimeError):
    """A command failed (non-zero exit, timeout or signal)."""


class ServerError(DbStudiesError, RuntimeError):
    """A private server failed to start, stop or answer."""


class WorkloadError(DbStudiesError, RuntimeError):
    """A workload (sysbench, a query) failed."""


class StoreError(DbStudiesError, RuntimeError):
    """A run directory is missing, not a run, or in the wrong state for what was asked."""


class SchemaError(StoreError, ValueError):
    """Rows that do not have exactly the columns their table declares."""


class NothingMeasured(StoreError):
    """A run ended before any step finished: there is nothing to analyse."""


DISK_FULL = ("No space left on device", "Errno 28]", "Errcode: 28", "error 28", "Disk full")


def disk_full(text: str) -> bool:
    """Whether an error's text says a disk filled up (Python's ENOSPC, the server's errcode 28).

    >>> disk_full("OSError: [Errno 28] No space left on device"), disk_full("ServerDied: code 1")
    (True, False)
    """
    return any(mark in text for mark in DISK_FULL)


def did_you_mean(given: object, known: "list[str] | tuple[str, ...]") -> str:
    """' — did you mean …?' for a misspelt name among `known` ('' when nothing is close).

    >>> did_you_mean("oltp_read_onyl", ["oltp_point_select", "oltp_read_only"]), did_you_mean("zzz", ["a"])
    (" — did you mean 'oltp_read_only'?", '')
    """
    import difflib
    close = difflib.get_close_matches(str(given), [str(k) for k in known], n=1, cutoff=0.75)
    return f" — did you mean {close[0]!r}?" if close else ""
