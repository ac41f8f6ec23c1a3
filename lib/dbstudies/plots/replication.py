"""A replication at a glance: each cell's effect in the original run against its effect in
the replication, both with their intervals, on log-ratio axes labelled as differences. A cell
that replicated lies near the diagonal (equal effects) away from the cross at no difference;
one that did not lies off the diagonal by more than its bars."""
from __future__ import annotations

import pandas as pd
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from .axes import DRAW_BAND, plt, signed_pct, spaced_ratio_ticks

WORD_COLOURS = {"replicated": "#2a7f3f", "consistent, not decisive": "#8a8a8a", "not replicated": "#c0392b"}
WIDE = 10.0  # an interval whose ends are more than 10× apart is drawn to the frame


def _bounded(low: pd.Series, high: pd.Series) -> pd.Series:
    return (low > 0) & (high <= low * WIDE)


def effects(tables: dict[str, pd.DataFrame], threshold: float) -> plt.Figure:
    """One panel per table (`analysis.replication.replication`): x the original's ratio, y
    the replication's, 95 % intervals both ways, coloured by the replication's word; the
    diagonal (the same effect) and the draw band ±`threshold` on both axes shaded."""
    names = list(tables)
    cols = min(len(names), 2)
    rows = -(-len(names) // cols)
    fig, grid = plt.subplots(rows, cols, figsize=(4.6 * cols + 0.6, 4.6 * rows + 0.6), squeeze=False)
    axes = list(grid.flat)
    for extra in axes[len(names):]:
        extra.set_visible(False)
    seen: dict[str, object] = {}
    for ax, name in zip(axes, names):
        t = tables[name]
        ok = t[_bounded(t["ci_low_original"], t["ci_high_original"]) & _bounded(t["ci_low_replica"], t["ci_high_replica"])]
        values = pd.concat([ok["ci_low_original"], ok["ci_high_original"], ok["ci_low_replica"], ok["ci_high_replica"],
                            t["ratio_original"], t["ratio_replica"]]).dropna()  # every point; bounded intervals
        low = min(float(values.min()) if len(values) else 1.0, 1 - threshold, 0.9) / 1.05
        high = max(float(values.max()) if len(values) else 1.0, 1 + threshold, 1.1) * 1.05
        ax.axvspan(1 - threshold, 1 + threshold, color=DRAW_BAND, lw=0, zorder=0)
        ax.axhspan(1 - threshold, 1 + threshold, color=DRAW_BAND, lw=0, zorder=0)
        line, = ax.plot([low, high], [low, high], color="0.35", lw=1, ls="--", zorder=1)
        seen.setdefault("the same effect in both runs", line)
        for word, colour in WORD_COLOURS.items():
            w = t[t["word"] == word]
            if w.empty:
                continue
            x, y = w["ratio_original"], w["ratio_replica"]
            xlo, xhi = w["ci_low_original"].clip(lower=low), w["ci_high_original"].clip(upper=high)
            ylo, yhi = w["ci_low_replica"].clip(lower=low), w["ci_high_replica"].clip(upper=high)
            bars = ax.errorbar(x, y, xerr=[(x - xlo).clip(lower=0), (xhi - x).clip(lower=0)],
                               yerr=[(y - ylo).clip(lower=0), (yhi - y).clip(lower=0)], fmt="o", ms=6, lw=1.4,
                               capsize=3, color=colour, zorder=3)
            seen.setdefault(word, bars)
        ax.set_xscale("log")
        ax.set_yscale("log")
        for axis in (ax.xaxis, ax.yaxis):  # after the log scale, which sets locators of its own
            axis.set_major_locator(FixedLocator(spaced_ratio_ticks(low, high, most=5)))
            axis.set_major_formatter(FuncFormatter(signed_pct))
            axis.set_minor_locator(NullLocator())
        ax.set_xlim(low, high)
        ax.set_ylim(low, high)
        ax.set_aspect("equal", adjustable="box")
        counts = t["word"].value_counts()
        ax.set_title(f"{t.attrs.get('words', name)}: " + ", ".join(f"{counts[w]} {w}" for w in WORD_COLOURS if w in counts),
                     fontsize="small")
        ax.set_xlabel("effect in the original run (95 % CI)")
        ax.set_ylabel("effect in the replication (95 % CI)")
    fig.tight_layout()
    order = ["the same effect in both runs", *[w for w in WORD_COLOURS if w in seen]]
    fig.legend([seen[k] for k in order], order, loc="upper center", bbox_to_anchor=(0.5, 0.0),
               ncol=len(order), fontsize="small", frameon=False)
    return fig

