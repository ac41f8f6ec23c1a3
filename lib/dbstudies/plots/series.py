"""Figures of time series: per-second throughput and latency with stalls, bands over
repeats, distributions of per-second values, an open-loop step second by second."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.ticker import FixedLocator, FuncFormatter

from .axes import (
    MAX_W,
    PANEL_H,
    PANEL_W,
    _legend_below,
    _linear_ticks,
    _log_y,
    _panels,
    in_colour_order,
    palette,
    plain,
)


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
