"""The answer at a glance as HTML — what a study notebook's top and its last cell show, and a
report opens with: the glance's lines (`analysis.said.tldr`), the grid (a row per cell, a
column per comparison, each effect with its interval coloured by its word) and a link to the
Answer below. Its widths are the notebook's: the grid fits JupyterLab's column (≈ 870 px)."""
from __future__ import annotations

import re
from typing import Any

from ..analysis.said import GRID_FIELDS
from ..analysis.said import grid as said_grid
from ..kit.contract import Answer
from .described import _e
from .shown import label


def inline_markdown(text: str) -> str:
    """Markdown's inline code and bold as HTML, the rest escaped."""
    out = _e(text)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", out)


def glance(lines: list[str], grid_html: str, more: str) -> str:
    """The answer at a glance as one piece of HTML (the notebook's top, the run's last output):
    the tl;dr lines, the grid and a link to the Answer section (`more`: its words)."""
    items = "".join(f"<li>{inline_markdown(line)}</li>" for line in lines)
    return (f"<div class='dbs-glance'><b>At a glance</b><ul>{items}</ul>{grid_html}"
            f"<p><a href='#Answer'>{_e(more)} ↓</a></p></div>")


# the grid's own spacing, inline: JupyterLab's tables pad more than a report's, and the grid must fit its column
CELL_PAD = "padding:2px 5px"
PAD = f" style='{CELL_PAD}'"

# how a grid entry is coloured, by its word (`analysis.words.word_of`)
GRID_COLOURS = {"better": "#c6efce", "worse": "#ffc7ce", "same": "#e2efda", "within target": "#edf2f8",
                "inconclusive": "#ffeb9c", "draw": "#f2f2f2", "not available": "#fafafa", "not compared": "#fafafa",
                "not judged": "#fafafa"}


def _row(key: tuple, part: Any, comparisons: list[str]) -> str:
    """One row of the grid: the cell's keys, an entry per comparison (coloured by its word;
    empty where the cell has none), its pairs and whether the loop left it short."""
    by = dict(zip(part["comparison"], part.to_dict("records")))
    n, unit = part["n"].min(), part["unit"].iloc[0]
    count = "–" if n != n else f"{int(n)} {unit}{'s' if n != 1 else ''}"
    short = "<br><b>short</b>" if part["short"].any() else ""
    tds = "".join(f"<td{PAD}>{_e(v)}</td>" for v in key)
    for c in comparisons:
        r = by.get(c)
        entry = re.sub(r"\[unbounded: [^]]*\]", "[unbounded]", r["entry"]) if r is not None else ""  # its pairs: beside
        tds += ("<td></td>" if r is None else
                f"<td style='background:{GRID_COLOURS.get(r['word'], '#ffffff')};white-space:nowrap;{CELL_PAD}'>"
                f"{_e(entry).replace(' [', '<br>[', 1)}<br><small>{_e(r['word'])}</small></td>")
    return f"<tr>{tds}<td{PAD}>{count}{short}</td></tr>"


def grid(said: Answer) -> str:
    """The answer at a glance as HTML (`said.grid`): a row per cell (and candidate, where
    several are compared) — the first of its keys a row of its own over its cells, so that the
    grid fits a notebook's column (≈ 870 px) —, a column per comparison at a glance, each entry
    the effect, its Holm-adjusted interval under it and its word, coloured by the word; the
    cell's pairs beside, a cell left short of its precision target marked so under them; a
    legend of the colours shown."""
    g = said_grid(said)
    if g.empty:
        return ""
    keys = [k for k in g.columns if k not in GRID_FIELDS]
    keys = (["candidate"] if g["candidate"].nunique() > 1 else []) + keys
    group, keys = (keys[0], keys[1:]) if len(keys) > 1 else (None, keys)
    comparisons = list(dict.fromkeys(g["comparison"]))
    head = "".join(f"<th{PAD}>{_e(label(k))}</th>" for k in keys) + "".join(f"<th{PAD}>{_e(c)}</th>" for c in comparisons)
    width = len(keys) + len(comparisons) + 1
    rows, last = [], object()
    for key, part in g.groupby([*([group] if group else []), *keys], sort=False):
        key = key if isinstance(key, tuple) else (key,)
        if group and key[0] != last:
            last = key[0]
            rows.append(f"<tr class='dbs-group'><th colspan='{width}' style='text-align:left;{CELL_PAD}'>"
                        f"{_e(label(group))}: {_e(key[0])}</th></tr>")
        key = key[1:] if group else key
        rows.append(_row(key, part, comparisons))
    shown = [w for w in GRID_COLOURS if w in set(g["word"])]
    legend = " ".join(f"<span style='background:{GRID_COLOURS[w]};padding:0 .5em'>{_e(w)}</span>" for w in shown)
    return (f"<table class='dbs-table dbs-grid' style='font-size:12px'><thead><tr>{head}"
            f"<th{PAD}>{_e(g['unit'].iloc[0])}s</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table><p><small>Each entry: the candidate against "
            f"{_e(_baseline(said))}, in %, with its Holm-adjusted 95 % interval"
            + ("; <b>short</b>: a cell the loop left short of its precision target" if g["short"].any() else "")
            + f". {legend}</small></p>")


def _baseline(said: Answer) -> str:
    rel = next((t for t in said.verdict_tables().values() if t is not None and len(t) and "baseline" in t), None)
    return str(rel["baseline"].iloc[0]) if rel is not None else "the baseline"


