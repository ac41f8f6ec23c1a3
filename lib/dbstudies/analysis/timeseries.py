"""Per-second series of one long step: when it reached steady state, its stalls, a summary.

Per-second samples are autocorrelated: they describe the shape of one run (ramps, stalls,
dips) and are never the n of a comparison — `summarise` turns a run into a handful of numbers,
and runs (repeats) are then compared with the library's comparison table (DESIGN §6).

**Steady state** is detected from the series, not assumed: the *final level* is the median of
the last third; the run is steady from the first second at which the centred rolling median
(window: 5 % of the run, at least 5 s) comes within `tolerance` (10 %) of it. Short stalls do
not move a rolling median, and a later stall does not move a first crossing, so stalls are
counted rather than cut away. A run whose middle third's median is still further from the
final level than `tolerance` — and than three standard errors of that difference, estimated
from the seconds' own noise, so that a short noisy run is not called drifting by chance —
never settled: `steady` is False and its time to steady state is unknown (None), not zero;
it is still summarised from its first crossing on.

**Stalls** are seconds of the steady part below `fraction` (50 %) of its median throughput;
consecutive ones make one stall.

    >>> tps = [100.0] * 60
    >>> tps[30:33] = [5, 0, 20]
    >>> s = summarise(tps)
    >>> s["stalls"], s["stall_seconds"], s["longest_stall_s"], s["steady_from_s"]
    (1, 3, 3, 0)
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from ..store.results import Run

STALL_FRACTION = 0.5   # a second below this share of the run's median throughput is a stall
TOLERANCE = 0.10       # steady: the rolling median within this share of the final level
MIN_WINDOW = 5


def window(n: int) -> int:
    """The rolling-median window for a series of n seconds (5 % of it, at least 5 s, odd)."""
    w = max(MIN_WINDOW, int(round(n * 0.05)))
    return w + 1 - w % 2


def first_level(values: Sequence[float], tolerance: float = TOLERANCE) -> int | None:
    """Index of the first second at which the rolling median comes within `tolerance` of the
    final level (the last third's median); None when it never does."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    if n < 3 * MIN_WINDOW:
        return 0 if n else None
    final = float(np.median(x[-(n // 3):]))
    rolling = pd.Series(x).rolling(window(n), center=True, min_periods=1).median().to_numpy()
    close = np.flatnonzero(np.abs(rolling - final) <= tolerance * final)
    return int(close[0]) if len(close) else None


def settled(values: Sequence[float], tolerance: float = TOLERANCE) -> bool:
    """Whether the middle third's median is as close to the last third's as `tolerance`
    allows — or as the seconds' noise allows (three standard errors of the difference of two
    medians, noise from the last third's MAD), whichever is wider."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    if n < 3 * MIN_WINDOW:
        return n > 0
    last, middle = x[-(n // 3):], x[n // 3: 2 * n // 3]
    final = float(np.median(last))
    if final <= 0:
        return False
    sigma = 1.4826 * float(np.median(np.abs(last - final)))
    se_diff = math.sqrt(2) * 1.2533 * sigma / math.sqrt(len(last))
    return abs(float(np.median(middle)) - final) <= max(tolerance * final, 3 * se_diff)


def steady_state(values: Sequence[float], tolerance: float = TOLERANCE) -> int | None:
    """Index of the first steady second, or None when the series never settles.

    >>> steady_state([10, 20, 40, 60, 80] + [100] * 95)   # a 5-second ramp
    5
    >>> steady_state(list(range(1, 101))) is None          # still rising at the end
    True
    """
    return first_level(values, tolerance) if settled(values, tolerance) else None


def stalls(values: Sequence[float], threshold: float) -> list[tuple[int, int]]:
    """(first second, length) of every run of consecutive seconds below `threshold`.

    >>> stalls([9, 1, 1, 9, 0, 9], threshold=5)
    [(1, 2), (4, 1)]
    """
    below = np.asarray(values, dtype=float) < threshold
    edges = np.diff(np.concatenate([[0], below.astype(int), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return [(int(a), int(b - a)) for a, b in zip(starts, ends)]


def summarise(tps: Sequence[float], p99_ms: Sequence[float] | None = None, *,
              written_bytes: Sequence[float] | None = None, fraction: float = STALL_FRACTION,
              tolerance: float = TOLERANCE) -> dict[str, Any]:
    """One run's per-second series as numbers, over the seconds from the first that reached
    the final level (`from_s`: the steady state; for a run that never settled, the same
    crossing): seconds, steady_from_s (None: never), steady, median_tps,
    p01_tps (throughput held in 99 % of seconds), cv_tps, stall_seconds, stalls,
    longest_stall_s, worst_dip (lowest second / median), worst_p99_ms, and kb_per_txn when
    the bytes the server wrote per second are given."""
    x = np.asarray(tps, dtype=float)
    start = steady_state(x, tolerance)
    first = start if start is not None else first_level(x, tolerance)
    part = slice(first or 0, None)
    body = x[part]
    median = float(np.median(body)) if len(body) else float("nan")
    found = stalls(body, fraction * median) if median > 0 else []
    out: dict[str, Any] = {
        "seconds": len(x), "steady_from_s": start, "steady": start is not None,
        "from_s": first or 0,
        "median_tps": median,
        "p01_tps": float(np.percentile(body, 1)) if len(body) else float("nan"),
        "cv_tps": float(np.std(body, ddof=1) / np.mean(body)) if len(body) > 1 and np.mean(body) > 0
        else float("nan"),
        "stall_seconds": sum(n for _, n in found), "stalls": len(found),
        "longest_stall_s": max((n for _, n in found), default=0),
        "worst_dip": float(body.min() / median) if median > 0 else float("nan"),
        "worst_p99_ms": float(np.nanmax(np.asarray(p99_ms, dtype=float)[part]))
        if p99_ms is not None and len(body) else float("nan"),
    }
    if written_bytes is not None:
        txns = float(body.sum())
        written = float(np.asarray(written_bytes, dtype=float)[part].sum())
        out["kb_per_txn"] = written / txns / 1024 if txns > 0 else float("nan")
    return out


def stall_mask(tps: Sequence[float], fraction: float = STALL_FRACTION,
               tolerance: float = TOLERANCE) -> np.ndarray:
    """True for each second that is part of a stall (for shading figures)."""
    x = np.asarray(tps, dtype=float)
    start = first_level(x, tolerance) or 0
    mask = np.zeros(len(x), dtype=bool)
    if len(x) > start:
        median = float(np.median(x[start:]))
        for a, n in stalls(x[start:], fraction * median):
            mask[start + a: start + a + n] = True
    return mask


# ---------------------------------------------------------------- one run's steps

# per-second probe series kept beside sysbench's intervals (probes.rates names → ours)
PROBE_SERIES = {
    "checkpoint_age_pct": "checkpoint_age_pct", "redo_bytes_per_s": "redo_bytes_per_s",
    "Innodb_buffer_pool_pages_dirty": "dirty_pages",
    "Innodb_buffer_pool_pages_flushed": "pages_flushed_per_s",
    "server_write_bytes": "server_write_bytes_per_s", "server_read_bytes": "server_read_bytes_per_s",
    "disk_write_bytes": "disk_write_bytes_per_s", "disk_read_bytes": "disk_read_bytes_per_s",
    "cpu_server_pct": "cpu_server_pct", "cpu_client_pct": "cpu_client_pct",
    "bp_fill_pct": "bp_fill_pct", "bp_hit_pct": "bp_hit_pct",
    "rows_changed_per_s": "rows_changed_per_s",
    "Innodb_num_pages_page_compressed": "pages_compressed_per_s",
}
KEYS = ["step", "repeat", "arm", "workload", "threads"]


def per_second(run: "Run", steps: pd.DataFrame) -> pd.DataFrame:
    """One row per measured step × second: sysbench's interval (tps, qps, latency_p_ms)
    beside the probes' series of the same second (checkpoint age %, redo bytes/s, dirty
    pages, pages flushed/s, bytes the server and its device wrote, CPU). `steps`: the
    measured steps (`results.measured`), whose keys label the rows."""
    from ..observe import probes
    from ..store.tables import INTERVALS, STATUS
    intervals = run.table(INTERVALS)
    status = run.table(STATUS)
    status = status[status["step"].isin(steps["step"])]
    frames = []
    for step, samples in status.groupby("step"):
        r = probes.rates(samples)
        r = r[[c for c in PROBE_SERIES if c in r]].rename(columns=PROBE_SERIES)
        frames.append(r.rename_axis("second").reset_index().assign(step=step))
    rates = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["step", "second"])
    out = (steps[KEYS].merge(intervals[["step", "second", "tps", "qps", "latency_p_ms"]], on="step")
           .merge(rates, on=["step", "second"], how="left"))
    for col in PROBE_SERIES.values():
        if col not in out:
            out[col] = np.nan
    return out.sort_values(["step", "second"], ignore_index=True)


def run_summaries(series: pd.DataFrame, steps: pd.DataFrame, *,
                  fraction: float = STALL_FRACTION) -> pd.DataFrame:
    """One row per measured step: its keys, `summarise` of its per-second series (bytes
    the server wrote give kb_per_txn), the median checkpoint age (%) after steady state,
    and the step's run-level p99 and max latency from sysbench's histogram (`steps`)."""
    rows = []
    for step, g in series.groupby("step", sort=True):
        g = g.sort_values("second")
        written = g["server_write_bytes_per_s"] if g["server_write_bytes_per_s"].notna().any() else None
        s = summarise(g["tps"], g["latency_p_ms"], written_bytes=written, fraction=fraction)
        age = g["checkpoint_age_pct"].iloc[s["from_s"]:]
        rows.append({"step": step, **s, "kb_per_txn": s.get("kb_per_txn", np.nan),
                     "checkpoint_age_pct": float(age.median()) if age.notna().any() else np.nan})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    # a paired design's pair stays with its step: the comparisons then pair by round
    extra = steps[[*KEYS, *(["pair"] if "pair" in steps else []), "latency_p99_ms", "latency_max_ms"]]
    return extra.merge(out, on="step").sort_values("step", ignore_index=True)


def stall_flags(series: pd.DataFrame, fraction: float = STALL_FRACTION) -> pd.Series:
    """True for each row of `series` (per step × second) that is part of a stall of its step."""
    out = pd.Series(False, index=series.index)
    for _, g in series.groupby("step"):
        g = g.sort_values("second")
        out.loc[g.index] = stall_mask(g["tps"].to_numpy(), fraction)
    return out
