"""The analysis of storage studies (table compression): per-step load, footprint and steady-state
I/O figures, and the conclusion's sentences, from the data (no claim is hard-coded).

Per step, from its series (`timeseries`): throughput after the steady state it detected,
buffer-pool hit ratio, KB read and written by the server per transaction, **write
amplification** (bytes the server wrote ÷ logical bytes of the rows changed: rows written,
updated and deleted × the uncompressed bytes per row of that workload, its `none` load's
apparent size ÷ rows loaded), server CPU per transaction. The compression study compares its
candidates with `none` on steady throughput, load time, allocated footprint and write
amplification, each table one Holm family.

The study records per step its load (`loads`: seconds, rows, rows_per_s), its tables'
footprints after the load and after the run (`footprint`: apparent and allocated bytes per
table), and the per-second series `timeseries.per_second` gives.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ...analysis import over_repeats, signed, threads, timeseries
from ...analysis.claims import size_check
from ...analysis.sentences import aa_line, listed_comparisons
from ...servers import size_bytes
from ...store.results import Run

# what the notebook shows: figure panels (title → {column: label}) and table columns
FOOTPRINT_PANELS = {
    "MiB after the load": {"apparent_after_load_mib": "apparent", "allocated_after_load_mib": "allocated",
                           "free_after_load_mib": "free extents (inside apparent)"},
    "MiB after the run": {"apparent_after_run_mib": "apparent", "allocated_after_run_mib": "allocated"}}
FIGURE_PANELS = {"load time (s)": {"load_seconds": "load"},
                 "write amplification (bytes written per byte changed)":
                     {"write_amplification": "write amplification"},
                 "KB read per transaction": {"kb_read_per_txn": "KB read"},
                 "server CPU per transaction (ms)": {"cpu_ms_per_txn": "CPU"}}
SERIES_PANELS = {"tps": "transactions per second", "bp_hit_pct": "buffer-pool hit ratio (%)",
                 "server_read_mib_per_s": "MiB/s read by the server"}
SUMMARY_COLUMNS = ["workload", "threads", "arm", "n", "load_seconds_median", "rows_per_s_median",
                   "apparent_after_load_mib_median", "allocated_after_load_mib_median",
                   "free_after_load_mib_median", "allocated_after_run_mib_median", "allocated_pct_median", "median_tps_median",
                   "steady_from_s_median", "never_steady", "bp_hit_pct_median",
                   "kb_read_per_txn_median", "kb_written_per_txn_median",
                   "write_amplification_median", "cpu_ms_per_txn_median",
                   "cpu_server_pct_median", "drift_pct_median"]


def series(run: Run, steps: pd.DataFrame) -> pd.DataFrame:
    """Per measured step × second: throughput, p99, buffer-pool fill and hit ratio, bytes
    the server read and wrote, rows changed, CPU (`timeseries.per_second`)."""
    out = timeseries.per_second(run, steps)
    return out.assign(server_read_mib_per_s=out["server_read_bytes_per_s"] / 2**20)


def footprints(f: pd.DataFrame) -> pd.DataFrame:
    """Per step and stage: the tables' apparent bytes (what `ls` shows), allocated bytes (what
    `du` shows: page compression punches holes, so only this one shrinks) and InnoDB's free
    extents in them (`free_bytes`: preallocated, never written; 0 for runs recorded before it),
    each summed as measured. They are never subtracted from one another: free extents are a
    logical size, and a sparse file need not hold them on disk, so allocated − free can mean
    nothing (it went below zero on page-compressed tables). Compare like with like: allocated
    with allocated, apparent with apparent.

    >>> footprints(pd.DataFrame({"step": [1, 1], "stage": ["load"] * 2, "apparent_bytes": [100, 50],
    ...                          "allocated_bytes": [20, 50], "free_bytes": [40, 0]})).to_dict("records")
    [{'step': 1, 'stage': 'load', 'apparent_bytes': 150, 'allocated_bytes': 70, 'free_bytes': 40}]
    """
    if "free_bytes" not in f:  # not recorded (v1 runs): unknown, not zero
        f = f.assign(free_bytes=float("nan"))
    return f.groupby(["step", "stage"], as_index=False)[["apparent_bytes", "allocated_bytes", "free_bytes"]].sum(min_count=1)


def row_bytes(loads: pd.DataFrame, sizes: pd.DataFrame, steps: pd.DataFrame) -> pd.Series:
    """Per workload: the logical bytes of one row, the `none` loads' apparent size after the
    load ÷ rows loaded (median over its steps; page and index overhead included)."""
    loads = loads.merge(steps[["step", "arm"]], on="step")
    sizes = sizes[sizes["stage"] == "load"].merge(loads, on="step")
    none = sizes[sizes["arm"] == "none"]
    return (none["apparent_bytes"] / none["rows"]).groupby(none["workload"]).median()


def step_summaries(series_: pd.DataFrame, steps: pd.DataFrame, loads: pd.DataFrame,
                   footprint: pd.DataFrame) -> pd.DataFrame:
    """One row per measured step: its load (`loads`: step, seconds, rows, rows_per_s), its
    tables' footprints (`footprint`, per table) and the summary of its steady part
    (throughput, hit ratio, bytes read and written per transaction, write amplification,
    CPU per transaction, drift: last third's median throughput vs the middle third's)."""
    out = timeseries.run_summaries(series_, steps)
    if out.empty:
        return out
    summed = footprints(footprint)
    per_row = row_bytes(loads, summed, steps)
    loads = loads[["step", "seconds", "rows", "rows_per_s"]].rename(columns={"seconds": "load_seconds"})
    sizes = summed.pivot(index="step", columns="stage") / 2**20
    sizes.columns = [f"{a.removesuffix('_bytes')}_after_{s}_mib" for a, s in sizes.columns]
    extra = []
    for r in out.itertuples():
        g = series_[series_["step"] == r.step].sort_values("second").iloc[r.from_s:]
        txns = g["tps"].sum()
        tps = g["tps"].to_numpy()
        third = len(tps) // 3
        changed = g["rows_changed_per_s"].sum() * per_row.get(r.workload, np.nan)
        extra.append({
            "step": r.step, "bp_hit_pct": g["bp_hit_pct"].median(),
            "bp_fill_end_pct": g["bp_fill_pct"].iloc[-1] if len(g) else np.nan,
            "kb_read_per_txn": g["server_read_bytes_per_s"].sum() / txns / 1024 if txns else np.nan,
            "kb_written_per_txn": g["server_write_bytes_per_s"].sum() / txns / 1024 if txns else np.nan,
            "write_amplification": g["server_write_bytes_per_s"].sum() / changed if changed else np.nan,
            "cpu_ms_per_txn": g["cpu_server_pct"].sum() * 10 / txns if txns else np.nan,
            "cpu_server_pct": g["cpu_server_pct"].median(),
            "drift_pct": (np.median(tps[-third:]) / np.median(tps[third:2 * third]) - 1) * 100
            if third >= 2 else np.nan})
    out = out.merge(pd.DataFrame(extra), on="step").merge(loads, on="step", how="left")
    out = out.merge(sizes.reset_index(), on="step", how="left")
    none = out[out["arm"] == "none"].groupby(["workload"])["allocated_after_load_mib"].median()
    return out.assign(allocated_pct=out["allocated_after_load_mib"] / out["workload"].map(none) * 100)


SUMMARISED = ["load_seconds", "rows_per_s", "apparent_after_load_mib", "allocated_after_load_mib",
              "free_after_load_mib", "apparent_after_run_mib", "allocated_after_run_mib",
              "free_after_run_mib", "allocated_pct", "median_tps",
              "p01_tps", "steady_from_s", "bp_hit_pct", "bp_fill_end_pct", "kb_read_per_txn",
              "kb_written_per_txn", "write_amplification", "cpu_ms_per_txn", "cpu_server_pct",
              "drift_pct"]


def summary(run_table: pd.DataFrame) -> pd.DataFrame:
    """Per workload × threads × candidate: n, and the median, min and max over repeats of
    every per-step figure; `never_steady` counts runs that did not settle."""
    return over_repeats(run_table, SUMMARISED)


def data_ratio(summ: pd.DataFrame, buffer_pool: str) -> pd.DataFrame:
    """Per workload: the uncompressed data (the `none` loads' apparent size, median) and how
    many times the buffer pool it is — the compression study's premise, measured."""
    none = summ[summ["arm"] == "none"].groupby("workload", sort=False)["apparent_after_load_mib_median"].median()
    pool = size_bytes(buffer_pool) / 2**20
    return none.rename("data_mib").to_frame().assign(times_buffer_pool=none / pool).reset_index()


def conclusion(summ: pd.DataFrame, tables: dict[str, pd.DataFrame], p: Any, words: dict[str, str]) -> str:
    """A short Markdown conclusion of a compression study computed from its tables
    (`words`: each comparison table's metric in words), the source's findings checked
    against them (no claim is hard-coded)."""
    lines = []
    for r in data_ratio(summ, p.buffer_pool).itertuples():
        hits = summ.loc[summ["workload"] == r.workload, "bp_hit_pct_median"].dropna()
        lo, hi = (hits.min(), hits.max()) if len(hits) else (float("nan"),) * 2
        fits = ("the data outgrow memory" if r.times_buffer_pool >= 2 else
                "**the data nearly fit in memory**: the study's premise does not hold")
        reads = (f"; buffer-pool hit ratio {lo:.0f}–{hi:.0f} % (medians per candidate): "
                 f"{100 - hi:.0f}–{100 - lo:.0f} % of page reads went to storage" if lo == lo else "")
        lines.append(f"- **{r.workload}**: {_mib(r.data_mib)} MiB of uncompressed tables, "
                     f"{r.times_buffer_pool:.1f}× the {p.buffer_pool} buffer pool — {fits}{reads}.")
    for (w, t), g in summ.groupby(["workload", "threads"], sort=False):
        parts = []
        for r in g.itertuples():
            parts.append(f"{r.arm}: {_mib(r.allocated_after_load_mib_median)} MiB allocated "
                         f"({r.allocated_pct_median:.0f} % of none's; apparent "
                         f"{_mib(r.apparent_after_load_mib_median)} MiB"
                         + (f", of which {_mib(r.free_after_load_mib_median)} MiB free extents"
                            if r.free_after_load_mib_median == r.free_after_load_mib_median else "")
                         + "), load "
                         f"{r.load_seconds_median:.1f} s, {r.median_tps_median:,.0f} TPS steady "
                         f"at a {r.bp_hit_pct_median:.0f} % buffer-pool hit ratio, "
                         f"{r.cpu_ms_per_txn_median:.2f} ms of server CPU per transaction, "
                         f"write amplification {r.write_amplification_median:.0f}")
        lines.append(f"- **{w}, {threads(t)}** (medians over repeats): "
                     + "; ".join(parts) + ".")
        lines += _cpu_line(g, p)
        ratio = data_ratio(summ, p.buffer_pool).set_index("workload")["times_buffer_pool"]
        premise = ("the data nearly fit in the buffer pool" if not ratio.get(w, 0) >= 2 else
                   f"the server's CPU set the pace (up to {_cpu_share(g, p):.0f} % of its CPUs)"
                   if _cpu_share(g, p) >= CPU_BOUND else "")
        lines += _source_checks(summ, tables, w, t, not_io_bound=premise)
    lines += listed_comparisons(tables, words, "none")
    lines += aa_line(tables.get("aa"), "none")
    return "\n".join(lines)


def _mib(x: float) -> str:
    """332 → '332', 1234.5 → '1,234', 0.27 → '0.27'.

    >>> _mib(1234.5), _mib(0.2712)
    ('1,234', '0.27')
    """
    return f"{x:,.0f}" if x >= 10 else f"{x:.2g}" if x >= 0.01 or x == 0 else "< 0.01"


CPU_BOUND = 70.0  # % of the server's CPUs in the steady part: above it CPU, not storage alone, sets the pace


def _cpu_share(g: pd.DataFrame, p: Any) -> float:
    """The busiest arm's server CPU in the steady part, % of the CPUs it may use (NaN: not sampled)."""
    return float(g["cpu_server_pct_median"].max()) / (100 * p.server_cpu_count) * 100


def _cpu_line(g: pd.DataFrame, p: Any) -> list[str]:
    """Whether the server's CPU, rather than storage, set the pace: its median use in the
    steady part against the CPUs it may use."""
    cores, share = p.server_cpu_count, _cpu_share(g, p)
    if not share == share:  # NaN: not sampled
        return []
    said = ", ".join(f"{r.arm} {r.cpu_server_pct_median:.0f} %" for r in g.itertuples())
    bound = (f"the server used up to {share:.0f} % of its {cores} CPUs: CPU, not storage alone, "
             "limits these runs, and compression's CPU cost counts in full" if share >= CPU_BOUND else
             f"the server used at most {share:.0f} % of its {cores} CPUs")
    return [f"  - Server CPU in the steady part (% of one core): {said}; {bound}."]


def _verdicts(rel: pd.DataFrame | None, w: str, t: int, arms: list[str]) -> dict[str, Any]:
    """candidate → its comparison row (delta_pct, verdict …) in `rel` for this cell."""
    if rel is None or rel.empty:
        return {}
    cell = rel[(rel["workload"] == w) & (rel["threads"] == t)].set_index("candidate")
    return {a: cell.loc[a] for a in arms if a in cell.index}


def held(expected: str, found: list[Any]) -> str:
    """What the comparisons say of a source's finding that these candidates came out
    `expected` ("better" or "worse"): reproduced (all significantly so), contradicted (one
    significantly the other way), else inconclusive (a draw is no evidence either way).

    >>> held("worse", ["worse", "worse"]), held("worse", ["worse", "better"]), held("worse", ["draw"])
    ('reproduced', 'contradicted', 'inconclusive (not significant)')
    """
    other = {"better": "worse", "worse": "better"}[expected]
    if found and all(v == expected for v in found):
        return "reproduced"
    if any(v == other for v in found):
        return "contradicted"
    return "inconclusive (not significant)"


def _said(found: dict[str, Any]) -> str:
    return ", ".join(f"{a} {signed(r.delta_pct).replace('.0 %', ' %')} ({r.verdict})" for a, r in found.items())


def _io_bound_claim(tps: dict[str, Any], pages: list[str], rows: list[str], not_io_bound: str = "") -> str:
    """The source's I/O-bound throughput finding against this cell: not testable where the
    run was not I/O-bound (`not_io_bound` says why: the data nearly fit in the buffer pool, or
    the server's CPU set the pace — the claim's premise); else whether both kinds came out
    below none, in the source's order (row-compressed below page-compressed) and sizes.

    >>> r = lambda d, v: pd.Series({"delta_pct": d, "verdict": v, "holm_ci_low": 1 + d / 100 - .05, "holm_ci_high": 1 + d / 100 + .05})
    >>> _io_bound_claim({"page:zlib": r(-50, "worse"), "row:8": r(-20, "worse")}, ["page:zlib"], ["row:8"])
    'partly reproduced here: both below none, but in the opposite order (page-compressed −50 % below row-compressed −20 %; the source: row-compressed the slower)'
    >>> _io_bound_claim({"page:zlib": r(-50, "worse")}, ["page:zlib"], [], "the data nearly fit in the buffer pool")
    'not testable here: the data nearly fit in the buffer pool, and the claim is about I/O-bound tables'
    """
    if not_io_bound:
        return f"not testable here: {not_io_bound}, and the claim is about I/O-bound tables"
    said = held("worse", [r.verdict for r in tps.values()])
    if said != "reproduced":
        return f"{said} here"
    mean = {kind: float(np.mean([tps[a].delta_pct for a in names if a in tps]))
            for kind, names in (("page", pages), ("row", rows)) if any(a in tps for a in names)}
    if len(mean) == 2 and mean["page"] < mean["row"]:
        return (f"partly reproduced here: both below none, but in the opposite order (page-compressed "
                f"{signed(mean['page']).replace('.0 %', ' %')} below row-compressed {signed(mean['row']).replace('.0 %', ' %')}; "
                "the source: row-compressed the slower)")
    apart = [size_check(pd.DataFrame([tps[a] for a in kind if a in tps]), source, source)
             .removeprefix(" in direction, ") for kind, source in ((pages, -22.0), (rows, -68.0))
             if any(a in tps for a in kind)]
    return "reproduced in direction, in the source's order; " + "; ".join(a for a in apart if a) + " here" if any(apart) \
        else "reproduced here"


def _source_checks(summ: pd.DataFrame, tables: dict[str, pd.DataFrame], w: str, t: int,
                   not_io_bound: str = "") -> list[str]:
    """The source's three findings, each said as reproduced or not by the comparison tables
    (a difference counts only with a better/worse verdict) and the runs' drift; the I/O-bound
    one is not testable where the run was not I/O-bound (`not_io_bound`: why)."""
    g = summ[(summ["workload"] == w) & (summ["threads"] == t)].set_index("arm")
    out = []
    pages = [a for a in g.index if a.startswith("page:")]
    rows = [a for a in g.index if a.startswith("row:")]
    load = _verdicts(tables.get("load"), w, t, [*pages, *rows])
    if pages and rows and load:
        slowest = g["load_seconds_median"].idxmax()
        out.append(f"  - Source: page-compressed loads fastest — "
                   f"{held('better', [load[a].verdict for a in pages if a in load])} here "
                   f"(load time vs none: {_said({a: load[a] for a in pages if a in load})}); "
                   f"row-compressed slowest — {held('worse', [load[a].verdict for a in rows if a in load])} "
                   f"({_said({a: load[a] for a in rows if a in load})}; slowest median: {slowest}).")
    tps = _verdicts(tables.get("tps"), w, t, [*pages, *rows])
    if tps:
        out.append("  - Source: once I/O-bound, uncompressed is fastest, page-compressed ≈ 22 % "
                   f"and row-compressed ≈ 68 % below — {_io_bound_claim(tps, pages, rows, not_io_bound)} "
                   f"(throughput vs none: {_said(tps)}).")
    drift = g["drift_pct_median"]
    if "none" in drift and drift.notna().all():
        others = drift.drop("none")
        worse = bool(drift["none"] < 0 and (others.empty or drift["none"] < others.min()))
        out.append(f"  - Source: write amplification slows uncompressed tables over time — "
                   f"{'seen' if worse else 'not seen'} here: throughput of the last third vs "
                   f"the middle third of the run, none {drift['none']:+.1f} %"
                   + "".join(f", {a} {v:+.1f} %" for a, v in others.items()) + ".")
    return out
