"""Figures of a measure against client threads (scaling, CPU), of a sweep's runs, and of a
paired design's ratios per round."""

from __future__ import annotations

import textwrap
from typing import Any, Callable

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

from .axes import (
    DRAW_BAND,
    MAX_W,
    PANEL_H,
    PROCESS_STYLE,
    _legend_below,
    _log2_threads,
    _log_y,
    _panels,
    dodged,
    palette,
    signed_pct,
    spaced_ratio_ticks,
)


def gaps(threads: Any) -> bool:
    """Whether a grid of client thread counts skips counts a reader would read off a line
    between two measured ones: any neighbours more than ×2 apart.

    >>> gaps([1, 16, 64, 256]), gaps([1, 2, 4, 8]), gaps([4])
    (True, False, False)
    """
    t = sorted(set(int(x) for x in threads))
    return any(b > 2 * a for a, b in zip(t, t[1:]))


def connect(ax: Any, x: Any, y: Any, threads: Any, *, color: str, style: str = "-") -> None:
    """Lines between measured thread counts: as `style` where the next count is at most ×2
    away; across counts that were not measured a solid line turns dotted and any other keeps
    its pattern, thin — so a dashed line never reads as a dotted one."""
    xs, ys, ts = list(x), list(y), [int(t) for t in threads]
    for i in range(len(xs) - 1):
        skipped = ts[i + 1] > 2 * ts[i]
        ls = (":" if style == "-" else style) if skipped else style
        ax.plot(xs[i:i + 2], ys[i:i + 2], linestyle=ls, linewidth=1.0 if skipped else 1.6, color=color)


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
            x = dodged(g["threads"], i, len(colours))
            ax.errorbar(x, med, yerr=[med - g[f"{metric}_min"], g[f"{metric}_max"] - med],
                        marker="o", capsize=3, linestyle="none", label=h, color=colours[h])
            connect(ax, x, med, g["threads"], color=colours[h])
        _log2_threads(ax, summary["threads"])
        if logy:
            _log_y(ax, part[f"{metric}_min"].min(), part[f"{metric}_max"].max())
        ax.set_title(f)
        ax.set_ylabel(ylabel)
    skips = gaps(summary["threads"])
    fig.suptitle(f"{ylabel}{' (' + note + ')' if note else ''}: median, whiskers min–max"
                 + ("; dotted: thread counts in between not measured" if skips else ""), y=1.02)
    _legend_below(fig, axes[0])
    fig.dbstudies_alt = (f"{ylabel} against client threads ({', '.join(map(str, sorted(summary['threads'].unique())))}), "
                         f"one panel per {facet} ({', '.join(facets)}), one line per {hue} "
                         f"({', '.join(colours)}): median over repeats with min–max whiskers.")
    return fig


def cpu(summary: pd.DataFrame, *, facet: str = "workload", hue: str = "arm") -> plt.Figure:
    """Median CPU use of server (filled dots, solid) and sysbench client (open squares,
    dashed), % of one core, vs threads; the same colours per configuration as the other figures."""
    facets = sorted(summary[facet].unique())
    fig, axes = _panels(len(facets))
    colours = palette(summary[hue])
    for ax, f in zip(axes, facets):
        for h, g in summary[summary[facet] == f].groupby(hue):
            g = g.sort_values("threads")
            for process, style in PROCESS_STYLE.items():
                ax.plot(g["threads"], g[f"cpu_{process}_pct"], marker="o" if process == "server" else "s",
                        linestyle="none", color=colours[h], label=f"{h}, {process}",
                        markerfacecolor=colours[h] if process == "server" else "none")
                connect(ax, g["threads"], g[f"cpu_{process}_pct"], g["threads"], color=colours[h],
                        style=style)
        _log2_threads(ax, summary["threads"])
        ax.set_ylim(bottom=0)
        ax.set_title(f)
        ax.set_ylabel("CPU, % of one core")
    fig.suptitle("CPU use: server (filled dots, solid line) and sysbench (open squares, dashed), median"
                 + ("; across thread counts not measured: dotted and thin dashed" if gaps(summary["threads"]) else ""),
                 y=1.02)
    _legend_below(fig, axes[0])
    fig.dbstudies_alt = (f"Median CPU use in % of one core of the server and of sysbench "
                         f"against client threads, one panel per {facet}, one colour per {hue}.")
    return fig


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


UNBOUNDED = 10.0  # an interval whose ends are further apart bounds nothing (analysis.WIDE)


def ratios_per_round(pairs: pd.DataFrame, rel: pd.DataFrame, *, ylabel: str, threshold: float,
                facet: str = "workload", hue: str = "candidate", x: str = "threads",
                xlabel: str = "", xtick: Callable[[Any], str] = str) -> plt.Figure:
    """What a paired verdict is computed from: per cell, every round's ratio candidate /
    baseline (faint dots) and the ratio of geometric means with its interval (bold: the
    Holm-adjusted one where `rel` has it, as the tables show it, else the 95 % CI), on a log
    axis labelled as differences; the draw band ±`threshold` shaded. `pairs`: x, facet,
    hue and `ratio` per round; `rel`: the comparison table (ratio, ci_low, ci_high). x
    "threads" is a log2 axis; any other column is categorical (`xtick` names its values)."""
    facets = sorted(pairs[facet].unique())
    if "holm_ci_low" in rel and rel["holm_ci_low"].notna().any():
        rel = rel.assign(ci_low=rel["holm_ci_low"].fillna(rel["ci_low"]), ci_high=rel["holm_ci_high"].fillna(rel["ci_high"]))
        said = "Holm-adjusted 95 % interval"
    else:
        said = "95 % CI"
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
        ax.axhspan(1 - threshold, 1 + threshold, color=DRAW_BAND, zorder=0, lw=0,
                   label=f"draw band (±{threshold * 100:.2g} %)")
        ax.axhline(1, color="0.3", lw=1, zorder=1)
        # the y-range: the rounds' ratios and the intervals that bound something (ends at most
        # ×10 apart, as the tables say); an unbounded one (2 pairs: 1e-6 … 1e8) runs to the frame
        mine = rel[rel[facet] == f]
        bounded = mine[(mine["ci_low"] > 0) & (mine["ci_high"] <= mine["ci_low"] * UNBOUNDED)]
        values = pd.concat([pairs.loc[pairs[facet] == f, "ratio"], mine["ratio"], bounded["ci_low"],
                            bounded["ci_high"]]).dropna()
        # at least the ticks 0.9 (−10 %), 1 and 1.1 (+10 %): three labels however tight the rounds
        low, high = min(values.min(), 1 - threshold, 0.9) / 1.05, max(values.max(), 1 + threshold, 1.1) * 1.05
        for i, h in enumerate(hues):
            dots = pairs[(pairs[facet] == f) & (pairs[hue] == h)]
            ax.scatter(place(dots[x], i, len(hues)), dots["ratio"], s=9, alpha=0.35,
                       color=colours[h], lw=0, zorder=2)
            r = rel[(rel[facet] == f) & (rel[hue] == h)].dropna(subset=["ratio"]).sort_values(x)
            xr = place(r[x], i, len(hues))
            # an interval cut at the frame ends a hair inside it: ratio ± (its distance to the
            # frame) in floating point can land beyond the limit, a cap "outside the axes"
            lo, hi = r["ci_low"].clip(lower=low * (1 + 1e-9)), r["ci_high"].clip(upper=high / (1 + 1e-9))
            ax.errorbar(xr, r["ratio"], yerr=[r["ratio"] - lo, hi - r["ratio"]],
                        fmt="o", capsize=4, ms=6, lw=2, color=colours[h], zorder=3,
                        label=f"{h}: ratio of geometric means, {said}")
        if x == "threads":
            _log2_threads(ax, pairs["threads"])
        else:
            ax.set_xticks(range(len(where)), [xtick(v) for v in where])
            ax.set_xlim(-0.6, len(where) - 0.4)
            ax.set_xlabel(xlabel or x)
        ax.set_yscale("log")
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
                         f"the ratio of geometric means with its {said} in bold, the draw band "
                         f"±{threshold * 100:.2g} % shaded, on a log axis labelled in %.")
    return fig
