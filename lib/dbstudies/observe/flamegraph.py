"""Flame graphs of folded stacks as self-contained SVG, and where the samples went.

A flame graph draws every distinct call path as a stack of boxes: the bottom row is the
thread, each row above a function called from the one below, a box's width the share of
all samples taken in it or in what it called. Boxes are sorted by name within their parent
(so two arms' graphs line up), each carries a tooltip with its samples and share, and names
are written where they fit. `delta` colours a graph by a difference instead (red: the
function grew against the other arm, blue: it shrank, white: not named) — a difference
flame graph.

    >>> stacks = {"mariadbd;dispatch;select": 3, "mariadbd;dispatch;insert": 1}
    >>> shares(stacks)[["function", "self", "total"]].values.tolist()
    [['select', 3, 3], ['insert', 1, 1], ['dispatch', 0, 4], ['mariadbd', 0, 4]]
    >>> svg(stacks, "t").count("<rect") - 1   # one box per node (and the background)
    4
"""
from __future__ import annotations

import hashlib
from html import escape
from typing import Mapping

import pandas as pd

WIDTH, ROW, PAD = 1200, 17, 10
CHAR_PX = 6.6          # width of one character at the labels' 11 px
MIN_PX = 0.3           # boxes narrower than this are not drawn (their samples stay in the parent)


def _tree(stacks: Mapping[str, int]) -> dict:
    root: dict = {"n": 0, "kids": {}}
    for stack, n in stacks.items():
        root["n"] += n
        node = root
        for frame in stack.split(";"):
            node = node["kids"].setdefault(frame, {"n": 0, "kids": {}})
            node["n"] += n
    return root


def _depth(node: dict) -> int:
    return 1 + max((_depth(k) for k in node["kids"].values()), default=0)


def _warm(name: str) -> str:
    """A stable warm colour per function name (the same function alike in every graph)."""
    h = int(hashlib.md5(name.encode()).hexdigest()[:6], 16)
    return f"rgb({205 + h % 50},{80 + (h >> 8) % 130},{40 + (h >> 16) % 50})"


def _diverging(change: float, scale: float) -> str:
    """Red for a share that grew, blue for one that shrank, white for none."""
    x = max(-1.0, min(1.0, change / scale)) if scale else 0.0
    fade = int(235 - 170 * abs(x))
    return f"rgb(235,{fade},{fade})" if x > 0 else f"rgb({fade},{fade},235)"


def _box(name: str, tip: str, x: float, y: float, w: float, fill: str) -> str:
    """One function's box: its rectangle, its name where it fits (cut with "…"), its tooltip."""
    fits = int((w - 6) / CHAR_PX)
    label = "" if fits < 3 else name if len(name) <= fits else name[:fits - 1] + "…"
    return (f'<g><title>{escape(tip)}</title><rect x="{x:.2f}" y="{y}" width="{w:.2f}" '
            f'height="{ROW - 1}" fill="{fill}" rx="1"/>'
            + (f'\n<text x="{x + 3:.2f}" y="{y + ROW - 5}">{escape(label)}</text>' if label else "") + "\n</g>")


def svg(stacks: Mapping[str, int], title: str, *, delta: Mapping[str, float] | None = None,
        unit: str = "points", width: int = WIDTH) -> str:
    """The flame graph of `stacks` ({folded stack: samples}) as SVG text. `delta`
    ({function: its change, in `unit`}) colours boxes by that change; a function it does
    not name stays white."""
    root = _tree(stacks)
    total = root["n"] or 1
    rows = _depth(root) - 1
    height = (rows + 2) * ROW + 2 * PAD
    scale = max((abs(v) for v in (delta or {}).values()), default=0.0)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="#fbfbfb"/>',
           f'<text x="{width / 2}" y="{PAD + 12}" text-anchor="middle" font-size="14">'
           f'{escape(title)} — {root["n"]:,} samples</text>']
    inner = width - 2 * PAD

    def draw(node: dict, name: str, x: float, level: int) -> None:
        w = node["n"] / total * inner
        if w < MIN_PX:
            return
        fill = _diverging(delta.get(name, 0.0), scale) if delta is not None else _warm(name)
        said = f", {delta[name]:+.2f} {unit} against the other arm" if delta is not None and name in delta else ""
        tip = f"{name}: {node['n']:,} samples ({node['n'] / total * 100:.2f} %){said}"
        out.append(_box(name, tip, x, height - PAD - (level + 1) * ROW, w, fill))
        for kid_name in sorted(node["kids"]):
            kid = node["kids"][kid_name]
            draw(kid, kid_name, x, level + 1)
            x += kid["n"] / total * inner

    x = PAD
    for name in sorted(root["kids"]):
        draw(root["kids"][name], name, x, 0)
        x += root["kids"][name]["n"] / total * inner
    out.append("</svg>")
    return "\n".join(out)


def shares(stacks: Mapping[str, int]) -> pd.DataFrame:
    """Per function: samples in which it was on the CPU itself (`self`: the innermost
    frame) and in which it was on the stack at all (`total`, counted once per sample even
    when it recurses), with their shares of all samples in %; most `self` first."""
    own: dict[str, int] = {}
    on_stack: dict[str, int] = {}
    for stack, n in stacks.items():
        frames = stack.split(";")
        own[frames[-1]] = own.get(frames[-1], 0) + n
        for f in set(frames):
            on_stack[f] = on_stack.get(f, 0) + n
    total = sum(stacks.values()) or 1
    df = pd.DataFrame({"function": list(on_stack), "total": list(on_stack.values())})
    df["self"] = df["function"].map(own).fillna(0).astype("int64")
    df = df.assign(self_pct=df["self"] / total * 100, total_pct=df["total"] / total * 100)
    return (df.sort_values(["self", "total", "function"], ascending=[False, False, True])
            .reset_index(drop=True)[["function", "self", "self_pct", "total", "total_pct"]])
