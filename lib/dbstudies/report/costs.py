"""The costs behind the verdicts: per-transaction costs compared per arm, the server's own answer and
the CPU budget of each judged cell."""

from __future__ import annotations

from typing import Any

from ..core.comparisons import server_cost, throughput
from ..kit.contract import Answer
from ..kit.study import params_of
from ..store.cpus import cpus_shared
from ..store.results import Run
from .shown import skip, table
from .tables import details

COST_COLUMNS = ["cost", "workload", "threads", "candidate", "median_baseline", "median_candidate",
                "delta_pct", "holm_ci_low_pct", "holm_ci_high_pct", "p_holm", "verdict", "mde_pct"]


def costs(moved: Any, tables: dict[str, Any]) -> None:
    """Why a verdict came out as it did: per cell judged better or worse, the costs per
    transaction that moved (`analysis.costs.moved`), then every cost's comparison, collapsed."""
    import pandas as pd
    from IPython.display import Markdown, display

    from ..analysis import in_percent
    if not tables:
        skip("This run recorded no per-transaction costs (measured before they were recorded).")
        return
    if moved.empty:
        display(Markdown("*No cell was judged better or worse, so there is no verdict to explain; "
                         "every cost's comparison is below.*"))
    else:  # the costs wrap in their column: one line each would push the table off the page
        display(Markdown("*CPU costs first, by the points of throughput change they account for "
                         "if the CPUs are the limit (the budget above); the other costs after, by "
                         "size: they say how the work changed, not how much of the verdict it explains.*"))
        display(table(moved).set_properties(subset=["costs that moved"],
                                            **{"white-space": "normal", "min-width": "30em"}))
    every = pd.concat([in_percent(t) for t in tables.values()], ignore_index=True)
    details("Every cost per transaction, compared", table(every, [c for c in COST_COLUMNS if c in every]),
            "Each cost is its own Holm family (lower is better): server and client CPU µs, their "
            "threads' context switches, KB read and written by the server process and by its "
            "datadir's device (the device's figures include anything else on it), redo bytes and "
            "rows read (MySQL: `Innodb_rows_read`; MariaDB: `Rows_read`) — each counter's increase "
            "over the step's transactions. A cell is "
            "compared where every step has the cost above zero. The two medians are each arm's own "
            "steps; the difference is the paired one (per-round ratios), the only estimate the "
            "verdicts, the CPU budget and the sentences use — where rounds drift, a median can fall "
            "while the paired difference rises.")


def cpu_budget(said: Answer, run: Run) -> None:
    """The server's own answer per compared cell (`analysis.server_view`), then the CPU
    budget of every cell the throughput verdicts judged better or worse
    (`analysis.budget.budget`): CPU used by server and client, their µs per transaction, the
    throughput change that cost predicts if the CPUs are the limit next to the measured one,
    and the client's share of the extra CPU."""
    from IPython.display import Markdown, display

    from ..analysis import budget, server_view
    key = throughput(said.comparisons)
    cpus = cpus_shared(params_of(run), run.record.host.cpus)
    view = server_view.table(said.tables, key, server_cost(said.comparisons)) if key else None
    if view is not None and len(view):
        display(Markdown(
            "*The server's own answer, per compared cell: its CPU per transaction (paired, as the "
            "verdicts are) beside throughput. Where client and server share the CPUs and fill them, "
            "a server change k moves throughput by about 1 ÷ (1 + k ÷ (1 + f)) − 1, f = sysbench's CPU "
            "per server CPU µs — less than the server's change alone (1 ÷ (1 + k) − 1, its own CPUs): "
            "throughput *understates* it; where throughput moved more, sysbench's own cost moved too and "
            "throughput *overstates* it. The last column: how long the server's threads were runnable "
            "but waiting for a CPU, per transaction (schedstat run delay).*"))
        display(table(view))
    b = budget.judged_budget(said.tables, key, cpus)
    if b.empty:
        skip("No cell was judged better or worse on throughput (or the run recorded no CPU per "
             "transaction): there is no verdict for a CPU budget to explain.")
        return
    display(Markdown(
        f"*The CPU budget of each judged cell: on this {cpus}-CPU host, server and client spend "
        "µs of CPU per transaction; if together they fill the CPUs, throughput can only be what "
        "those µs allow, so the change in µs per transaction predicts the change in throughput "
        "(baseline µs ÷ candidate µs − 1). Where the prediction matches the measured change, "
        "CPU per transaction explains the verdict — with the CPUs full, or with each transaction's "
        "own CPU setting its pace (few client threads); where it does not match, something else — "
        "waiting — sets the pace. A candidate's µs are the baseline's median times the paired "
        "difference of its cost table below (one estimate per quantity: an arm's own median can "
        "fall while the paired difference rises, when rounds drift).*"))
    display(table(budget.budget_table(b, cpus)))


