"""Figures shared by the notebooks: one style, one colour per configuration across all the
figures of a report, series that share an x dodged apart, log axes with readable ticks
(1, 2, 5 × 10ⁿ as plain numbers), and alt text on every figure in the report.

    fig = plots.scaling(summary, "qps", "queries per second")
    plots.publish(fig, run, "qps_vs_threads")     # PNG + SVG in the run, shown with alt text
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

sns.set_theme(style="whitegrid", context="notebook")
PANEL_W, PANEL_H, MAX_W = 6.4, 4.2, 13.5   # inches; a report page is about 13.5 in wide
DODGE = 0.07                                 # log2 units between series sharing an x
PROCESS_STYLE = {"server": "-", "client": "--"}


def palette(labels: Sequence[str]) -> dict[str, tuple]:
    """One colour per configuration, the same in every figure given the same labels."""
    return dict(zip(sorted(set(labels)), sns.color_palette("deep")))


def plain(v: float, _: object = None) -> str:
    """A tick label as a plain number: 2,000 · 50 · 0.2.

    >>> plain(20000), plain(5), plain(0.2)
    ('20,000', '5', '0.2')
    """
    return f"{v:,.0f}" if v >= 1 else f"{v:g}"


def ticks_125(low: float, high: float) -> list[float]:
    """1, 2, 5 × 10ⁿ from just below `low` to just above `high`.

    >>> ticks_125(3, 120)
    [2, 5, 10, 20, 50, 100, 200]
    """
    out, e = [], math.floor(math.log10(low)) if low > 0 else 0
    while True:
        for m in (1, 2, 5):
            v = m * 10 ** e
            if v > high:
                return out + [v] if out else [v]
            if v * 2.5 >= low:
                out.append(v if v < 1 else int(v))
        e += 1


def _log_y(ax, low: float, high: float) -> None:
    ax.set_yscale("log")
    if not (low > 0 and math.isfinite(low) and math.isfinite(high)):
        return
    ticks = ticks_125(low, high)
    if len(ticks) > 9:  # many decades: powers of ten only
        ticks = [t for t in ticks if round(t / 10 ** math.floor(math.log10(t))) == 1]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_major_formatter(FuncFormatter(plain))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_minor_formatter(NullFormatter())


def _log2_threads(ax, threads) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(set(threads)))
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
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0),
               ncol=min(len(labels), 3), fontsize="small", frameon=False)


def dodged(x: pd.Series, i: int, n: int) -> pd.Series:
    """x shifted for series i of n on a log2 axis, so whiskers do not hide each other.

    >>> dodged(pd.Series([4.0]), 0, 2).round(3).tolist(), dodged(pd.Series([4.0]), 1, 2).round(3).tolist()
    ([3.904], [4.098])
    """
    return x * 2 ** ((i - (n - 1) / 2) * DODGE)


def scaling(summary: pd.DataFrame, metric: str, ylabel: str, *, hue: str = "arm",
            facet: str = "workload", logy: bool = True) -> plt.Figure:
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
    fig.suptitle(f"{ylabel}: median, whiskers min–max", y=1.02)
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


def save(fig: plt.Figure, run, name: str) -> list[Path]:
    """Write `fig` as <run>/figures/<name>.png and .svg."""
    folder = Path(run.path) / "figures"
    folder.mkdir(parents=True, exist_ok=True)
    out = [folder / f"{name}.{ext}" for ext in ("png", "svg")]
    for f in out:
        fig.savefig(f, dpi=120, bbox_inches="tight")
    return out


def publish(fig: plt.Figure, run, name: str, alt: str | None = None) -> None:
    """Save `fig` into the run, show it once in the notebook with alt text, close it."""
    from IPython.display import display
    save(fig, run, name)
    text = alt or getattr(fig, "dbstudies_alt", None) or name.replace("_", " ")
    display(fig, metadata={"image/png": {"alt": text}})
    plt.close(fig)
