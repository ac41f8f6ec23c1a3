"""Figures shared by the notebooks: one style, one colour per configuration across all the
figures of a report, series that share an x dodged apart, log axes with readable ticks
(1, 2, 5 × 10ⁿ as plain numbers), and alt text on every figure in the report.

    fig = plots.scaling(summary, "qps", "queries per second")
    plots.publish(fig, run, "qps_vs_threads")     # PNG + SVG in the run, shown with alt text
"""
from __future__ import annotations

import json
import math
import re
import textwrap
from pathlib import Path
from typing import Any, Callable, Sequence

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

sns.set_theme(style="whitegrid", context="notebook")
PANEL_W, PANEL_H, MAX_W = 6.4, 4.2, 13.5   # inches; a report page is about 13.5 in wide
DODGE = 0.07                                 # log2 units between series sharing an x
PROCESS_STYLE = {"server": "-", "client": "--"}


_COLOURS: dict[str, tuple] = {}  # label → colour, for every figure this process draws


def palette(labels: Sequence[str]) -> dict[str, tuple]:
    """One colour per configuration, the same in every figure of a report (of this
    process): a label seen for the first time gets the next colour not yet given, in the
    order given (the baseline first where the arms come in their order)."""
    deep = sns.color_palette("deep")
    for label in (x for x in dict.fromkeys(map(str, labels)) if x not in _COLOURS):
        used = set(_COLOURS.values())
        _COLOURS[label] = next((c for c in deep if c not in used), deep[len(_COLOURS) % len(deep)])
    return {label: _COLOURS[str(label)] for label in dict.fromkeys(labels)}


def in_colour_order(labels: Sequence[str]) -> list[str]:
    """`labels` once each, those with a colour in the order they got it (the baseline first,
    `report.setup` registers the arms so), the others after them as they come."""
    seen = list(dict.fromkeys(map(str, labels)))
    known = list(_COLOURS)
    return sorted(seen, key=lambda x: (known.index(x) if x in known else len(known), seen.index(x)))


def plain(v: float, _: object = None) -> str:
    """A tick label as a plain number: 2,000 · 50 · 0.2.

    >>> plain(20000), plain(5), plain(0.2), plain(1.5)
    ('20,000', '5', '0.2', '1.5')
    """
    return f"{v:,.0f}" if abs(v) >= 100 or float(v).is_integer() else f"{v:.3g}"


def ticks_125(low: float, high: float, mantissas: Sequence[float] = (1, 2, 5)) -> list[float]:
    """m × 10ⁿ (m in `mantissas`) from the one just below `low` to the one just above `high`.

    >>> ticks_125(3, 120)
    [2, 5, 10, 20, 50, 100, 200]
    >>> ticks_125(2.1, 2.6, (1, 1.5, 2, 3, 5, 7))
    [2, 3]
    """
    out, e = [], math.floor(math.log10(low)) - 1 if low > 0 else 0
    while True:
        for m in mantissas:
            v = m * 10 ** e
            v = round(v, 12) if v < 1 else int(v) if float(v).is_integer() else v
            if v >= low:
                if not out or out[-1] < low:
                    out = out[-1:]
                out.append(v)
                if v >= high:
                    return out
            else:
                out = [v]
        e += 1


LOG_MARGIN = 1.12  # a log axis reaches this factor beyond its data: no marker on the frame
FINE = (1, 1.5, 2, 3, 5, 7)


def log_ticks(low: float, high: float) -> tuple[list[float], float, float]:
    """Labelled ticks of a log axis for data from `low` to `high`, and the axis limits: at
    least three ticks in view (1-2-5, finer 1-1.5-2-3-5-7 for a narrow range, else the limits
    widen to the ticks beyond the data), powers of ten only over many decades.

    >>> log_ticks(3, 120)[0], log_ticks(2.1, 2.6)[0], log_ticks(2.52, 2.62)[0]
    ([5, 10, 20, 50, 100], [1.5, 2, 3], [1.5, 2, 3])
    """
    lo, hi = low / LOG_MARGIN, high * LOG_MARGIN
    for mantissas in ((1, 2, 5), FINE):
        ticks = [t for t in ticks_125(lo, hi, mantissas) if lo <= t <= hi]
        if len(ticks) >= 3:
            break
    else:
        around = ticks_125(lo, hi, FINE)
        while len(around) < 3:  # the data between two neighbouring ticks: one more below
            around = ticks_125(around[0] * 0.99, around[-1], FINE)
        ticks, lo, hi = around, min(lo, around[0]), max(hi, around[-1])
    powers = [t for t in ticks if round(t / 10 ** math.floor(math.log10(t)), 6) == 1]
    if len(ticks) > 9 and len(powers) >= 3:  # many decades
        ticks = powers
    return ticks, lo, hi


def _log_axis(ax, which: str, low: float, high: float) -> None:
    """A log `which` ("x" or "y") axis for data from `low` to `high`, with `log_ticks`."""
    getattr(ax, f"set_{which}scale")("log")
    if not (low > 0 and math.isfinite(low) and math.isfinite(high)):
        return
    ticks, lo, hi = log_ticks(low, high)
    getattr(ax, f"set_{which}lim")(lo, hi)
    axis = ax.xaxis if which == "x" else ax.yaxis
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_major_formatter(FuncFormatter(plain))
    axis.set_minor_locator(NullLocator())
    axis.set_minor_formatter(NullFormatter())


def _log_y(ax, low: float, high: float) -> None:
    _log_axis(ax, "y", low, high)


def thread_ticks(threads: Sequence[int]) -> list[int]:
    """The labelled ticks of a client-threads axis: every power of two from the fewest to
    the most threads (every other one beyond 12), and the thread counts themselves.

    >>> thread_ticks([1, 4]), thread_ticks([1, 16, 64, 256, 1024, 4096]), thread_ticks([4])
    ([1, 2, 4], [1, 4, 16, 64, 256, 1024, 4096], [2, 4, 8])
    """
    lo, hi = min(threads), max(threads)
    powers = [2 ** k for k in range(math.floor(math.log2(lo)), math.ceil(math.log2(hi)) + 1)
              if lo <= 2 ** k <= hi]
    if len(powers) > 12:
        powers = powers[::2]
    ticks = sorted(set(powers) | set(map(int, threads)))
    while len(ticks) < 3:  # one or two thread counts: their neighbours too, for scale
        ticks = sorted({*ticks, ticks[-1] * 2} | ({ticks[0] // 2} if ticks[0] >= 2 else set()))
    return ticks


def _log2_threads(ax, threads) -> None:
    ax.set_xscale("log", base=2)
    ticks = thread_ticks(list(threads))
    ax.set_xticks(ticks)
    ax.set_xlim(ticks[0] / 2 ** 0.3, ticks[-1] * 2 ** 0.3)  # dodged whiskers stay inside
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("client threads")


def _panels(n: int) -> tuple[plt.Figure, list]:
    width = min(PANEL_W * n, MAX_W)
    fig, axes = plt.subplots(1, n, figsize=(width, PANEL_H), squeeze=False)
    return fig, list(axes[0])


def _legend_below(fig: plt.Figure, ax) -> None:
    """One legend for all panels, under them, where it hides no data."""
    handles, labels = ax.get_legend_handles_labels()
    fig.tight_layout()
    if not handles:  # nothing drawn (a failed run's partial data): no legend
        return
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0),
               ncol=min(len(labels), 3), fontsize="small", frameon=False)


def dodged(x: pd.Series, i: int, n: int) -> pd.Series:
    """x shifted for series i of n on a log2 axis, so whiskers do not hide each other.

    >>> dodged(pd.Series([4.0]), 0, 2).round(3).tolist(), dodged(pd.Series([4.0]), 1, 2).round(3).tolist()
    ([3.904], [4.098])
    """
    return x * 2 ** ((i - (n - 1) / 2) * DODGE)


def scaling(summary: pd.DataFrame, metric: str, ylabel: str, *, hue: str = "arm",
            facet: str = "workload", logy: bool = True, note: str = "") -> plt.Figure:
    """Median of `metric` with min/max whiskers vs client threads, one panel per `facet`.

    `summary` has columns threads, hue, facet and {metric}_median/_min/_max."""
    facets = sorted(summary[facet].unique())
    fig, axes = _panels(len(facets))
    colours = palette(summary[hue])
    for ax, f in zip(axes, facets):
        part = summary[summary[facet] == f]
        for i, (h, g) in enumerate(part.groupby(hue)):
            g = g.sort_values("threads")
            med = g[f"{metric}_median"]
            ax.errorbar(dodged(g["threads"], i, len(colours)), med,
                        yerr=[med - g[f"{metric}_min"], g[f"{metric}_max"] - med],
                        marker="o", capsize=3, label=h, color=colours[h])
        _log2_threads(ax, summary["threads"])
        if logy:
            _log_y(ax, part[f"{metric}_min"].min(), part[f"{metric}_max"].max())
        ax.set_title(f)
        ax.set_ylabel(ylabel)
    fig.suptitle(f"{ylabel}{' (' + note + ')' if note else ''}: median, whiskers min–max", y=1.02)
    _legend_below(fig, axes[0])
    fig.dbstudies_alt = (f"{ylabel} against client threads ({', '.join(map(str, sorted(summary['threads'].unique())))}), "
                         f"one panel per {facet} ({', '.join(facets)}), one line per {hue} "
                         f"({', '.join(colours)}): median over repeats with min–max whiskers.")
    return fig


def cpu(summary: pd.DataFrame, *, facet: str = "workload", hue: str = "arm") -> plt.Figure:
    """Median CPU use of server (solid) and sysbench client (dashed), % of one core, vs
    threads; the same colours per configuration as the other figures."""
    facets = sorted(summary[facet].unique())
    fig, axes = _panels(len(facets))
    colours = palette(summary[hue])
    for ax, f in zip(axes, facets):
        for h, g in summary[summary[facet] == f].groupby(hue):
            g = g.sort_values("threads")
            for process, style in PROCESS_STYLE.items():
                ax.plot(g["threads"], g[f"cpu_{process}_pct"], style, marker="o",
                        color=colours[h], label=f"{h}, {process}")
        _log2_threads(ax, summary["threads"])
        ax.set_ylim(bottom=0)
        ax.set_title(f)
        ax.set_ylabel("CPU, % of one core")
    fig.suptitle("CPU use: server (solid) and sysbench (dashed), median", y=1.02)
    _legend_below(fig, axes[0])
    fig.dbstudies_alt = (f"Median CPU use in % of one core of the server and of sysbench "
                         f"against client threads, one panel per {facet}, one colour per {hue}.")
    return fig


def typical(runs: pd.DataFrame, value: str = "median_tps") -> pd.Series:
    """Per arm, the step whose `value` is the median repeat's (the lower middle for an even
    count): the run a time-series figure draws bold.

    >>> typical(pd.DataFrame({"arm": ["a", "a", "a"], "step": [1, 2, 3], "median_tps": [5, 9, 7]})).to_dict()
    {'a': 3}
    """
    def middle(g: pd.DataFrame) -> int:
        g = g.sort_values(value)
        return int(g["step"].iloc[(len(g) - 1) // 2])
    return runs.groupby("arm", sort=False)[["step", value]].apply(middle)


def timeline(series: pd.DataFrame, runs: pd.DataFrame, stalls: pd.Series, *,
             title: str = "", secondary: str | None = "checkpoint_age_pct",
             secondary_label: str = "checkpoint age, % of max") -> plt.Figure:
    """Per-second throughput (top) and p99 (bottom) over time, one column per arm: the
    median repeat bold, the other repeats faint, its stall seconds shaded, and `secondary`
    (checkpoint age) dashed on a right-hand axis of the throughput panel.

    `series`: per step × second (arm, step, second, tps, latency_p_ms, secondary); `runs`:
    one row per step (arm, step, median_tps); `stalls`: a bool per row of `series`."""
    arms = list(dict.fromkeys(runs["arm"]))
    colours = palette(arms)
    bold = typical(runs)
    width = min(PANEL_W * len(arms), MAX_W)
    fig, axes = plt.subplots(2, len(arms), figsize=(width, PANEL_H * 1.6), squeeze=False,
                             sharex=True, sharey="row")
    for j, arm in enumerate(arms):
        top, bottom = axes[0][j], axes[1][j]
        for step, g in series[series["arm"] == arm].groupby("step"):
            strong = step == bold.get(arm)
            style = dict(color=colours[arm], lw=1.6 if strong else 0.8, alpha=1 if strong else 0.3,
                         zorder=3 if strong else 2)
            top.plot(g["second"], g["tps"], **style)
            bottom.plot(g["second"], g["latency_p_ms"], **style)
            if strong:
                for ax in (top, bottom):
                    for s in g.loc[stalls.loc[g.index], "second"]:
                        ax.axvspan(s - 1, s, color="tab:red", alpha=0.15, lw=0)
                if secondary and g[secondary].notna().any():
                    right = top.twinx()
                    right.plot(g["second"], g[secondary], "--", color="0.35", lw=1)
                    right.set_ylim(0, max(105, float(g[secondary].max()) * 1.05))
                    right.set_ylabel(secondary_label, color="0.35")
                    right.grid(False)
        top.set_title(arm)
        top.set_ylim(bottom=0)
        p99 = series["latency_p_ms"]
        _log_y(bottom, p99[p99 > 0].min(), p99.max())
        bottom.set_xlabel("seconds into the step")
    axes[0][0].set_ylabel("transactions per second")
    axes[1][0].set_ylabel("p99 latency per second (ms)")
    fig.suptitle(title + ("; " if title else "") + "median repeat bold, others faint"
                 + (", stall seconds shaded" if stalls.any() else "")
                 + (f", {secondary_label} dashed" if secondary else ""), y=1.01)
    fig.tight_layout()
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    keys = [(Line2D([], [], color="0.25", lw=1.6), "median repeat"),
            (Line2D([], [], color="0.25", lw=0.8, alpha=0.3), "other repeats")]
    if stalls.any():
        keys.append((Patch(color="tab:red", alpha=0.15), "stall seconds"))
    if secondary and series[secondary].notna().any():
        keys.append((Line2D([], [], color="0.35", lw=1, ls="--"), secondary_label))
    fig.legend(*zip(*keys), loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=len(keys),
               fontsize="small", frameon=False)
    fig.dbstudies_alt = (f"Per-second throughput (top) and p99 latency (bottom, log scale) over "
                         f"the step for {', '.join(arms)}; the median repeat bold, the others "
                         f"faint" + ("; stall seconds shaded red" if stalls.any() else "")
                         + (f"; {secondary_label} as a dashed line on the right axis." if secondary else "."))
    return fig


def bands(series: pd.DataFrame, panels: dict[str, str], *, hue: str = "arm", window: int = 1,
          title: str = "") -> plt.Figure:
    """Per-second series over time, one panel per column of `panels` (column → label): per
    `hue` the median over repeats (steps) as a line and the min–max over repeats as a band.
    `window` > 1 first smooths each repeat with a centred rolling median of that many
    seconds (the title says so). `series`: per step × second, with `hue`, step, second. Axes
    start at zero, but for percentages (columns ending in `_pct`), which zoom to their data."""
    fig, axes = _panels(len(panels))
    arms = list(dict.fromkeys(series[hue]))
    colours = palette(arms)
    for ax, (column, label) in zip(axes, panels.items()):
        for arm in arms:
            part = series[series[hue] == arm]
            wide = part.pivot_table(index="second", columns="step", values=column, aggfunc="last")
            if window > 1:
                wide = wide.rolling(window, center=True, min_periods=1).median()
            if wide.empty or wide.isna().all().all():
                continue
            ax.plot(wide.index, wide.median(axis=1), color=colours[arm], lw=1.4, label=arm)
            ax.fill_between(wide.index, wide.min(axis=1), wide.max(axis=1), color=colours[arm],
                            alpha=0.18, lw=0)
        if not column.endswith("_pct"):
            ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(FuncFormatter(plain))  # 5,000,000, never "1e6" over the axis
        ax.set_xlabel("seconds into the step")
        ax.set_ylabel(label)
    smooth = f"{window}-s rolling median per repeat, then " if window > 1 else ""
    fig.suptitle((title + ": " if title else "") + smooth + "median over repeats (line), "
                 "min–max (band)", y=1.02)
    _legend_below(fig, axes[0])
    fig.dbstudies_alt = (f"{', '.join(panels.values())} over the seconds of the step for "
                         f"{', '.join(arms)}: median over repeats as a line, min to max as a band.")
    return fig


def bars(summary: pd.DataFrame, panels: dict[str, dict[str, str]], *, title: str = "",
         x: str = "arm") -> plt.Figure:
    """Grouped bars: one panel per entry of `panels` (panel title → {prefix: bar label}),
    per `x` one bar per prefix at its median over repeats with min–max whiskers, in the
    `x`'s colour (the same as in every other figure), the prefixes told apart by shade;
    `summary` has `x` and {prefix}_median/_min/_max."""
    from matplotlib.patches import Patch
    fig, axes = _panels(len(panels))
    xs = list(dict.fromkeys(summary[x]))
    colours = [palette(xs)[a] for a in xs]
    rows = summary.set_index(x).loc[xs]
    keys: dict[str, float] = {}
    for ax, (panel, prefixes) in zip(axes, panels.items()):
        n = len(prefixes)
        width = 0.8 / n
        for k, (prefix, label) in enumerate(prefixes.items()):
            alpha = 0.35 + 0.65 * k / (n - 1) if n > 1 else 1.0
            med = rows[f"{prefix}_median"]
            pos = [i + (k - (n - 1) / 2) * width for i in range(len(xs))]
            ax.bar(pos, med, width * 0.9, color=colours, alpha=alpha)
            ax.errorbar(pos, med, yerr=[med - rows[f"{prefix}_min"], rows[f"{prefix}_max"] - med],
                        fmt="none", ecolor="0.2", capsize=3, lw=1)
            if n > 1:
                keys[label] = alpha
        ax.set_xticks(range(len(xs)), xs)
        ax.set_ylabel("\n".join(textwrap.wrap(panel, 32)))
        ax.set_ylim(bottom=0)
    fig.suptitle((title + ": " if title else "") + "median over repeats, whiskers min–max", y=1.02)
    fig.tight_layout()
    if keys:
        fig.legend([Patch(facecolor="0.35", alpha=a) for a in keys.values()],
                   [f"{label} ({'light' if a < 1 else 'solid'})" for label, a in keys.items()],
                   loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=len(keys),
                   fontsize="small", frameon=False)
    fig.dbstudies_alt = (f"Bars of {', '.join(panels)} for {', '.join(map(str, xs))}: median over "
                         f"repeats with min–max whiskers.")
    return fig


def distribution(series: pd.DataFrame, value: str, label: str, *, facet: str | None = None) -> plt.Figure:
    """Distribution of a per-second `value` per arm (all repeats pooled): a box per arm
    with every second as a faint dot, one panel per `facet`."""
    facets = list(dict.fromkeys(series[facet])) if facet else [None]
    fig, axes = _panels(len(facets))
    arms = list(dict.fromkeys(series["arm"]))
    colours = palette(arms)
    for ax, f in zip(axes, facets):
        part = series if f is None else series[series[facet] == f]
        sns.boxplot(part, x="arm", y=value, order=arms, hue="arm", palette=colours,
                    showfliers=False, width=0.5, ax=ax, legend=False)
        sns.stripplot(part, x="arm", y=value, order=arms, color="0.2", size=1.5, alpha=0.25,
                      jitter=0.25, ax=ax)
        ax.set_ylim(bottom=0)
        ax.set_xlabel("")
        ax.set_ylabel(label)
        if f is not None:
            ax.set_title(str(f))
    fig.suptitle(f"{label}: every second of every repeat", y=1.02)
    fig.tight_layout()
    fig.dbstudies_alt = (f"Box plots of {label} per second for {', '.join(arms)}, every second "
                         f"of every repeat pooled, each second also shown as a dot.")
    return fig


def whiskers(summary: pd.DataFrame, metrics: dict[str, str], *, title: str = "") -> plt.Figure:
    """One panel per metric (prefix → label): median over repeats per arm with min–max
    whiskers; `summary` has arm and {prefix}_median/_min/_max."""
    fig, axes = _panels(len(metrics))
    arms = list(dict.fromkeys(summary["arm"]))
    colours = palette(arms)
    for ax, (prefix, label) in zip(axes, metrics.items()):
        for i, arm in enumerate(arms):
            r = summary[summary["arm"] == arm].iloc[0]
            med = r[f"{prefix}_median"]
            ax.errorbar([i], [med], yerr=[[med - r[f"{prefix}_min"]], [r[f"{prefix}_max"] - med]],
                        marker="o", capsize=4, color=colours[arm], ms=7)
        ax.set_xticks(range(len(arms)), arms)
        ax.set_xlim(-0.6, len(arms) - 0.4)
        # from zero to a tenth above the highest whisker: the autoscaled top, rescaled from
        # zero, can sit a pixel above a marker of a tight spread; all zero (no stall): up to 1
        high = summary[[f"{prefix}_max", f"{prefix}_median"]].max().max()
        top = max(float(high) * 1.1, 1) if high == high else 1
        ax.set_ylim(-0.04 * top, top)   # a marker at zero is not cut by the frame
        ax.set_ylabel("\n".join(textwrap.wrap(label, 32)))
    fig.suptitle((title + ": " if title else "") + "median over repeats, whiskers min–max", y=1.02)
    fig.tight_layout()
    fig.dbstudies_alt = (f"Median over repeats with min–max whiskers of {', '.join(metrics.values())} "
                         f"for {', '.join(arms)}.")
    return fig


def per_query(summary: pd.DataFrame, *, x: str = "query",
              title: str = "seconds per query: median, whiskers min–max (timed-out executions left out)"
              ) -> plt.Figure:
    """Seconds per query (or other `x`) and candidate (`arm`): the geometric mean (the
    tables' estimator) with min–max whiskers, log scale."""
    arms = list(dict.fromkeys(summary["arm"]))
    colours = palette(arms)
    xs = list(dict.fromkeys(summary[x]))
    labels = [f"Q{v}" if x == "query" else textwrap.fill(str(v), 16) for v in xs]
    per_tick = 0.45 * len(arms) if x == "query" else max(0.45 * len(arms), 1.4)  # room for long labels
    fig, ax = plt.subplots(figsize=(min(MAX_W, max(PANEL_W, per_tick * len(xs))), PANEL_H))
    w = 0.8 / len(arms)
    for i, a in enumerate(arms):
        part = summary[summary["arm"] == a].set_index(x).reindex(xs)
        pos = [j + (i - (len(arms) - 1) / 2) * w for j in range(len(xs))]
        med = part["geomean_s"]
        ax.errorbar(pos, med, yerr=[med - part["min_s"], part["max_s"] - med], fmt="o",
                    color=colours[a], capsize=2, label=a)
    ax.set_xticks(range(len(xs)), labels)
    _log_y(ax, summary["min_s"].min(), summary["max_s"].max())
    ax.set_ylabel("seconds")
    ax.set_title(title, fontsize="medium")
    _legend_below(fig, ax)
    fig.dbstudies_alt = (f"Seconds per {x} on a log scale for {', '.join(arms)}: geometric mean with "
                         f"min–max whiskers.")
    return fig


def normalised(summary: pd.DataFrame, baseline: str, *, x: str = "query", zoom: float | None = None,
               title: str = "") -> plt.Figure:
    """Each candidate's geometric mean as % of the baseline's (= 100 %) per `x`, a bar each —
    the estimate the study's verdicts test, so a bar and its table agree —, min/max whiskers
    (also over the baseline's geometric mean); `zoom`: only 100 ± zoom % is shown, as the
    sources' second chart does: a bar or whisker beyond it is cut at the edge, where a
    triangle and its value mark it."""
    cands = [a for a in dict.fromkeys(summary["arm"]) if a != baseline]
    colours = palette(list(dict.fromkeys(summary["arm"])))
    xs = list(dict.fromkeys(summary[x]))
    base = summary[summary["arm"] == baseline].set_index(x)["geomean_s"]
    width = min(MAX_W, max(PANEL_W, 0.45 * len(xs) * max(1, len(cands))))
    fig, ax = plt.subplots(figsize=(width, PANEL_H))
    w = 0.8 / max(1, len(cands))
    own = summary[summary["arm"] == baseline].set_index(x).reindex(xs)  # the baseline's spread
    if len(own.dropna(how="all")):
        b = base.reindex(xs)
        bpos = [j - 0.45 for j in range(len(xs))]
        blo, bhi = own["min_s"] / b * 100, own["max_s"] / b * 100
        if zoom:
            blo, bhi = blo.clip(100 - zoom, 100 + zoom), bhi.clip(100 - zoom, 100 + zoom)
        ax.errorbar(bpos, [100] * len(xs), yerr=[100 - blo, bhi - 100], fmt="D", ms=4, capsize=2,
                    lw=1, color=colours[baseline], label=f"{baseline} (= 100 %): its own min–max")
    for i, c in enumerate(cands):
        part = summary[summary["arm"] == c].set_index(x).reindex(xs)
        b = base.reindex(xs)
        med, lo, hi = (part["geomean_s"] / b * 100, part["min_s"] / b * 100, part["max_s"] / b * 100)
        pos = [j + (i - (len(cands) - 1) / 2) * w * 0.85 + 0.06 for j in range(len(xs))]
        if zoom:
            edge = (100 - zoom, 100 + zoom)
            _mark_clipped(ax, pos, med, edge)
            ends = pd.concat([lo.where((lo < edge[0]) & (med >= edge[0])),   # a cut bar's own
                              hi.where((hi > edge[1]) & (med <= edge[1]))])  # mark says it all
            _mark_clipped(ax, pos + pos, ends, edge, whisker=True)
            med, lo, hi = (v.clip(*edge) for v in (med, lo, hi))
        ax.bar(pos, med - 100, bottom=100, width=w * 0.9, color=colours[c], label=c)
        ax.errorbar(pos, med, yerr=[med - lo, hi - med], fmt="none", ecolor="0.2", capsize=2, lw=1)
    ax.axhline(100, color="0.2", lw=1)
    ax.set_xticks(range(len(xs)), [f"Q{v}" if x == "query" else str(v) for v in xs])
    ax.set_ylabel(f"% of {baseline}'s time")
    if zoom:
        ax.set_ylim(100 - zoom, 100 + zoom)
    else:
        ax.set_ylim(bottom=0)
    ax.set_title(textwrap.fill((title + ": " if title else "") + f"time (geometric mean) as % of {baseline} "
                               "(= 100 %), whiskers min–max; below 100 % is faster"
                               + (f"; zoomed to ±{zoom:g} % (▲ a bar beyond the edge, its value "
                                  "written; △ a whisker's end beyond it)" if zoom else ""), 90),
                 fontsize="medium")
    _legend_below(fig, ax)
    fig.dbstudies_alt = (f"Bar chart per query of each candidate's time (geometric mean) as a percentage of "
                         f"{baseline}'s, with min–max whiskers" + (f", zoomed to 100 ± {zoom:g} %" if zoom else "") + ".")
    return fig


def _log_x(ax, low: float, high: float) -> None:
    _log_axis(ax, "x", low, high)


def latency_vs_load(levels: pd.DataFrame, percentiles: Sequence[str] = ("p50", "p99"), *,
                    target: float | None = None, hue: str = "arm") -> plt.Figure:
    """Latency from the scheduled start against offered load, a panel per percentile (log
    axes): per arm the median over rounds with min–max whiskers; a hollow marker where some
    round did not sustain the load (the value is a lower bound); `target`: the p99 target
    as a dashed line on the p99 panel."""
    fig, axes = _panels(len(percentiles))
    arms = in_colour_order(levels[hue])
    colours = palette(arms)
    for ax, pct in zip(axes, percentiles):
        key = pct.replace(".", "_")
        for i, a in enumerate(arms):
            g = levels[levels[hue] == a].sort_values("rate")
            x = g["rate"] * (1 + DODGE * (i - (len(arms) - 1) / 2) / 4)
            med = g[f"{key}_median"]
            ax.errorbar(x, med, yerr=[med - g[f"{key}_min"], g[f"{key}_max"] - med], color=colours[a],
                        marker="o", ms=5, capsize=2, lw=1.2, label=a)
            lb = g["lower_bound"].astype(bool)
            if lb.any():
                ax.plot(x[lb], med[lb], "o", ms=9, mfc="white", mec=colours[a], mew=1.5, zorder=3,
                        label=f"{a}: not sustained (a lower bound)")
        low = min(levels[f"{k}_min"].min() for k in (p.replace(".", "_") for p in percentiles))
        high = max(levels[f"{k}_max"].max() for k in (p.replace(".", "_") for p in percentiles))
        if target and pct == "p99":
            ax.axhline(target, color="0.3", ls="--", lw=1, label=f"p99 target {target:g} ms")
            low, high = min(low, target), max(high, target)
        _log_y(ax, low, high)
        _log_x(ax, levels["rate"].min(), levels["rate"].max())
        ax.set_xlabel("offered load (transactions/s)")
        ax.set_ylabel(f"{pct} latency (ms)")
        ax.set_title(f"{pct} from the scheduled start", fontsize="medium")
    _legend_below(fig, axes[0])
    fig.dbstudies_alt = ("Latency percentiles (" + ", ".join(percentiles) + ") against offered "
                         "load on log axes, one line per configuration, median with min–max whiskers.")
    return fig


def achieved(levels: pd.DataFrame, *, hue: str = "arm") -> plt.Figure:
    """Achieved against offered transactions/s (log axes), per arm the median over rounds;
    the diagonal is a load kept up with, a point below it a load that was not."""
    fig, ax = plt.subplots(figsize=(PANEL_W, PANEL_H))
    arms = in_colour_order(levels[hue])
    colours = palette(arms)
    lo = min(levels["rate"].min(), levels["achieved_median"].min())
    hi = max(levels["rate"].max(), levels["achieved_median"].max())
    ax.plot([lo, hi], [lo, hi], color="0.6", lw=1, ls=":", label="achieved = offered")
    for i, a in enumerate(arms):
        g = levels[levels[hue] == a].sort_values("rate")
        x = g["rate"] * (1 + DODGE * (i - (len(arms) - 1) / 2) / 4)
        ax.plot(x, g["achieved_median"], marker="o", ms=5, color=colours[a], label=a)
    _log_x(ax, lo, hi)
    _log_y(ax, lo, hi)
    ax.set_xlabel("offered load (transactions/s)")
    ax.set_ylabel("achieved (transactions/s)")
    ax.set_title("achieved against offered load", fontsize="medium")
    _legend_below(fig, ax)
    fig.dbstudies_alt = "Achieved against offered transactions per second, log axes, one line per configuration."
    return fig


def per_second(seconds: pd.DataFrame, title: str, *, hue: str = "arm") -> plt.Figure:
    """Open-loop steps second by second: p99 from the scheduled start (log) and the queue of
    arrivals due but not yet started, one line per step, coloured by arm."""
    fig, (a, b) = _panels(2)
    arms = in_colour_order(seconds[hue])
    colours = palette(arms)
    for (arm, _), g in seconds.groupby([hue, "step"], sort=False):
        g = g.sort_values("second")
        a.plot(g["second"], g["latency_p99_ms"], color=colours[arm], marker=".", lw=1, alpha=0.8)
        b.plot(g["second"], g["queued"].fillna(0), color=colours[arm], marker=".", lw=1, alpha=0.8)
    for arm in arms:  # one legend entry per arm
        a.plot([], [], color=colours[arm], marker=".", label=arm)
    p99 = seconds["latency_p99_ms"].dropna()
    _log_y(a, p99.min(), p99.max())
    a.set_ylabel("p99 latency (ms)")
    a.set_title("p99 each second, from the scheduled start", fontsize="medium")
    b.set_ylabel("arrivals queued (due, not started)")
    b.set_title("the queue each second", fontsize="medium")
    top = max(float(seconds["queued"].fillna(0).max()), 1.0)
    b.set_ylim(-0.05 * top, top * 1.15)
    b.yaxis.set_major_locator(FixedLocator(_linear_ticks(top)))
    b.yaxis.set_major_formatter(FuncFormatter(plain))
    last = int(seconds["second"].max())
    for ax in (a, b):
        ax.set_xlabel("second of the step")
        ax.set_xlim(0.5, last + 0.5)
        ax.xaxis.set_major_locator(FixedLocator(_linear_ticks(last, start=1)))
        ax.xaxis.set_major_formatter(FuncFormatter(plain))
    fig.suptitle(title, fontsize="medium")
    _legend_below(fig, a)
    fig.dbstudies_alt = (f"{title}: p99 latency each second on a log scale, and the arrivals queued each "
                         "second, one line per step coloured by configuration.")
    return fig


def _linear_ticks(top: float, start: float = 0) -> list[float]:
    """At least three round ticks from `start` to `top`.

    >>> _linear_ticks(2, start=1), _linear_ticks(10), _linear_ticks(0.5)
    ([1.0, 1.5, 2.0], [0, 5, 10], [0.0, 0.2, 0.4])
    """
    span = max(top - start, 1e-9)
    for step in sorted(m * 10 ** e for e in range(-3, 9) for m in (1, 2, 5))[::-1]:
        ticks = [start + i * step for i in range(int(span // step) + 1)]
        if len(ticks) >= 3:
            return [round(t, 6) for t in ticks]
    return [start, start + span / 2, start + span]


def _mark_clipped(ax, xs: Sequence[float], values: pd.Series, edge: tuple[float, float], *,
                  whisker: bool = False) -> None:
    """A triangle at the axis edge for every value beyond `edge` (low, high): filled with
    the value written beside it for a bar, open for a whisker's end — the reader sees that
    it goes on (and how far)."""
    for x, v in zip(xs, values):
        if v != v or edge[0] <= v <= edge[1]:
            continue
        high = v > edge[1]
        at = edge[1] if high else edge[0]
        ax.plot([x], [at], marker="^" if high else "v", color="0.15", ms=5 if whisker else 7,
                mfc="none" if whisker else "0.15", clip_on=False, gid=CLIPPED, zorder=4)
        if not whisker:
            ax.annotate(f"{v:,.0f} %", (x, at), xytext=(0, -11 if high else 11),
                        textcoords="offset points", ha="center", va="center", fontsize="x-small")


def sweep(table: pd.DataFrame, metric: str, ylabel: str, *, x: str = "run") -> plt.Figure:
    """A sweep's runs side by side: per workload a panel, the runs (their swept values) along
    x in the sweep's order, `metric` (a median over each run's steps) on a log axis, one line
    per arm — per arm and client threads when a run measured several."""
    facets = list(dict.fromkeys(table["workload"]))
    fig, axes = _panels(len(facets))
    runs = list(dict.fromkeys(table[x]))
    many = table.groupby(x)["threads"].nunique().max() > 1
    series = table["arm"] + (", " + table["threads"].astype(str) + " threads" if many else "")
    colours = palette(list(dict.fromkeys(table["arm"])))
    styles = ["-", "--", ":", "-."]
    for ax, f in zip(axes, facets):
        part = table.assign(series=series)[table["workload"] == f]
        for k, (name, g) in enumerate(part.groupby("series", sort=False)):
            g = g.set_index(x).reindex(runs)
            arm = str(g["arm"].dropna().iloc[0])
            ax.plot(range(len(runs)), g[metric], marker="o", label=name, color=colours[arm],
                    ls=styles[k // max(1, len(colours)) % len(styles)] if many else "-")
        ax.set_xticks(range(len(runs)), [textwrap.fill(str(r), 16) for r in runs])
        ax.set_xlim(-0.5, len(runs) - 0.5)
        if part[metric].notna().any():
            _log_y(ax, part[metric].min(), part[metric].max())
        else:  # e.g. a latency level no run sustained: its p99 is no figure
            ax.text(0.5, 0.5, "no value in any run", transform=ax.transAxes, ha="center",
                    va="center", color="0.4")
            ax.set_yticks([])
        ax.set_title(str(f))
        ax.set_ylabel(ylabel)
    fig.suptitle(f"{ylabel} per run of the sweep: median over each run's measured steps", y=1.02)
    _legend_below(fig, axes[0])
    fig.dbstudies_alt = (f"{ylabel} of every run of the sweep ({', '.join(map(str, runs))}), one "
                         f"panel per workload, one line per arm: the median over the run's steps.")
    return fig


RATIO_TICKS = (0.25, 0.5, 0.67, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0)


def signed_pct(v: float, _: object = None) -> str:
    """A ratio as the difference it is: 1.25 → '+25 %', 0.8 → '−20 %', 1 → '0'.

    >>> signed_pct(1.25), signed_pct(0.8), signed_pct(1.0)
    ('+25 %', '−20 %', '0')
    """
    d = (v - 1) * 100
    return "0" if abs(d) < 0.5 else f"{d:+.0f} %".replace("-", "−")


def spaced_ratio_ticks(low: float, high: float, most: int = 10) -> list[float]:
    """The ratio ticks between `low` and `high` (1 always among them), thinned outward from 1
    so that neighbours are at least 1/`most` of the log range apart (labels never overlap).

    >>> spaced_ratio_ticks(0.2, 3.0)
    [0.25, 0.5, 0.67, 1, 1.5, 2.0, 3.0]
    >>> spaced_ratio_ticks(0.9, 1.12)
    [0.9, 1, 1.1]
    """
    gap = (math.log(high) - math.log(low)) / most
    kept = [1]
    for side in (sorted((t for t in RATIO_TICKS if low <= t < 1), reverse=True),
                 sorted(t for t in RATIO_TICKS if 1 < t <= high)):
        last = 1.0
        for t in side:
            if abs(math.log(t) - math.log(last)) >= gap:
                kept.append(t)
                last = t
    return sorted(kept)


def pair_ratios(pairs: pd.DataFrame, rel: pd.DataFrame, *, ylabel: str, threshold: float,
                facet: str = "workload", hue: str = "candidate", x: str = "threads",
                xlabel: str = "", xtick: Callable[[Any], str] = str) -> plt.Figure:
    """What a paired verdict is computed from: per cell, every round's ratio candidate /
    baseline (faint dots) and the ratio of geometric means with its 95 % CI (bold), on a log
    axis labelled as differences; the draw band ±`threshold` shaded. `pairs`: x, facet,
    hue and `ratio` per round; `rel`: the comparison table (ratio, ci_low, ci_high). x
    "threads" is a log2 axis; any other column is categorical (`xtick` names its values)."""
    facets = sorted(pairs[facet].unique())
    fig, axes = _panels(len(facets))
    if x == "threads":
        place = lambda v, i, n: dodged(v.astype(float), i, n)  # noqa: E731
    else:
        fig.set_size_inches(MAX_W, PANEL_H)
        where = {v: k for k, v in enumerate(sorted(pairs[x].unique()))}
        place = lambda v, i, n: v.map(where) + (i - (n - 1) / 2) * 0.25  # noqa: E731
    colours = palette(rel[hue].unique())
    hues = list(dict.fromkeys(rel[hue]))
    for ax, f in zip(axes, facets):
        ax.axhspan(1 - threshold, 1 + threshold, color="0.85", zorder=0, lw=0,
                   label=f"draw band (±{threshold:.0%})")
        ax.axhline(1, color="0.3", lw=1, zorder=1)
        for i, h in enumerate(hues):
            dots = pairs[(pairs[facet] == f) & (pairs[hue] == h)]
            ax.scatter(place(dots[x], i, len(hues)), dots["ratio"], s=9, alpha=0.35,
                       color=colours[h], lw=0, zorder=2)
            r = rel[(rel[facet] == f) & (rel[hue] == h)].dropna(subset=["ratio"]).sort_values(x)
            xr = place(r[x], i, len(hues))
            ax.errorbar(xr, r["ratio"], yerr=[r["ratio"] - r["ci_low"], r["ci_high"] - r["ratio"]],
                        fmt="o", capsize=4, ms=6, lw=2, color=colours[h], zorder=3,
                        label=f"{h}: ratio of geometric means, 95 % CI")
        if x == "threads":
            _log2_threads(ax, pairs["threads"])
        else:
            ax.set_xticks(range(len(where)), [xtick(v) for v in where])
            ax.set_xlim(-0.6, len(where) - 0.4)
            ax.set_xlabel(xlabel or x)
        ax.set_yscale("log")
        values = pd.concat([pairs.loc[pairs[facet] == f, "ratio"], rel["ci_low"], rel["ci_high"]]).dropna()
        low, high = min(values.min(), 1 - threshold) / 1.05, max(values.max(), 1 + threshold) * 1.05
        ax.set_ylim(low, high)
        ax.yaxis.set_major_locator(FixedLocator(spaced_ratio_ticks(low, high)))
        ax.yaxis.set_major_formatter(FuncFormatter(signed_pct))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_title(str(f))
        ax.set_ylabel(f"{ylabel}: candidate vs baseline")
    fig.suptitle(f"{ylabel}, paired: each round's ratio (dots) and the verdict's estimate with its CI", y=1.02)
    _legend_below(fig, axes[0])
    fig.dbstudies_alt = (f"{ylabel} of {', '.join(hues)} relative to the baseline against "
                         f"{xlabel or 'client threads'}, one panel per {facet}: each round's pair ratio as a faint dot, "
                         "the ratio of geometric means with its 95 % CI in bold, the draw band "
                         f"±{threshold:.0%} shaded, on a log axis labelled in %.")
    return fig


UNIT = re.compile(r"\(.+\)|%|\bper\b|\bTPS\b|\bQPS\b|\bseconds?\b|\bms\b|\bthreads\b|\bpages\b|\bbytes\b|"
                  r"\b[KMG]i?B\b|\bratio\b|\bvs\b", re.I)
MIN_TICKS = 3


def _artist_colour(artist: Any) -> str | None:
    """The hex colour of a line, marker collection or patch (its first, if several)."""
    from matplotlib.colors import to_hex
    for get in ("get_color", "get_facecolor"):
        if hasattr(artist, get):
            c = getattr(artist, get)()
            if getattr(c, "ndim", 0) == 2:
                c = c[0] if len(c) else None
            try:
                return to_hex(c) if c is not None else None
            except (ValueError, TypeError):
                return None
    return None


def _numeric(label: str) -> bool:
    """Whether a tick label is a number ('2,000', '−20 %', '0.5'), not a category."""
    try:
        float(re.sub(r"[,%+\s]", "", label).replace("−", "-"))
        return True
    except ValueError:
        return False


CLIPPED = "dbstudies-clipped"  # gid of the marks drawn where a value lies beyond the axis


def _tick_texts(ax: Any, axis: str) -> list[str]:
    """The tick labels an axis shows within its limits."""
    lo, hi = sorted(getattr(ax, f"get_{axis}lim")())
    at = 0 if axis == "x" else 1
    return [t.get_text() for t in getattr(ax, f"get_{axis}ticklabels")()
            if t.get_visible() and t.get_text().strip() and lo <= t.get_position()[at] <= hi]


def properties(fig: plt.Figure) -> dict[str, Any]:
    """What a reader needs of a figure, read from matplotlib's objects once it is drawn:
    per data panel its labelled ticks, axis labels, whether it has a legend, and the data
    points outside (or on the edge of) its limits; the colour of each labelled series."""
    fig.canvas.draw()
    legends = bool(fig.legends)
    panels, colours = [], {}
    for ax in fig.axes:
        if not ax.has_data() or not ax.get_visible():
            continue
        legends = legends or ax.get_legend() is not None
        ticks, labels = {}, {}
        for axis in ("x", "y"):  # a panel sharing an axis shows its neighbour's ticks and label
            siblings = getattr(ax, f"get_shared_{axis}_axes")().get_siblings(ax)
            for other in sorted(siblings, key=lambda o: o is not ax):
                ticks[axis] = _tick_texts(other, axis)
                labels[axis] = getattr(other, f"get_{axis}label")()
                if ticks[axis] and labels[axis]:
                    break
        outside = edge = 0
        y0, y1 = sorted(ax.get_ylim())
        log = ax.get_yscale() == "log"
        span = (math.log(y1) - math.log(y0)) if log and y0 > 0 else y1 - y0
        for line in ax.get_lines():
            if line.get_marker() in (None, "", "None") or not line.get_visible() \
                    or line.get_gid() == CLIPPED:
                continue
            ys = [float(v) for v in line.get_ydata() if v == v]
            outside += sum(1 for v in ys if v < y0 or v > y1)
            near = [min(abs(math.log(v) - math.log(y0)), abs(math.log(y1) - math.log(v)))
                    if log and v > 0 else min(v - y0, y1 - v) for v in ys if y0 <= v <= y1]
            if line.get_marker() not in ("_", "|"):  # a whisker's cap at the frame hides nothing
                edge += sum(1 for d in near if d < 0.01 * span)
        series = [h for h in ax.get_lines() + list(ax.collections) + list(ax.patches)
                  if not str(h.get_label()).startswith("_") and h.get_label()]
        for h in series:
            colours.setdefault(str(h.get_label()), _artist_colour(h))
        panels.append({"title": ax.get_title(), "xlabel": labels["x"], "ylabel": labels["y"],
                       "xticks": ticks["x"], "yticks": ticks["y"], "outside": outside, "edge": edge,
                       "series": len({str(h.get_label()) for h in series})})
    for leg in fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]:
        for handle, text in zip(leg.legend_handles, leg.get_texts()):
            if handle is not None and _artist_colour(handle):
                colours.setdefault(text.get_text(), _artist_colour(handle))
    return {"panels": panels, "legend": legends, "colours": colours}


def problems(props: dict[str, Any]) -> list[str]:
    """What makes a figure hard to read (from `properties`): a numeric axis with fewer than
    three labelled ticks or without a label naming a unit (a categorical one: without a
    labelled tick), several series without a legend, data points outside the axes or
    markers on their frame (a value beyond the axis is drawn as a `CLIPPED` mark instead)."""
    out = []
    for i, p in enumerate(props["panels"]):
        name = p["title"] or f"panel {i + 1}"
        for axis in ("x", "y"):
            ticks, label = p[f"{axis}ticks"], p[f"{axis}label"]
            if ticks and not all(_numeric(t) for t in ticks):
                continue  # categories (arms, queries): each is its own label
            if len(ticks) < MIN_TICKS:
                out.append(f"{name}: {len(ticks)} labelled {axis} tick(s)")
            if not UNIT.search(label or ""):
                out.append(f"{name}: {axis} label {label!r} names no unit")
        if p["outside"]:
            out.append(f"{name}: {p['outside']} data point(s) outside the axes, unmarked")
        if p.get("edge"):
            out.append(f"{name}: {p['edge']} marker(s) on the frame, cut in half")
        if p["series"] > 1 and not props["legend"]:
            out.append(f"{name}: {p['series']} series and no legend")
    return out


def save(fig: plt.Figure, folder: Path, name: str) -> list[Path]:
    """Write `fig` as <name>.png and .svg in `folder` (a run's `figures`), and <name>.json:
    its `properties` and `problems` (the suite checks every smoke run's)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = [folder / f"{name}.{ext}" for ext in ("png", "svg")]
    for f in out:
        fig.savefig(f, dpi=120, bbox_inches="tight")
    props = properties(fig)
    (folder / f"{name}.json").write_text(json.dumps({**props, "problems": problems(props)}, indent=1))
    return out


def publish(fig: plt.Figure, run, name: str, alt: str | None = None) -> None:
    """Save `fig` into the run, show it once in the notebook with alt text, close it."""
    from IPython.display import display
    save(fig, run.figures, name)
    text = alt or getattr(fig, "dbstudies_alt", None) or name.replace("_", " ")
    display(fig, metadata={"image/png": {"alt": text}})
    plt.close(fig)
