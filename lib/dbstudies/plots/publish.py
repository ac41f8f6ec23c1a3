"""A figure's checked properties (units, ticks, legend, clipping), saved into a run's figures
and shown once in the notebook with alt text."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from .axes import CLIPPED

UNIT = re.compile(r"\(.+\)|%|\bper\b|\bTPS\b|\bQPS\b|\bseconds?\b|\bms\b|\bthreads\b|\bpages\b|\bbytes\b|"
                  r"\b[KMG]i?B\b|\bratio\b|\bvs\b", re.I)
MIN_TICKS = 3


def _artist_colour(artist: Any) -> str | None:
    """The hex colour of a line, marker collection or patch (its first, if several)."""
    from matplotlib.colors import to_hex
    from matplotlib.container import Container
    if isinstance(artist, Container):  # an error bar's: its data line's colour
        artist = next((a for a in artist if a is not None and not isinstance(a, tuple)), None)
        if artist is None:
            return None
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




def _tick_texts(ax: Any, axis: str) -> list[str]:
    """The tick labels an axis shows within its limits."""
    lo, hi = sorted(getattr(ax, f"get_{axis}lim")())
    at = 0 if axis == "x" else 1
    return [t.get_text() for t in getattr(ax, f"get_{axis}ticklabels")()
            if t.get_visible() and t.get_text().strip() and lo <= t.get_position()[at] <= hi]


def _off_limits(ax: Any) -> tuple[int, int]:
    """A panel's data points (of its marked, visible, unclipped lines) outside its y limits,
    and those on its frame (within 1 % of its span; a whisker's cap there hides nothing)."""
    outside = edge = 0
    y0, y1 = sorted(ax.get_ylim())
    log = ax.get_yscale() == "log"
    span = (math.log(y1) - math.log(y0)) if log and y0 > 0 else y1 - y0
    for line in ax.get_lines():
        if line.get_marker() in (None, "", "None") or not line.get_visible() or line.get_gid() == CLIPPED:
            continue
        ys = [float(v) for v in line.get_ydata() if v == v]
        outside += sum(1 for v in ys if v < y0 or v > y1)
        near = [min(abs(math.log(v) - math.log(y0)), abs(math.log(y1) - math.log(v)))
                if log and v > 0 else min(v - y0, y1 - v) for v in ys if y0 <= v <= y1]
        if line.get_marker() not in ("_", "|"):
            edge += sum(1 for d in near if d < 0.01 * span)
    return outside, edge


def properties(fig: plt.Figure, draw: bool = True) -> dict[str, Any]:
    """What a reader needs of a figure, read from matplotlib's objects once it is drawn (here,
    unless not `draw`: `save` has just drawn it): per data panel its labelled ticks, axis labels,
    whether it has a legend, and the data points outside (or on the edge of) its limits; the
    colour of each labelled series."""
    if draw:
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
        outside, edge = _off_limits(ax)
        series = [h for h in ax.get_lines() + list(ax.collections) + list(ax.patches) + list(ax.containers)
                  if not str(h.get_label()).startswith("_") and h.get_label()]  # errorbar: its container
        for h in series:
            colours.setdefault(str(h.get_label()), _artist_colour(h))
        panels.append({"title": ax.get_title(), "xlabel": labels["x"], "ylabel": labels["y"],
                       "xticks": ticks["x"], "yticks": ticks["y"], "outside": outside, "edge": edge,
                       "series": len({str(h.get_label()) for h in series}), "drawn": drawn(ax)})
    if not panels:  # every panel empty: nothing was drawn at all
        panels.append({"title": fig.axes[0].get_title() if fig.axes else "", "xlabel": "", "ylabel": "",
                       "xticks": [], "yticks": [], "outside": 0, "edge": 0, "series": 0, "drawn": 0})
    for leg in fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]:
        for handle, text in zip(leg.legend_handles, leg.get_texts()):
            if handle is not None and _artist_colour(handle):
                colours.setdefault(text.get_text(), _artist_colour(handle))
    return {"panels": panels, "legend": legends, "colours": colours}


def drawn(ax: Any) -> int:
    """How many data series a panel draws: lines with a finite point, marker collections with
    a point, error bars (their containers; their own lines not counted again), bar groups —
    not the decoration (grid, draw band, spans)."""
    import numpy as np
    from matplotlib.container import BarContainer, ErrorbarContainer
    inside = {id(a) for c in ax.containers for part in c for a in (part if isinstance(part, tuple) else (part,))
              if a is not None}
    lines = [ln for ln in ax.get_lines() if id(ln) not in inside and ln.get_visible()
             and np.isfinite(np.asarray(ln.get_ydata(), dtype=float)).any()]
    points = [c for c in ax.collections if id(c) not in inside and len(getattr(c, "get_offsets", lambda: [])()) > 0
              and c.get_gid() != CLIPPED]
    boxes = [c for c in ax.containers if isinstance(c, (ErrorbarContainer, BarContainer))]
    return len(lines) + len(points) + len(boxes)


def problems(props: dict[str, Any]) -> list[str]:
    """What makes a figure hard to read (from `properties`): a numeric axis with fewer than
    three labelled ticks or without a label naming a unit (a categorical one: without a
    labelled tick), a figure or panel that draws no data series (every drawn series counts:
    lines, markers, bars and error bars), several labelled series without a legend, data points outside the axes or
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
        if not p.get("drawn", 1):
            out.append(f"{name}: no data series drawn")
            continue
        if p["series"] > 1 and not props["legend"]:
            out.append(f"{name}: {p['series']} series and no legend")
    return out


DPI = 120        # a run's figures/*.png, for the user's posts
SHOWN_DPI = 100  # the size the notebook and the report show them at (matplotlib's inline size)


def save(fig: plt.Figure, folder: Path, name: str) -> list[Path]:
    """Write `fig` as <name>.png and .svg in `folder` (a run's `figures`), and <name>.json:
    its `properties` and `problems` (the suite checks every smoke run's)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = [folder / f"{name}.{ext}" for ext in ("png", "svg")]
    for f in out:
        fig.savefig(f, dpi=DPI, bbox_inches="tight")
    props = properties(fig, draw=False)
    (folder / f"{name}.json").write_text(json.dumps({**props, "problems": problems(props)}, indent=1))
    return out


def publish(fig: plt.Figure, run, name: str, alt: str | None = None) -> None:
    """Save `fig` into the run (a run re-read as it is keeps a figure it has: `Run.reread`),
    show that PNG once in the notebook with alt text (the file, not a fresh rendering: one
    drawing fewer per figure, and what the notebook shows is what the run keeps), close it."""
    from IPython.display import Image, display
    png = run.figures / f"{name}.png"
    if not (getattr(run, "as_it_is", False) and png.exists()):
        save(fig, run.figures, name)
    text = alt or getattr(fig, "dbstudies_alt", None) or name.replace("_", " ")
    plt.close(fig)
    data = png.read_bytes()
    width = int.from_bytes(data[16:20], "big")  # the PNG header's IHDR width
    display(Image(data=data, width=round(width * SHOWN_DPI / DPI), alt=text))
