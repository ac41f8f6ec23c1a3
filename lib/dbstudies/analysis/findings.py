"""The answer's findings, computed once: every cell × candidate of every comparison a study
shows at a glance — its effect with its interval at the level it is tested, its pairs (or
repeats), its one word and the rule that gave it, and whether the precision loop left the
cell short of the run's target. What "largest", "short" and the counts mean is defined here
and nowhere else; the glance, the grid, the verdict table, the conclusion, the terminal and
the README render these (`said`, `sentences`), and the words, compare and pool say the same
word per cell (`word_of`).

- **word**: better or worse (the Holm verdict); a draw reads its interval, whatever the
  metric: the same (inside the draw band), within target (inside a target's band only),
  inconclusive (reaching past the band); not judged, not available (`word_of`).
- **short**: a cell the loop would measure again — on any metric with a target, its pairs'
  spread about zero still needs more pairs than it has (`stats.target_readings`, the loop's
  `precision.shortfall` read on the same pairs). A property of the cell: short on every
  comparison, counted once, as the design line counts it.
- **largest**: of the better and worse cells not short, the one of largest |effect| — a
  verdict reached on a short cell's few pairs is never the headline (it does not survive a
  rerun); none when no such cell.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

import pandas as pd

from ..core.comparisons import Comparison
from ..kit.contract import Answer
from ..stats import mde_text
from .cells import CELL_KEYS, cell_name, effect
from .words import WORDS, adjusted, field, where, word_of


@dataclass(frozen=True)
class Finding:
    """One cell × candidate of one comparison (`comparison`: its short name, a grid column)."""
    comparison: str
    candidate: str
    cell: tuple[tuple[str, Any], ...]         # its keys, in the table's order
    delta_pct: float                          # NaN: not tested
    entry: str                                # the effect with its tested interval, or why not tested
    word: str
    n: int | None                             # pairs (or repeats)
    unit: str                                 # "pair" or "repeat"
    short: bool
    more_rounds: float = 0.0                  # the most any target metric still wants (inf: out of reach)
    could_see: float = math.nan               # its MDE in % (to its target where it has one)
    row: dict[str, Any] = dc_field(default_factory=dict, compare=False, repr=False)  # the table's row

    @property
    def where(self) -> str:
        """'pool-of-threads, oltp_point_select, 16 client threads' (the candidate where named)."""
        return ", ".join(x for x in (self.candidate, cell_name(dict(self.cell))) if x)

    @property
    def decisive(self) -> bool:
        return self.word in ("better", "worse")


@dataclass(frozen=True)
class Findings:
    """One comparison's findings, and what is said of them as a whole."""
    comparison: str
    words: str
    rows: tuple[Finding, ...]

    def counts(self) -> dict[str, int]:
        """How many cells have each word, in `WORDS`' order (others after): they sum to the cells."""
        seen = pd.Series([r.word for r in self.rows], dtype=object).value_counts()
        return {w: int(seen[w]) for w in [*WORDS, *(w for w in seen.index if w not in WORDS)] if w in seen}

    def largest(self) -> Finding | None:
        """Of the better and worse cells not short, the one of largest |effect|."""
        kept = [r for r in self.rows if r.decisive and not r.short and r.delta_pct == r.delta_pct]
        return max(kept, key=lambda r: abs(r.delta_pct)) if kept else None

    def short(self) -> tuple[Finding, ...]:
        return tuple(r for r in self.rows if r.short)

    def counts_text(self) -> str:
        """'4 worse, 3 within target, 1 inconclusive (could see ±24 %)': an inconclusive count
        with what its median cell could see."""
        seen = [r.could_see for r in self.rows if r.word == "inconclusive" and r.could_see == r.could_see]
        see = pd.Series(seen, dtype=float).median() if seen else math.nan
        return ", ".join(f"{n} {w}" + (f" (could see ±{mde_text(see)})" if w == "inconclusive" and see <= 1000 else "")
                         for w, n in self.counts().items())

    def largest_text(self) -> str:
        """'largest −20.4 % [−26.8, −13.4] (pool-of-threads, …)'; '' where no cell is decisive,
        and where every decisive one is short, that said."""
        big = self.largest()
        if big is not None:
            return f"largest {big.entry} ({big.where})"
        return "every better or worse cell short of the target" if any(r.decisive for r in self.rows) else ""

    def line(self) -> str:
        """The comparison at a glance, Markdown: '**QPS** (8 cells): 4 worse, 4 within target;
        largest …' (the short cells: `short_line`, once for all)."""
        n = len(self.rows)
        return (f"**{self.comparison}** ({n} cell{'s' if n != 1 else ''}): "
                + "; ".join(x for x in (self.counts_text(), self.largest_text()) if x))


def moved_by(ratio: Findings, under: Findings) -> str:
    """What moves a ratio besides its numerator, said beside it: in how many of its better
    cells its denominator (`under`: p50 under the tail ratio) rose — a typical transaction
    grown slower shrinks the ratio, a gain paid for by a cost ('' when none)."""
    up = {r.cell for r in under.rows if r.word == "worse"}  # a latency judged worse: it rose
    gained = [r for r in ratio.rows if r.word == "better"]
    paid = [r for r in gained if r.cell in up]
    if not paid:
        return ""
    return (f"{under.comparison} rose in {len(paid)} of its {len(gained)} better cells: there part of the gain "
            f"is {under.comparison}'s cost")


def short_line(found: list[Findings], named: bool = False) -> str:
    """The cells the loop left short, once for every comparison (short is a cell's, not a
    metric's), with the pairs more the loop wanted, Markdown; '' when none: '**Short of the
    target**: 3 of 8 cells (marked in the grid; 1–281 pairs more), never taken as the largest'
    (`named`: the cells in words instead, as the conclusion says them)."""
    cells = {r.cell: r for f in found for r in f.rows}
    short = [r for r in cells.values() if r.short]
    if not short:
        return ""
    more = sorted({r.more_rounds for r in short})
    wanted = ("out of reach" if not math.isfinite(more[0]) else
              f"{more[0]:,.0f} pair{'s' if more[0] != 1 else ''} more" if len(more) == 1 else
              f"{more[0]:,.0f}–{more[-1]:,.0f} pairs more" if math.isfinite(more[-1]) else
              f"{more[0]:,.0f} pairs more or out of reach")
    which = (where(pd.DataFrame([dict(r.cell) for r in short]), pd.DataFrame([dict(c) for c in cells]))
             if named else "marked in the grid")
    return f"**Short of the target**: {len(short)} of {len(cells)} cells ({which}; {wanted}), never taken as the largest"


def short_cells(tables: dict[str, Any], keys: Any) -> dict[tuple[tuple[str, Any], ...], float]:
    """The cells the loop would measure again, over the comparison tables `keys` measured to a
    target (those with `short`; never the A/A table: the loop measures the compared arms): cell
    → the most pairs any of its metrics still wants (inf: out of reach)."""
    out: dict[tuple[tuple[str, Any], ...], float] = {}
    for rel in (tables.get(k) for k in keys):
        if not isinstance(rel, pd.DataFrame) or rel.empty or "short" not in rel:
            continue
        keys = [k for k in CELL_KEYS if k in rel]
        for r in rel[rel["short"].fillna(False).astype(bool)].to_dict("records"):
            cell = tuple((k, r[k]) for k in keys)
            more = r.get("more_pairs", 0)
            out[cell] = max(out.get(cell, 0.0), float(more) if more == more else math.inf)
    return out


def of_table(c: Comparison, rel: pd.DataFrame, short: dict[tuple[tuple[str, Any], ...], float] | None = None) -> Findings:
    """A comparison's table as findings; `short`: the run's short cells (`short_cells`)."""
    short = short or {}
    by = [k for k in dict.fromkeys((*c.by, *CELL_KEYS)) if k in rel]
    keys = [k for k in CELL_KEYS if k in rel]
    unit = "pair" if "sd_diff" in rel else "repeat"
    rows = []
    for r in rel.to_dict("records"):
        n = field(r, "n_baseline")
        cell = tuple((k, r[k]) for k in keys)
        untested = r["delta_pct"] != r["delta_pct"]
        rows.append(Finding(
            comparison=c.short, candidate=str(r.get("candidate") or ""), cell=tuple((k, r[k]) for k in by),
            delta_pct=float(r["delta_pct"]) if not untested else math.nan,
            entry=str(r["verdict"]).split(":")[0] if untested else effect(r, *adjusted(r)),  # its why: the tables below
            word=word_of(pd.Series(r)), n=int(n) if n is not None and n == n else None, unit=unit,
            short=cell in short, more_rounds=short.get(cell, 0.0), row=r,
            could_see=float(next((r[k] for k in ("target_mde_pct", "mde_pct") if r.get(k) is not None
                                  and r[k] == r[k]), math.nan))))
    return Findings(c.short, c.words, tuple(rows))


def of_answer(said: Answer) -> list[Findings]:
    """Every comparison a study shows at a glance (`Comparison.at_glance`: the judged ones and
    p50), in its order, that has a table."""
    short = short_cells(said.tables, [c.key for c in said.comparisons])
    return [of_table(c, said.tables[c.key], short) for c in said.comparisons
            if c.at_glance and isinstance(said.tables.get(c.key), pd.DataFrame) and not said.tables[c.key].empty]
