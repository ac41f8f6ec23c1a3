"""What one comparison table measures, declared once: its key, the column it judges, which
way is better, how the report names it, its cells, whether a precision `target` may name it
and whether the A/A twin gets a table of it. A study kind lists its comparisons
(`SysbenchParams.COMPARISONS`), a study adds or removes its own, and every view iterates the
list: the paired tables the loop, the planner and a replication judge (`judged`), the verdict
tables and their words (`verdicts`), the target check (`targets`), the A/A table and its
calibration, the positive control, the costs that moved and the notebooks' sections.

Adding p90 to every sysbench study is one line in `SYSBENCH` (and the column in the steps).

>>> qps = Comparison("qps", "qps", True, "throughput (QPS)", "QPS", aa=True)
>>> by_key((qps, Comparison("p95", "latency_p95_ms", False, "p95 latency")), "p95").short
'p95 latency'
>>> targets((qps,)), verdicts((qps,))
(('qps',), {'throughput (QPS)': 'qps', 'A/A control (QPS)': 'aa'})
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

BY = ("workload", "threads")  # a sysbench study's cell
AA_KEY = "aa"                 # the A/A table's key in an answer
# a tail statistic resting on fewer of a step's transactions than this is not judged: with k
# transactions past it, where it falls moves by about ±1/√k of the tail (≈ ±22 % at 20), and
# at 3-s steps of oltp_read_only the slowest 1 % is 16–54 transactions (issue 54)
FEWEST_TAIL = 20


@dataclass(frozen=True)
class Comparison:
    """One comparison table: every arm against the baseline on `column`, per cell of `by`.
    `words` name the table in the report; `short` in a list of verdicts (the costs that moved;
    default: `words`); `target`: a precision target may name it (the loop measures to it);
    `judged`: the loop, the planner and a replication judge it (a table shown but not
    judged, like p50 beside p95); `explained`: the per-transaction costs of its steps can
    explain it (the costs that moved; not a load time or a footprint); `aa`: the A/A twin
    gets its own table of it (`aa`, the negative control), the others a calibration on the
    same pairs; `rests_on`: the share of a step's transactions its statistic rests on (a
    tail's: its slowest 1 %) — a cell whose steps give it fewer than `FEWEST_TAIL`
    transactions is not judged on it; `server_cost`: what the server spends per transaction,
    said with f, the client's CPU per server CPU µs (a change k of it shows in throughput as
    about 1 ÷ (1 + k ÷ (1 + f)) − 1 where the two share saturated CPUs)."""
    key: str
    column: str
    higher_is_better: bool
    words: str
    short: str = ""
    by: tuple[str, ...] = BY
    target: bool = True
    judged: bool = True
    explained: bool = True
    aa: bool = False
    rests_on: float = 1.0  # the share of a step's transactions the statistic rests on (p99: its slowest 1 %)
    server_cost: bool = False  # the server's own cost per transaction: the answer gives f beside it
    glance: bool | None = None  # at a glance and in the grid (None: where it is judged)
    over: str = ""  # a ratio's denominator, a comparison's key: what moves it besides its numerator (p50 under the tail ratio)

    def __post_init__(self) -> None:
        if not self.short:
            object.__setattr__(self, "short", self.words)

    @property
    def at_glance(self) -> bool:
        """Whether the glance and the grid show it: every judged comparison, and one shown
        beside them so that the first screen has the cost with the gain (p50)."""
        return self.judged if self.glance is None else self.glance

    @property
    def aa_words(self) -> str:
        """The A/A table's name: "A/A control (QPS)"."""
        return f"A/A control ({self.short})"


def by_key(comparisons: Iterable[Comparison], key: str) -> Comparison:
    """The comparison of `comparisons` keyed `key` (KeyError naming the keys there are)."""
    listed = tuple(comparisons)
    for c in listed:
        if c.key == key:
            return c
    raise KeyError(f"{key!r} is not a comparison here ({', '.join(c.key for c in listed)})")


def judged(comparisons: Iterable[Comparison]) -> tuple[Comparison, ...]:
    """The comparisons the loop, the planner and a replication judge."""
    return tuple(c for c in comparisons if c.judged)


def targets(comparisons: Iterable[Comparison]) -> tuple[str, ...]:
    """The keys a precision `target` may name."""
    return tuple(c.key for c in comparisons if c.target and c.judged)


def primary(comparisons: Iterable[Comparison]) -> Comparison:
    """The comparison the A/A twin gets a table of (the first, if none says)."""
    listed = tuple(comparisons)
    return next((c for c in listed if c.aa), listed[0])


def verdicts(comparisons: Iterable[Comparison]) -> dict[str, str]:
    """An answer's verdict tables, words → key, in order: every comparison, then the A/A
    table of the primary one."""
    listed = tuple(comparisons)
    out = {c.words: c.key for c in listed}
    aa = [c for c in listed if c.aa]
    if aa:
        out[aa[0].aa_words] = AA_KEY
    return out


def throughput(comparisons: Iterable[Comparison]) -> str | None:
    """The key of the throughput table — the primary comparison, where more is better — whose
    judged cells get a CPU budget; None where the primary is a time or a latency."""
    listed = tuple(comparisons)
    first = primary(listed) if listed else None
    return first.key if first is not None and first.higher_is_better else None


def server_cost(comparisons: Iterable[Comparison]) -> Comparison | None:
    """The comparison of the server's own cost per transaction (`server_cost`), if any."""
    return next((c for c in comparisons if c.server_cost), None)


def with_tail_ratio(steps: Any) -> Any:
    """`steps` (a DataFrame) with the tail ratio's column: each step's p99 over its own p50
    (unchanged without both).

    >>> import pandas as pd
    >>> with_tail_ratio(pd.DataFrame({"latency_p50_ms": [2.0], "latency_p99_ms": [9.0]}))["tail_ratio"].tolist()
    [4.5]
    """
    p50, p99 = by_key(SYSBENCH, "p50").column, by_key(SYSBENCH, "p99").column
    if p50 not in steps or p99 not in steps:
        return steps
    return steps.assign(**{by_key(SYSBENCH, "tail").column: steps[p99] / steps[p50]})


def columns(comparisons: Iterable[Comparison]) -> dict[str, str]:
    """key → column, e.g. for a summary's prefixes."""
    return {c.key: c.column for c in comparisons}


# QPS (higher is better), the latency percentiles, the tail ratio and the server's CPU per
# transaction (lower is better) per workload × threads. p50 is shown, not judged: the loop measures to QPS and p95 (its paired
# SD is a fraction of p99's, docs/statistics.md) and p50 moves with the body p95 already
# speaks for — but it opens the report beside them (`glance`): a typical transaction's cost
# is the other side of a tail's gain.
SYSBENCH = (
    Comparison("qps", "qps", True, "throughput (QPS)", "QPS", aa=True),
    Comparison("p50", "latency_p50_ms", False, "p50 latency", "p50", target=False, judged=False, glance=True),
    Comparison("p95", "latency_p95_ms", False, "p95 latency", "p95", rests_on=0.05),
    Comparison("p99", "latency_p99_ms", False, "p99 latency", "p99", rests_on=0.01),
    Comparison("tail", "tail_ratio", False, "tail ratio (p99 ÷ p50)", "tail ratio", rests_on=0.01, over="p50"),
    # the server's own cost: on a host it shares with its client, what the server did, apart
    # from how much CPU sysbench left it (a change k moves QPS by about 1 ÷ (1 + k ÷ (1 + f)) − 1)
    Comparison("server_cpu", "cpu_server_us_per_txn", False, "server CPU per transaction", "server CPU/txn",
               target=False, explained=False, server_cost=True),
)

# sysbench steps counted by callgrind (`count`): the instructions the server's serving threads
# executed per transaction (judged), and all its threads' (shown: background work lands in a
# window by chance under valgrind). A count, not a time: never a throughput's budget
COUNTED = (
    Comparison("instructions", "instr_per_txn", False, "instructions per transaction", "instructions/txn",
               aa=True, explained=False),
    Comparison("instructions_all", "instr_all_per_txn", False,
               "instructions per transaction, all threads (background work included)", "all threads' instructions/txn",
               target=False, judged=False, explained=False),
)

# long sysbench steps judged by their seconds (the checkpoint study): the median per-second
# throughput after steady state, the run-level p99 and the stall seconds (compared as 1 +
# seconds: a step with none has a ratio too)
PER_SECOND = (
    Comparison("tps", "median_tps", True, "median throughput (TPS)", "TPS", aa=True),
    Comparison("p99", "latency_p99_ms", False, "p99 latency", "p99"),
    Comparison("stalls", "stall_seconds_1", False, "stall seconds (compared as 1 + seconds)", "stall seconds"),
)
