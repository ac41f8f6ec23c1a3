"""Figures of latency: against offered load, the load achieved, and the shift function (a
candidate's latency distribution against the baseline's, percentile by percentile)."""

from __future__ import annotations

import math
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

from .axes import (
    CLIPPED,
    DODGE,
    DRAW_BAND,
    MAX_W,
    PANEL_H,
    PANEL_W,
    _legend_below,
    _log_x,
    _log_y,
    _panels,
    in_colour_order,
    palette,
    signed_pct,
    spaced_ratio_ticks,
)


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


EDGE = 1.06      # the shift figure's frame lies this factor beyond its clip
SHIFT_CLIP = 4.0  # the shift figure's axis ends at ×4 and ÷4; a point beyond is a triangle at the edge


def _tail_x(q: float) -> float:
    """Where percentile q sits on the shift figure's x axis: −log10(1 − q), so that p90, p99
    and p99.9 are evenly spaced (the tail gets the room).

    >>> [round(_tail_x(q), 2) for q in (50, 90, 99, 99.9)]
    [0.3, 1.0, 2.0, 3.0]
    """
    return -math.log10(1 - q / 100)


def shift(d: pd.DataFrame, *, marked: Sequence[float] = (95, 99), threshold: float = 0.0,
          hue: str = "candidate") -> plt.Figure:
    """The shift function per cell (a panel per workload × client threads): each
    candidate's ratio to the baseline at each percentile (`tails.shift`: ratio,
    low, high), its round-resampled band shaded, on a log axis labelled as differences; the
    x axis spaces the tail (p90, p99, p99.9 evenly); the percentiles with a verdict table
    (`marked`) drawn larger; the draw band ±`threshold` in grey."""
    workloads = list(dict.fromkeys(d["workload"]))
    threads = sorted(d["threads"].unique())
    rows, cols = len(workloads), len(threads)
    fig, axes = plt.subplots(rows, cols, figsize=(min(MAX_W, 3.3 * cols), 2.9 * rows + 0.6),
                             squeeze=False, sharey=True)
    hues = list(dict.fromkeys(d[hue]))
    colours = palette(hues)
    qs = sorted(d["q"].unique())
    finite = pd.concat([d["ratio"], d["low"], d["high"]]).replace([np.inf, -np.inf], np.nan).dropna()
    finite = finite[finite > 0]
    low = max(min(finite.min(), 1 - threshold) / 1.1, 1 / SHIFT_CLIP) if len(finite) else 0.5
    high = min(max(finite.max(), 1 + threshold) * 1.1, SHIFT_CLIP) if len(finite) else 2.0
    for r, w in enumerate(workloads):
        for c, t in enumerate(threads):
            ax = axes[r][c]
            if threshold:
                ax.axhspan(1 - threshold, 1 + threshold, color=DRAW_BAND, zorder=0, lw=0,
                           label=f"draw band (±{threshold * 100:.2g} %)")
            ax.axhline(1, color="0.3", lw=1, zorder=1)
            for h in hues:
                g = d[(d["workload"] == w) & (d["threads"] == t) & (d[hue] == h)].sort_values("q")
                if g.empty:
                    continue
                x = g["q"].map(_tail_x)
                ax.fill_between(x, g["low"].clip(low, high), g["high"].clip(low, high), color=colours[h],
                                alpha=0.18, lw=0, zorder=2)
                ax.plot(x, g["ratio"].clip(low, high), lw=1.4, color=colours[h], zorder=3,
                        label=f"{h} / baseline (band: 95 % over resampled rounds)")
                inside = g[(g["ratio"] >= low) & (g["ratio"] <= high)]
                ax.plot(inside["q"].map(_tail_x), inside["ratio"], "o", ms=3, color=colours[h], zorder=3)
                big = inside[inside["q"].isin(marked)]
                ax.plot(big["q"].map(_tail_x), big["ratio"], "o", ms=7, mfc="white",
                        mec=colours[h], mew=1.6, zorder=4)
                out = g[(g["ratio"] > high) | (g["ratio"] < low)]
                for above, o in ((True, out[out["ratio"] > high]), (False, out[out["ratio"] < low])):
                    if len(o):
                        ax.plot(o["q"].map(_tail_x), [high if above else low] * len(o), ls="none", ms=7,
                                color="0.15", marker="^" if above else "v", clip_on=False, gid=CLIPPED,
                                zorder=5)
            ax.set_yscale("log")
            ax.set_ylim(low / EDGE, high * EDGE)  # a point at the clip (or a triangle) stays inside the frame
            ax.yaxis.set_major_locator(FixedLocator(spaced_ratio_ticks(low, high, most=8)))
            ax.yaxis.set_major_formatter(FuncFormatter(signed_pct))
            ax.yaxis.set_minor_locator(NullLocator())
            ax.yaxis.set_minor_formatter(NullFormatter())
            shown = [q for q in qs if q in (50, 90, 99, 99.9)] or qs
            ax.set_xticks([_tail_x(q) for q in shown], [f"p{q:g}" for q in shown], fontsize="small")
            ax.set_xlim(_tail_x(qs[0]) - 0.15, _tail_x(qs[-1]) + 0.15)
            ax.set_title(f"{w}, {t} thread{'s' if t != 1 else ''}", fontsize="small")
            if c == 0:
                ax.set_ylabel("latency vs baseline")
    fig.suptitle("Where the latency distributions differ: each percentile's ratio to the baseline\n"
                 f"(hollow: {', '.join(f'p{q:g}' for q in marked)}, the verdicts' percentiles; "
                 f"a triangle: beyond the axis, ×{SHIFT_CLIP:g} or more)", y=1.02, fontsize="medium")
    _legend_below(fig, axes[0][0])
    fig.dbstudies_alt = (f"Shift function, one panel per workload and client thread count: for "
                         f"{', '.join(hues)}, the ratio of each latency percentile (p{qs[0]:g} to "
                         f"p{qs[-1]:g}) to the baseline's, with a band from resampling whole rounds, "
                         "on a log axis labelled in %.")
    return fig
