"""The style every figure shares: one style, one colour per configuration across all the
figures of a report, series that share an x dodged apart, log axes with readable ticks
(1, 2, 5 × 10ⁿ as plain numbers), and alt text on every figure in the report.

    fig = plots.scaling(summary, "qps", "queries per second")
    plots.publish(fig, run, "qps_vs_threads")     # PNG + SVG in the run, shown with alt text
"""
from __future__ import annotations

import math
from typing import Sequence

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

sns.set_theme(style="whitegrid", context="notebook")
PANEL_W, PANEL_H, MAX_W = 6.4, 4.2, 13.5   # inches; a report page is about 13.5 in wide
DODGE = 0.07                                 # log2 units between series sharing an x
PROCESS_STYLE = {"server": "-", "client": "--"}
DRAW_BAND = "0.85"                           # the draw band's grey, the same in every figure


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


CLIPPED = "dbstudies-clipped"  # gid of the marks drawn where a value lies beyond the axis
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



def _log_x(ax, low: float, high: float) -> None:
    _log_axis(ax, "x", low, high)


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
