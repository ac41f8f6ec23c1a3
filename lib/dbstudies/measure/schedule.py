"""The plan of a run: which steps, in which order, on which servers, and how long it takes.

Two designs (docs/statistics.md). *Blocks* (`block_order`): per repeat every arm gets one
block on a fresh start, arms shuffled per repeat and cells per block. *Paired*
(`paired_order`): per round every cell is measured once on every arm, the arms of a cell back
to back (a *pair*) in an order balanced across rounds, cells shuffled per round. `steps` is
a study's plan in its design; `server_key` says which server measures an arm; the estimates
(`round_seconds`, `estimated_seconds`, `rounds_in`) are what `dbstudies plan` and a time
budget go by. Everything here is computed from the parameters alone: nothing starts.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..kit.contract import Study
from ..kit.studykit import Arm, StudyParams, arms_of
from ..observe import profiler

RESTART_SECONDS = 3.0      # stop + start of a private server with a warm datadir (measured ≈1–3 s)
FOLD_SECONDS = 1.0         # a profiled step's perf set-up, stop and fold (measured 0.60 s on 3-s steps, 16 threads)
MAX_ROUNDS = 500           # with a time budget: rounds planned at most (as many run as fit)
PLAN_COLUMNS = ("step", "repeat", "arm", "pair", "position")  # a step's place; the rest is its cell


def block_order(arms: list[Arm], cells: list[dict[str, Any]], repeats: int, seed: int, *,
         first_step: int = 1) -> pd.DataFrame:
    """The measured steps in execution order: repeat → arm (shuffled per repeat) → cell
    (shuffled per block), numbered from `first_step`. Seeded, so a run can be replayed."""
    rng = np.random.default_rng(seed)
    rows = []
    for repeat in range(1, repeats + 1):
        for i in rng.permutation(len(arms)):
            for j in rng.permutation(len(cells)):
                rows.append({"repeat": repeat, "arm": arms[i].label, **cells[j]})
    df = pd.DataFrame(rows)
    df.insert(0, "step", range(first_step, first_step + len(df)))
    return df


def paired_order(arms: list[Arm], cells: list[dict[str, Any]], rounds: int, seed: int, *,
                first_step: int = 1, first_pair: int = 1) -> pd.DataFrame:
    """The measured steps of a paired design in execution order: round → cell (shuffled per
    round) → the arms of that cell back to back, one `pair`. Each cell's arm orders are the
    k rotations of a random order, shuffled within every k rounds (k arms), so every arm
    takes every position equally often (AB as often as BA). Seeded.

    >>> from dbstudies.kit.studykit import Arm
    >>> df = paired_order([Arm("A"), Arm("B")], [{"threads": 1}, {"threads": 8}], 4, seed=1)
    >>> df.groupby(["threads", "position"])["arm"].apply(lambda a: "".join(sorted(a))).tolist()
    ['AABB', 'AABB', 'AABB', 'AABB']
    """
    rng = np.random.default_rng(seed)
    k, base = len(arms), [rng.permutation(len(arms)) for _ in cells]
    orders: list[list[np.ndarray]] = [[] for _ in cells]
    rows, pair = [], first_pair - 1
    for r in range(rounds):
        if r % k == 0:
            orders = [[np.roll(b, i) for i in rng.permutation(k)] for b in base]
        for j in rng.permutation(len(cells)):
            pair += 1
            for position, i in enumerate(orders[j][r % k]):
                rows.append({"repeat": r + 1, "arm": arms[i].label, **cells[j], "pair": pair,
                             "position": position})
    df = pd.DataFrame(rows)
    df.insert(0, "step", range(first_step, first_step + len(df)))
    return df


def next_order(orders: list[tuple[str, ...]], rng: np.random.Generator) -> tuple[str, ...]:
    """The arm order of a cell's next pair, given its pairs' orders so far (the first one its
    base order; every one a rotation of it, as `paired_order` makes them): a rotation used
    least often so far, chosen at random among those — so a cell measured pair by pair keeps
    every arm in every position equally often, within one.

    >>> rng = np.random.default_rng(0)
    >>> orders = [("A", "B", "C")]
    >>> for _ in range(7):
    ...     orders.append(next_order(orders, rng))
    >>> sorted({a: [o.index(a) for o in orders].count(0) for a in "ABC"}.values())
    [2, 3, 3]
    """
    base = orders[0]
    turns = [base[i:] + base[:i] for i in range(len(base))]
    used = [orders.count(t) for t in turns]
    fewest = [t for t, u in zip(turns, used) if u == min(used)]
    return fewest[int(rng.integers(len(fewest)))]


def orders_so_far(steps: pd.DataFrame) -> tuple[list[dict[str, Any]], dict[tuple, list[tuple[str, ...]]]]:
    """A paired plan's cells (as a hook sees them) and, keyed by each cell's values, the arm
    orders of its pairs so far (what `pairs_of` goes on from)."""
    first = steps[(steps["repeat"] == steps["repeat"].iloc[0]) & (steps["arm"] == steps["arm"].iloc[0])]
    cells = cells_of(first)
    return cells, {tuple(c.values()): [tuple(g.sort_values("position")["arm"])
                                       for _, g in steps[measuring(steps, c)].groupby("pair", sort=False)]
                   for c in cells}


def pairs_of(cells: list[dict[str, Any]], history: dict[tuple, list[tuple[str, ...]]],
             rng: np.random.Generator, repeat: int, *, after: dict[str, int]) -> list[dict[str, Any]]:
    """The steps of round `repeat` when it measures one pair of each of `cells` (the rounds to
    a precision target): cells in a shuffled order, each pair's arm order the next that keeps
    its cell's arms balanced (`next_order`; `history`, keyed by the cell's values, extended),
    steps and pairs numbered on `after` the last ({"step": n, "pair": n}).

    >>> history = {("oltp", 1): [("A", "B")]}
    >>> [(s["step"], s["pair"], s["arm"], s["position"]) for s in pairs_of(
    ...     [{"w": "oltp", "t": 1}], history, np.random.default_rng(0), 3, after={"step": 8, "pair": 4})]
    [(9, 5, 'B', 0), (10, 5, 'A', 1)]
    """
    rows, step, pair = [], after["step"], after["pair"]
    for i in rng.permutation(len(cells)):
        cell = cells[i]
        order = next_order(history[tuple(cell.values())], rng)
        history[tuple(cell.values())].append(order)
        pair += 1
        for position, label in enumerate(order):
            step += 1
            rows.append({"step": step, "repeat": repeat, "arm": label, **cell, "pair": pair, "position": position})
    return rows


def cells_of(steps: pd.DataFrame) -> list[dict[str, Any]]:
    """Steps' cells as a hook sees them: without their plan columns."""
    return steps.drop(columns=[c for c in PLAN_COLUMNS if c in steps]).to_dict("records")


def cell_text(cell: dict[str, Any]) -> str:
    """A cell as the progress shows it: its values, a profiled one marked so.

    >>> cell_text({"step": 3, "workload": "oltp_read_only", "threads": 64, "cpu_profile": True})
    'oltp_read_only 64 (profiled)'
    """
    return " ".join("(profiled)" if k == "cpu_profile" else str(v)
                    for k, v in cell.items() if k not in PLAN_COLUMNS)


def measuring(steps: pd.DataFrame, cell: dict[str, Any]) -> pd.Series:
    """Which of `steps` measure `cell` (every one of its values)."""
    hit = pd.Series(True, index=steps.index)
    for k, v in cell.items():
        hit &= steps[k] == v
    return hit


def design(p: StudyParams) -> str:
    """The study's design: "paired" or "blocks"."""
    return p.design


def rounds(p: StudyParams) -> int:
    """Rounds (repeats) planned: `repeats`, or as many as a time budget may fit; with a
    precision target, `repeats` first (then rounds go only where the target is not met:
    `experiment`, `precision`)."""
    return MAX_ROUNDS if p.budget and not p.target else p.repeats


def steps(study: Study, p: StudyParams) -> pd.DataFrame:
    """The study's measured steps in execution order, in its design."""
    arms, cells = arms_of(study, p), study.cells(p)
    if design(p) == "paired":
        return paired_order(arms, cells, rounds(p), p.seed)
    return block_order(arms, cells, rounds(p), p.seed)


def round_seconds(study: Study, p: StudyParams) -> float:
    """A rough wall-clock estimate of one round (paired: every server's restart and every
    arm's warm-up when due, every cell on every arm) or one repeat of blocks."""
    arms = arms_of(study, p)
    block = study.block_seconds(p)
    if design(p) == "paired":
        warmup = study.warmup_seconds(p)
        n_servers = len(servers_needed(arms, p))
        restart = (RESTART_SECONDS * n_servers + warmup * len(arms)) / max(p.restart_every, 1)
        return restart + (block - warmup) * len(arms)
    return len(arms) * (RESTART_SECONDS + block)


def round_parts(study: Study, p: StudyParams) -> tuple[float, float]:
    """A paired round's estimate in its parts: (restarting and warming up every server, its
    share per round; one pair of one cell — every arm's step of it).

    >>> from dbstudies.kit.study import load
    >>> from dbstudies.measure import checks
    >>> tp = load("thread_pool"); p = checks.resolve(tp, "quick")
    >>> restart, pair = round_parts(tp, p)
    >>> abs(restart + pair * len(tp.cells(p)) - round_seconds(tp, p)) < 1e-9
    True
    """
    cells = len(study.cells(p))
    pair = (study.block_seconds(p) - study.warmup_seconds(p)) * len(arms_of(study, p)) / max(cells, 1)
    return round_seconds(study, p) - pair * cells, pair


def rounds_in(study: Study, p: StudyParams, seconds: float) -> int:
    """The rounds (or repeats) `seconds` hold at `round_seconds` each, never fewer than the
    two a verdict needs: what a time budget buys."""
    return max(2, int(seconds // round_seconds(study, p)))


def describe(study: Study, p: StudyParams) -> str:
    """What a run of these parameters measures, in one line (the study's `describe(p, steps)`
    hook, else its steps, rounds and arms) and about how long it takes."""
    n = len(steps(study, p))
    said = study.describe(p, n)
    if said is None:
        arms = arms_of(study, p)
        said = (f"the plan: {n} measured steps, {p.repeats} "
                f"{'rounds' if design(p) == 'paired' else 'repeats'} × {len(arms)} arms "
                f"({', '.join(a.label for a in arms)})"
                + (", then rounds only for the cells short of the target as the budget allows"
                   if getattr(p, "target", None) else ""))
    if profile_seconds(study, p):
        cells = len(p.cpu_profile_cells or []) or min(profiler.MAX_CELLS, len(study.cells(p)))
        said += f", then {p.profile_rounds()} profiled rounds of at most {cells} cell{'s' if cells != 1 else ''}"
    seconds = estimated_seconds(study, p)
    return f"{said}; about " + (f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s")


def estimated_seconds(study: Study, p: StudyParams) -> float:
    """A rough wall-clock estimate: the time budget, else rounds × one round's time and the
    profiled rounds (`profile_seconds`)."""
    if p.budget:
        return p.budget * 60
    return p.repeats * round_seconds(study, p) + profile_seconds(study, p)


def profile_seconds(study: Study, p: StudyParams) -> float:
    """The profiled rounds' estimate (`cpu_profile`; 0 without): per round a restart when
    due and every chosen cell — those named, else at most `profiler.MAX_CELLS` — once on
    every compared arm (no twin), each step then folded. A time budget keeps it for them."""
    if not getattr(p, "cpu_profile", False):
        return 0.0
    cells = len(p.cpu_profile_cells or []) or min(profiler.MAX_CELLS, len(study.cells(p)))
    compared = [a for a in arms_of(study, p) if a.twin_of is None]
    restart, pair = round_parts(study, p)
    step = pair / max(len(arms_of(study, p)), 1)
    return p.profile_rounds() * (restart + cells * len(compared) * (step + FOLD_SECONDS))



# ---------------------------------------------------------------- servers

def server_key(arm: Arm, p: StudyParams) -> str:
    """The server `arm` is measured on. Blocks: one per flavour (restarted per block with the
    arm's settings). Paired: one per arm, all up at once — except in a study whose steps
    give their arm's settings to each session (`SHARED_SERVER`, DBT3's optimizer
    candidates): there the arms of one flavour that ask for no intent share one server.

    >>> from types import SimpleNamespace as NS
    >>> from dbstudies.kit.studykit import Arm
    >>> p = NS(design="paired", flavour="f", SHARED_SERVER=True)
    >>> [server_key(a, p) for a in (Arm("a"), Arm("b", {"x": 1}), Arm("c", flavour="g"))]
    ['f (shared)', 'f (shared)', 'g (shared)']
    >>> server_key(Arm("b"), NS(design="paired", flavour="f", SHARED_SERVER=False))
    'b'
    """
    flavour = arm.flavour or p.flavour
    if design(p) != "paired":
        return flavour
    if getattr(p, "SHARED_SERVER", False) and not (arm.intent and arm.intent.asdict()):
        return f"{flavour} (shared)"
    return arm.label


def session_settings(arm: Arm, p: StudyParams) -> dict[str, Any]:
    """The settings `arm`'s steps give each session: its own on a shared server, none where
    its server starts with them."""
    return dict(arm.settings) if server_key(arm, p).endswith(" (shared)") else {}


def servers_needed(arms: list[Arm], p: StudyParams) -> list[tuple[str, Arm]]:
    """(server key, the arm it starts with) of every server a run keeps up at once
    (`server_key`): one per arm (or per flavour, shared) in the paired design, one per
    flavour in blocks."""
    first: dict[str, Arm] = {}
    for a in arms:
        first.setdefault(server_key(a, p), a)
    return list(first.items())


def next_phase(arms: list[Arm], cells: list[dict[str, Any]], repeats: int, seed: int,
               last: pd.DataFrame, paired: bool) -> pd.DataFrame:
    """A later phase's plan, its steps (and pairs) numbered on from the `last` phase's."""
    first = int(last["step"].max()) + 1
    if paired:
        return paired_order(arms, cells, repeats, seed, first_step=first, first_pair=int(last["pair"].max()) + 1)
    return block_order(arms, cells, repeats, seed, first_step=first)


