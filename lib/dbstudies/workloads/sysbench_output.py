"""What sysbench's output says, read by pure functions of its text (tested on recorded output):
`sysbench_report.lua`'s JSON lines — one per report interval, one for the whole run —, the
full latency histogram (run-level percentiles come from it, never from per-interval ones),
our workloads' per-transaction-type counts and histograms, the open-loop lines
(`dbs_openloop.lua`), a FATAL line, and `--version`.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

RUN_PERCENTILES = (50, 95, 99)

_HIST_LINE = re.compile(r"^\s*([0-9.]+)\s+\|[* ]*\s+(\d+)\s*$")
INTERVAL_FIELDS = ("time", "interval", "threads", "events", "reads", "writes", "other",
                   "errors", "reconnects", "latency_pct_ms", "tps", "qps")


def parse_report(text: str) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The interval records and the total record printed by sysbench_report.lua."""
    intervals, total = [], None
    for line in text.splitlines():
        if not line.startswith('{"kind":'):
            continue
        rec = json.loads(line)
        if rec["kind"] == "interval":
            intervals.append(rec)
        elif rec["kind"] == "total":
            total = rec
    return intervals, total


def parse_types(text: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Our workloads' per-type lines, summed over threads: totals per transaction type
    (count, rollbacks, retries, latency avg/max and percentiles from the merged histogram)
    and counts per type per second of the run (the end of sysbench's report interval). Both
    empty for sysbench's bundled workloads."""
    totals: dict[str, dict[str, Any]] = {}
    per_second: dict[tuple[int, str], int] = {}
    for line in text.splitlines():
        if line.startswith('{"kind":"types"'):
            for name, t in json.loads(line)["types"].items():
                s = totals.setdefault(name, {"count": 0, "rollbacks": 0, "retries": 0, "sum_ms": 0.0,
                                             "max_ms": 0.0, "hist": {}})
                for k in ("count", "rollbacks", "retries", "sum_ms"):
                    s[k] += t[k]
                s["max_ms"] = max(s["max_ms"], t["max_ms"])
                for upper, n in t["hist"]:
                    s["hist"][upper] = s["hist"].get(upper, 0) + n
        elif line.startswith('{"kind":"types_interval"'):
            rec = json.loads(line)
            for name, n in rec["counts"].items():
                key = (int(rec["second"]), name)
                per_second[key] = per_second.get(key, 0) + int(n)
    rows = []
    for name, s in totals.items():
        hist = pd.DataFrame(sorted(s["hist"].items()), columns=["value_ms", "count"])
        rows.append({"type": name, "count": s["count"], "rollbacks": s["rollbacks"],
                     "retries": s["retries"],
                     "latency_avg_ms": s["sum_ms"] / s["count"] if s["count"] else float("nan"),
                     "latency_max_ms": s["max_ms"],
                     **{f"latency_p{q}_ms": histogram_percentile(hist, q) for q in RUN_PERCENTILES}})
    types = pd.DataFrame(rows, columns=["type", "count", "rollbacks", "retries", "latency_avg_ms",
                                        "latency_max_ms", *(f"latency_p{q}_ms" for q in RUN_PERCENTILES)])
    seconds = pd.DataFrame([{"second": s, "type": n, "count": c} for (s, n), c in sorted(per_second.items())],
                           columns=["second", "type", "count"])
    return types, seconds


# open loop (dbs_openloop.lua): latency percentiles per second and of the step
OPEN_LOOP_PERCENTILES = (50, 90, 99, 99.9)
# a step sustained its offered load when, at its end, fewer than this share of its arrivals
# were still waiting to start and none had waited this long
SUSTAINED_QUEUE_SHARE, SUSTAINED_LAG_S = 0.02, 1.0


def _pct_name(q: float) -> str:
    """The column name of a percentile.

    >>> _pct_name(99.9), _pct_name(50)
    ('p99_9', 'p50')
    """
    return "p" + f"{q:g}".replace(".", "_")


def _merge(hists: list[list[list[float]]]) -> pd.DataFrame:
    counts: dict[float, int] = {}
    for h in hists:
        for upper, n in h:
            counts[upper] = counts.get(upper, 0) + int(n)
    return pd.DataFrame(sorted(counts.items()), columns=["value_ms", "count"])


@dataclass
class OpenLoop:
    """What an open-loop step measured: `seconds` (per second of the run: arrivals due,
    transactions completed, the queue of due arrivals not yet started and how late its oldest
    was, latency percentiles from the scheduled start), `histogram` (every completed
    transaction's latency from its scheduled start), `unstarted` (the arrivals still queued at
    the end: how long each had waited, a lower bound of its latency) and `totals`."""
    seconds: pd.DataFrame
    histogram: pd.DataFrame
    unstarted: pd.DataFrame
    totals: dict[str, Any]


def parse_open_loop(text: str, rate: float, duration: float) -> OpenLoop:
    """The `ol_*` lines of an open-loop run: per-thread seconds merged, the reporter's queue
    lines, the end line. Latency percentiles of a step that did not sustain its load include
    the unstarted arrivals' waits and are lower bounds (`totals["lower_bound"]`)."""
    per_second: dict[int, dict[str, Any]] = {}
    queue, end = [], None
    for line in text.splitlines():
        if line.startswith('{"kind":"ol_interval"'):
            r = json.loads(line)
            s = per_second.setdefault(int(r["second"]), {"n": 0, "sum_ms": 0.0, "wait_sum_ms": 0.0,
                                                         "max_ms": 0.0, "hists": []})
            for k in ("n", "sum_ms", "wait_sum_ms"):
                s[k] += r[k]
            s["max_ms"] = max(s["max_ms"], r["max_ms"])
            s["hists"].append(r["hist"])
        elif line.startswith('{"kind":"ol_queue"'):
            queue.append(json.loads(line))
        elif line.startswith('{"kind":"ol_end"'):
            end = json.loads(line)
    if end is None:
        raise ValueError("no open-loop end line: the run was not open-loop or did not finish")
    rows = []
    for sec, s in sorted(per_second.items()):
        h = _merge(s["hists"])
        rows.append({"second": sec, "completed": s["n"], "latency_avg_ms": s["sum_ms"] / s["n"],
                     "wait_avg_ms": s["wait_sum_ms"] / s["n"], "latency_max_ms": s["max_ms"],
                     **{f"latency_{_pct_name(q)}_ms": histogram_percentile(h, q)
                        for q in OPEN_LOOP_PERCENTILES}})
    lat = pd.DataFrame(rows, columns=["second", "completed", "latency_avg_ms", "wait_avg_ms",
                                      "latency_max_ms",
                                      *(f"latency_{_pct_name(q)}_ms" for q in OPEN_LOOP_PERCENTILES)])
    q = pd.DataFrame(queue, columns=["time", "due", "started", "queued", "lag_ms", "dropped"])
    q = q.assign(second=q["time"].round().astype("int64")).drop(columns="time")
    q["arrivals"] = q["due"].diff().fillna(q["due"])
    seconds = q.merge(lat, on="second", how="outer").sort_values("second").reset_index(drop=True)
    seconds["completed"] = seconds["completed"].fillna(0).astype("int64")
    hist = _merge([h for s in per_second.values() for h in s["hists"]])
    unstarted = _merge([end["unstarted_hist"]])
    completed = int(hist["count"].sum())
    # the schedule's own window: from the first arrival (sysbench connected) to the end
    window = float(end.get("window_s") or duration)
    lag_end = float(unstarted["value_ms"].max() / 1000) if not unstarted.empty else 0.0
    waiting = end["unstarted"] + end["dropped"]
    sustained = waiting <= SUSTAINED_QUEUE_SHARE * max(end["due"], 1) and lag_end < SUSTAINED_LAG_S
    both = _merge([hist.values.tolist(), unstarted.values.tolist()]) if not sustained else hist
    totals = {"offered_rate": float(rate), "arrivals": int(end["due"]),
              "arrival_rate": end["due"] / window, "completed": completed,
              "achieved_rate": completed / window, "window_s": window, "unstarted": int(end["unstarted"]),
              "dropped": int(end["dropped"]), "end_lag_s": lag_end, "sustained": bool(sustained),
              "lower_bound": not sustained,
              **{f"latency_{_pct_name(q)}_ms": histogram_percentile(both, q) for q in OPEN_LOOP_PERCENTILES},
              "latency_max_ms": float(both["value_ms"].max() if not sustained else seconds["latency_max_ms"].max())
              if len(both) else float("nan")}
    return OpenLoop(seconds, hist, unstarted, totals)


def parse_histogram(text: str) -> pd.DataFrame:
    """The `--histogram` block as rows (value_ms = bucket's upper latency, count)."""
    rows, inside = [], False
    for line in text.splitlines():
        if line.startswith("Latency histogram"):
            inside, rows = True, []
            continue
        if inside:
            m = _HIST_LINE.match(line)
            if m:
                rows.append((float(m.group(1)), int(m.group(2))))
            elif rows and not line.strip().startswith("value"):
                inside = False
    return pd.DataFrame(rows, columns=["value_ms", "count"])


def histogram_percentile(hist: pd.DataFrame, q: float) -> float:
    """The q-th percentile as sysbench computes it: the first bucket whose cumulative count
    reaches q % of all events.

    >>> histogram_percentile(pd.DataFrame({"value_ms": [1.0, 2.0, 3.0], "count": [50, 45, 5]}), 95)
    2.0
    """
    if hist.empty or hist["count"].sum() == 0:
        return float("nan")
    h = hist.sort_values("value_ms")
    need = h["count"].sum() * q / 100.0
    cum = h["count"].cumsum()
    return float(h["value_ms"][cum >= need].iloc[0])


def intervals_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Per-interval rates: one row per report interval, `second` = end of the interval."""
    df = pd.DataFrame(records, columns=list(INTERVAL_FIELDS))
    per_s = df["interval"].where(df["interval"] > 0)
    return pd.DataFrame({
        "second": df["time"].round().astype("int64"),
        "threads_running": df["threads"].astype("int64"),
        "tps": df["tps"].astype(float),
        "qps": df["qps"].astype(float),
        "reads_per_s": df["reads"] / per_s,
        "writes_per_s": df["writes"] / per_s,
        "errors_per_s": df["errors"] / per_s,
        "reconnects_per_s": df["reconnects"] / per_s,
        "latency_p_ms": df["latency_pct_ms"].astype(float),
    })


def run_totals(total: dict[str, Any], hist: pd.DataFrame) -> dict[str, float]:
    """Whole-run figures: rates over the run, latency min/avg/max and percentiles from the
    full histogram."""
    seconds = total["interval"]
    out = {"seconds": seconds, "events": total["events"], "tps": total["events"] / seconds,
           "qps": (total["reads"] + total["writes"] + total["other"]) / seconds,
           "errors": total["errors"], "reconnects": total["reconnects"],
           "latency_min_ms": total["latency_min_ms"], "latency_avg_ms": total["latency_avg_ms"],
           "latency_max_ms": total["latency_max_ms"]}
    for q in RUN_PERCENTILES:
        out[f"latency_p{q}_ms"] = histogram_percentile(hist, q)
    return out


def failure(text: str) -> str | None:
    r"""The first FATAL line of sysbench's output, without its prefix, or None. sysbench
    1.0.20 prints these (a failed CREATE TABLE in a worker thread of `prepare`, say) and may
    still exit with code 0.

    >>> failure("Initializing worker threads...\nFATAL: `sysbench.cmdline.call_command' function failed: x.lua:1: SQL error")
    "`sysbench.cmdline.call_command' function failed: x.lua:1: SQL error"
    >>> failure("Creating table 'sbtest1'...") is None
    True
    """
    m = re.search(r"(?m)^FATAL: (.*)$", text)
    return m.group(1).strip() if m else None


def parse_version(text: str) -> str:
    """The version in `sysbench --version`'s output.

    >>> parse_version("sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)")
    '1.0.20'
    """
    m = re.search(r"sysbench\s+([0-9][0-9.]*\S*)", text)
    if not m:
        raise ValueError(f"not a sysbench version line: {text!r}")
    return m.group(1)
