"""Figures of latency against offered load, and of the load achieved."""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import pandas as pd

from .axes import (
    DODGE,
    PANEL_H,
    PANEL_W,
    _legend_below,
    _log_x,
    _log_y,
    _panels,
    in_colour_order,
    palette,
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
