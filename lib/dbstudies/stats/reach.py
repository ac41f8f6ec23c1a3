"""What a comparison table can detect: whether any verdict was reachable at its n and number
of comparisons, and its minimum detectable effect in words."""
from __future__ import annotations

import numpy as np  # noqa: F401 - the doctests use it
import pandas as pd

from .paired import min_signed_rank_p
from .samples import ALPHA, is_paired_table, min_p_value


def reachability(table: pd.DataFrame, alpha: float = ALPHA) -> list[str]:
    """Plain sentences on what a comparison table can and cannot conclude, by construction
    (repeats or pairs, correction included) and at its measured noise (its cells' MDE).

    >>> t = pd.DataFrame({"n_baseline": [5, 5], "n_candidate": [5, 5], "mde_pct": [12.0, 20.0]})
    >>> reachability(t)[0]
    'Minimum detectable effect 16 % in the median cell (12–20 % across cells; 5 repeats per side, 2 comparisons, Holm-corrected, 80 % power): a smaller true difference may come out draw'
    >>> paired = pd.DataFrame({"n_baseline": [4, 38], "n_candidate": [4, 38], "mde_pct": [60.0, 9.0],
    ...                        "sd_diff": [0.1, 0.1], "p_value": [0.2, 0.001]})
    >>> reachability(paired)[1]
    'The rank test (robustness column) cannot reach p < 0.05 after Holm over 2 comparisons in 1 of 2 cells (those with 4 pairs or fewer) with 4 pairs (its floor there is 0.25)'
    """
    if table.empty:
        return ["No comparison was possible (a configuration has no measurements)"]
    paired = is_paired_table(table)
    per_cell = table[["n_baseline", "n_candidate"]].min(axis=1).dropna()  # a cell not compared: none
    if per_cell.empty:
        return ["No comparison was possible (a configuration has no measurements)"]
    n, most = int(per_cell.min()), int(per_cell.max())
    m = int(table["p_value"].notna().sum()) if "p_value" in table else len(table)  # tested rows
    unit = "pair(s) per cell" if paired else "repeat(s) per configuration"
    if most < 2:
        return [f"With {n} {unit} no noise can be estimated, so no verdict is possible by "
                f"construction: every cell is a draw (use {'rounds' if paired else 'repeats'} ≥ 3)"]
    mdes = table["mde_pct"].dropna()
    if mdes.empty:
        return [f"No cell could be tested ({most} {unit} at most, or no noise to estimate): every "
                "cell is a draw by construction"]
    lo, hi = mde_text(mdes.min()), mde_text(mdes.max())
    spread = (f"{lo} in every cell" if lo == hi else
              f"{lo.removesuffix(' %')}–{hi} across cells" if mdes.max() <= 1000 else f"{lo} to {hi} across cells")
    how, floors = _design_words(table, per_cell, m, paired)
    lines = [f"Minimum detectable effect {mde_text(mdes.median())} in the median cell ({spread}; "
             f"{how}, {m} comparison{'s' if m != 1 else ''}, Holm-corrected, 80 % power): a "
             "smaller true difference may come out draw"]
    return lines + _rank_floor(per_cell, floors, m, paired, alpha)


def _design_words(table: pd.DataFrame, per_cell: pd.Series, m: int, paired: bool) -> tuple[str, pd.Series]:
    """How a table's cells were measured, in words (pairs or repeats per cell, the moderation's
    prior df), and each cell's rank-test floor after Holm over `m` comparisons."""
    n, most = int(per_cell.min()), int(per_cell.max())
    count = f"{n}" if n == most else f"{n}–{most}"
    if paired:
        d0 = float(table["prior_df"].max()) if "prior_df" in table else 0.0
        return (f"{count} pairs per cell (paired rounds, t on the pairs' log ratios"
                + (f", variance moderated across the cells: +{d0:.0f} df" if d0 > 0 else "") + ")",
                per_cell.map(lambda k: min_signed_rank_p(int(k)) * m))
    return f"{count} repeats per side", per_cell.map(lambda k: min_p_value(int(k), int(k)) * m)


def _rank_floor(per_cell: pd.Series, floors: pd.Series, m: int, paired: bool, alpha: float) -> list[str]:
    """Where the rank test cannot reach p < α after Holm, by its floor at each cell's pairs
    (or repeats): every cell, or those with the fewest."""
    blocked = per_cell[floors >= alpha]
    if not len(blocked):
        return []
    unit = "pairs" if paired else "repeats"
    cells = ("" if len(blocked) == len(per_cell) else
             f" in {len(blocked)} of {len(per_cell)} cells (those with {int(blocked.max())} {unit} or fewer)")
    n = f"{int(blocked.min())}" if blocked.min() == blocked.max() else f"{int(blocked.min())}–{int(blocked.max())}"
    return [f"The rank test (robustness column) cannot reach p < {alpha} after Holm over {m} "
            f"comparison{'s' if m != 1 else ''}{cells} with {n} {unit} "
            f"(its floor there is {min(floors[blocked.index].min(), 1):.2g})"]


def reach_short(table: pd.DataFrame) -> str:
    """`reachability` in one clause, for a conclusion (the full sentences go with the design).

    >>> reach_short(pd.DataFrame({"n_baseline": [5, 5], "n_candidate": [5, 5], "mde_pct": [12.0, 20.0]}))
    'detectable: 16 % in the median cell (12–20 % across cells)'
    >>> reach_short(pd.DataFrame({"n_baseline": [1, 2], "n_candidate": [1, 2], "mde_pct": [np.nan, 69.0],
    ...                           "p_value": [np.nan, 0.03]}))
    'detectable: 69 % in the median cell; 1 cell with a single repeat could not be tested'
    """
    if table.empty:
        return "nothing could be compared"
    unit = "pair" if is_paired_table(table) else "repeat"
    n_cell = table[["n_baseline", "n_candidate"]].min(axis=1)
    untested = (table["p_value"].isna() if "p_value" in table else n_cell < 2) & (n_cell < 2)
    mdes = table.loc[~untested, "mde_pct"].dropna()
    if mdes.empty:
        return f"with {int(n_cell.min())} {unit} per cell no verdict is possible"
    lo, hi, mid = mde_text(mdes.min()), mde_text(mdes.max()), mde_text(mdes.median())
    spread = ("" if lo == hi else f" ({lo.removesuffix(' %')}–{hi} across cells)" if mdes.max() <= 1000
              else f" ({lo} to {hi} across cells)")
    few = int(untested.sum())
    return (f"detectable: {mid} in the median cell{spread}"
            + (f"; {few} cell{'s' if few != 1 else ''} with a single {unit} could not be tested" if few else ""))


def decimals(threshold: float) -> int:
    """The decimals an effect is said with: one; two where the draw band is under 1 % (a
    count's 0.2 %: "−0.0 % [−0.0, +0.0]" would say nothing).

    >>> decimals(0.05), decimals(0.002)
    (1, 2)
    """
    return 2 if threshold < 0.01 else 1


def mde_text(x: float) -> str:
    """An MDE as the text says it: '16 %', '> 1,000 %' for a design that cannot tell, and
    two significant digits under 10 % (a count's 0.5 % is not '0 %').

    >>> mde_text(15.6), mde_text(2221619.0), mde_text(2.44), mde_text(0.0417)
    ('16 %', '> 1,000 %', '2.4 %', '0.042 %')
    """
    if x > 1000:
        return "> 1,000 %"
    if 0 < x < 10:
        return f"{x:.2g} %"
    return f"{x:.0f} %"


