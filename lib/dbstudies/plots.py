"""Figures shared by the notebooks (matplotlib + seaborn styling)."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.ticker import FuncFormatter, NullFormatter, NullLocator

sns.set_theme(style="whitegrid", context="notebook")


def _log2_threads(ax, threads) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(set(threads)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())


def scaling(summary: pd.DataFrame, metric: str, ylabel: str, *, hue: str = "arm",
            facet: str = "workload", logy: bool = True) -> plt.Figure:
    """Median of `metric` with min/max whiskers vs client threads, one panel per `facet`.

    `summary` has columns threads, hue, facet and {metric}_median/_min/_max."""
    facets = sorted(summary[facet].unique())
    fig, axes = plt.subplots(1, len(facets), figsize=(4.6 * len(facets), 3.8), squeeze=False)
    palette = dict(zip(sorted(summary[hue].unique()), sns.color_palette("deep")))
    for ax, f in zip(axes[0], facets):
        for h, g in summary[summary[facet] == f].groupby(hue):
            g = g.sort_values("threads")
            med = g[f"{metric}_median"]
            ax.errorbar(g["threads"], med, yerr=[med - g[f"{metric}_min"], g[f"{metric}_max"] - med],
                        marker="o", capsize=3, label=h, color=palette[h])
        _log2_threads(ax, summary["threads"])
        if logy:
            ax.set_yscale("log")
        ax.set_title(f)
        ax.set_xlabel("client threads")
        ax.set_ylabel(ylabel)
    axes[0][0].legend(title=hue, fontsize="small")
    fig.suptitle(f"{ylabel}: median, whiskers min–max", y=1.02)
    fig.tight_layout()
    return fig


def cpu(summary: pd.DataFrame, *, facet: str = "workload", hue: str = "arm") -> plt.Figure:
    """Median CPU use of server and sysbench client (% of one core) vs threads."""
    long = summary.melt(id_vars=[facet, hue, "threads"],
                        value_vars=["cpu_server_pct", "cpu_client_pct"],
                        var_name="process", value_name="cpu_pct")
    long["process"] = long["process"].str.replace("cpu_", "").str.replace("_pct", "")
    g = sns.relplot(data=long, x="threads", y="cpu_pct", hue=hue, style="process", col=facet,
                    kind="line", marker="o", height=3.6, aspect=1.2)
    for ax in g.axes.flat:
        _log2_threads(ax, summary["threads"])
        ax.set_xlabel("client threads")
    g.set_ylabels("CPU, % of one core")
    return g.figure


def save(fig: plt.Figure, run, name: str) -> None:
    """Write `fig` as <run>/figures/<name>.png and .svg."""
    folder = Path(run.path) / "figures"
    folder.mkdir(parents=True, exist_ok=True)
    for ext in ("png", "svg"):
        fig.savefig(folder / f"{name}.{ext}", dpi=120, bbox_inches="tight")
