"""DBT3 (TPC-H) power test: the 22 queries, repeated, per candidate server configuration,
normalised to a baseline, with the plans each candidate chose (modelled on the DBT3 runs of
the MariaDB sysbench/DBT3 write-up in shared/sources).

Arms: the `candidates` (server variables, intents, optionally their own `flavour`), the first
the baseline; each server loads the TPC-H data once (generated offline, cached). Paired
(default): the candidates of one flavour share one server, each execution's session gets its
candidate's settings, and a round runs every query on every candidate back to back. Blocks:
a restart per candidate. Warm runs execute each query once unmeasured after each restart;
cold runs restart the server (page cache dropped) before every execution. A query that hits
the server-side `timeout` is recorded as timed out and shown ">timeout", never as a number.
Then the forced-order phase (`follow_up`): for every query whose candidates chose different
join orders, each candidate runs it again with its own plan and with every other order forced
by STRAIGHT_JOIN (EXPLAIN must show it in effect). The tables: `queries`.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd

from ... import tpch
from ...core import comparisons as C
from ...core import errors
from ...kit import studykit as S
from ...kit.contract import Answer
from ...measure.steps import SysbenchStudy
from ...store.schema import Table
from ...workloads import forcing
from ...workloads import sql as sql_
from . import queries as qa
from .queries import OWN_PLAN

if TYPE_CHECKING:
    from ...measure.context import Context
    from ...store.results import Run

# what governs the optimizer's plans and the joins' cost, shown in the report's settings table
GOVERNING = ("optimizer_use_condition_selectivity", "optimizer_switch", "optimizer_search_depth",
             "optimizer_prune_level", "join_cache_level", "join_buffer_size", "histogram_size",
             "use_stat_tables", "sort_buffer_size", "tmp_table_size", "max_heap_table_size")
QUERIES = Table("queries", 3, {
    "step": "int64", "phase": "str", "repeat": "int64", "arm": "str", "query": "int64",
    "order_of": "str", "started_at": "float64", "seconds": "float64", "timed_out": "bool",
    "rows": "int64", "handler_reads": "int64", "cold": "bool", "answer": "str",
    "pair": "int64", "position": "int64",
}, "one execution of a TPC-H query (phase warmup, measure or forced); order_of: the candidate "
   "whose join order was forced, empty for its own plan; seconds: NaN on a timeout; answer: "
   "'ok', how it differs from DuckDB's reference, or empty when not checked; pair: the paired "
   "design's pair (0 in blocks and warm-ups), position: the execution's place in it")
LOADS = Table("loads", 1, {"flavour": "str", "table": "str", "rows": "int64", "load_s": "float64",
                           "index_s": "float64"}, "TPC-H load and index build per table")
PLANS = Table("plans", 1, {"arm": "str", "query": "int64", "select_id": "int64", "position": "int64",
                           "table": "str", "access_type": "str", "key": "str", "rows": "float64",
                           "filtered": "float64"}, "the join order of each query's plan per candidate")
FORCED = Table("forced", 1, {"arm": "str", "query": "int64", "order_of": "str", "own_order": "str",
                             "wanted_order": "str", "plan_in_effect": "str", "forced": "bool",
                             "reason": "str", "sql": "str"},
               "each STRAIGHT_JOIN rewrite: the candidate (arm), the order of another candidate it "
               "was to force, the plan EXPLAIN showed, whether that order is in effect (reason "
               "when not) and the rewritten SQL")


@dataclass(frozen=True, kw_only=True)
class Params(S.StudyParams):
    """The study's parameters (its README.md: what each means, per profile)."""
    MEANINGS: ClassVar[dict[str, str]] = {  # the study READMEs' parameter tables, `dbstudies list`
        "flavour": "the server of candidates that name none",
        "repeats": "paired rounds: executions of each query per candidate (blocks: one block each; with a `target`: the rounds every query gets first)",
        "seed": "random seed: order of blocks and queries",
        "settings": "settings of every candidate",
        "design": (
            "`paired`: the candidates of one flavour share one server, each execution's session set"
            " to its candidate's settings (a setting no session can take stops the run before the "
            "load; a candidate with its own flavour or an intent gets a server of its own), every "
            "query on every candidate back to back per round; `blocks`: per repeat, each candidate "
            "in a block of its own after a restart with its configuration (see Statistics)"),
        "restart_every": (
            "paired design: every this many rounds the server is restarted and every candidate runs"
            " every query once, unmeasured (warm runs); a shared server's start falls on both "
            "candidates of a pair alike, so rarely is enough (see Statistics)"),
        "scale_factor": "TPC-H scale factor (reference answers exist for 0.01, 0.1 and 1)",
        "engine": "storage engine of the tables: InnoDB, MyISAM (as our source) or Aria",
        "candidates": (
            "named configurations (server variables, intents, optionally a `flavour`), the first "
            "the baseline"),
        "queries": "the query numbers run",
        "cold": (
            "true: a cold restart (OS page cache dropped, no buffer-pool reload) before every "
            "execution; false: warm, every query once unmeasured after each restart"),
        "timeout": "seconds a query may run (server-side); beyond it: `>timeout` (the source: 7200)",
    }
    scale_factor: float
    engine: str
    candidates: dict
    queries: list[int]
    cold: bool
    timeout: float
    RESERVED: ClassVar[frozenset[str]] = frozenset()
    SHARED_SERVER: ClassVar[bool] = True  # candidates' settings are given to each session
    COMPARISONS: ClassVar[tuple[C.Comparison, ...]] = (  # per query, from its measured executions
        C.Comparison("seconds", "seconds", False, "seconds per query", "seconds", by=("query",)),)

    def check(self) -> list[str]:
        problems = S.configs_problems("candidates", self.candidates, self.flavour)
        if not self.scale_factor > 0:
            problems.append(f"scale_factor: must be > 0, got {self.scale_factor}")
        if self.engine not in tpch.ENGINES:
            problems.append(f"engine: one of {', '.join(tpch.ENGINES)}, got {self.engine!r}")
        if not self.queries or len(set(self.queries)) != len(self.queries) or not all(
                isinstance(q, int) and 1 <= q <= 22 for q in self.queries):
            problems.append(f"queries: distinct query numbers 1…22, got {self.queries}")
        if not self.timeout > 0:
            problems.append(f"timeout: must be > 0 seconds, got {self.timeout}")
        try:
            tpch.generator_available()
        except errors.WorkloadError as e:
            problems.append(f"scale_factor: {e}")
        return problems

    def servers(self) -> list[str]:
        """The flavours started (a candidate may name its own)."""
        return S.config_servers(self.candidates, self.flavour)


_CANDIDATES = {"selectivity 4 (default)": {}, "selectivity 1": {"optimizer_use_condition_selectivity": 1}}
_COMMON = dict(engine="InnoDB", candidates=_CANDIDATES, design="paired")
ALL = list(range(1, 23))
PROFILES: dict[str, dict[str, Any]] = {
    "smoke": dict(_COMMON, scale_factor=0.01, queries=[3, 5, 7, 13], repeats=2, cold=False,
                  timeout=30),
    # paired rounds on one shared server: 22 queries × 2 candidates back to back per round.
    # Measured here (6 rounds, a restart every round): pairs' log-ratio SD 0.03–0.29 (median
    # 0.08), none of their variance between rounds — on a shared server a start's luck falls
    # on both candidates of a pair alike — so 8 rounds with a restart every 4 (≈ 16 % MDE,
    # `dbstudies plan`) rather than 6 with a restart (and warm-up) each (21 %)
    "quick": dict(_COMMON, scale_factor=1, queries=ALL, repeats=8, restart_every=4, cold=False,
                  timeout=120),
    # the source: each query 5 times on cold caches, a 2-hour timeout
    "full": dict(_COMMON, scale_factor=10, queries=ALL, repeats=5, cold=True, timeout=7200,
                 settings={"innodb_buffer_pool_size": "8G"}),
}


# ---------------------------------------------------------------- hooks


def _variant(ctx: "Context", cell: dict[str, Any]) -> tuple[str | None, str]:
    """The SQL a cell executes on this candidate and whose order it forces (OWN_PLAN: none);
    None when the order could not be forced. Rewritten and verified once per candidate."""
    query = int(cell["query"])
    text = tpch.queries()[query]
    if "order_of" not in cell:
        return text, OWN_PLAN
    key = (ctx.arm.label, query, cell["order_of"])
    variants = ctx.memo.setdefault("variants", {})
    if key not in variants:
        variants[key] = _force(ctx, query, cell["order_of"], text)
    return variants[key]


def _force(ctx: "Context", query: int, order_of: str, text: str) -> tuple[str | None, str]:
    """This candidate's SQL with `order_of`'s join order forced (`forcing.force_plan`; EXPLAIN must
    show it in effect), recorded (FORCED) either way; None when it could not be forced."""
    if "plans" not in ctx.memo:
        ctx.memo["plans"] = ctx.run.table(PLANS)
    own, wanted = (forcing.plan_rows(ctx.memo["plans"], label, query) for label in (ctx.arm.label, order_of))
    if sql_.order_signature(own) == sql_.order_signature(wanted):
        return text, OWN_PLAN  # this candidate chose that order itself
    with _session(ctx) as session:
        f = forcing.force_plan(text, own, wanted, session.explain)
    ctx.run.append(FORCED, pd.DataFrame([{
        "arm": ctx.arm.label, "query": query, "order_of": order_of,
        "own_order": sql_.order_signature(own), "wanted_order": sql_.order_signature(wanted),
        "plan_in_effect": f.in_effect, "forced": f.sql is not None, "reason": f.reason,
        "sql": f.sql or text}]))
    return f.sql, order_of


def _per_query(p: Params) -> float:
    return max(0.05, 3.0 * p.scale_factor) + (4 if p.cold else 0)


def _session(ctx: "Context") -> Any:
    """A session on the candidate's server, with the candidate's settings where it shares
    the server with others (`ctx.session`)."""
    return sql_.Session(ctx.server, "tpch", settings=ctx.session)


def _execute(ctx: "Context", cell: dict[str, Any], phase: str, sql: str, order_of: str) -> None:
    reference = tpch.reference(ctx.params.scale_factor)
    with _session(ctx) as session:
        t0 = time.time()
        e = session.execute(sql, timeout=ctx.params.timeout, keep_result=reference is not None)
    reads = sum(v for k, v in e.counters.items() if k.startswith("Handler_read"))
    answer = ""
    if reference is not None and not e.timed_out:
        problems = tpch.check(int(cell["query"]), e.result, reference[int(cell["query"])])
        answer = "; ".join(problems)[:500] if problems else "ok"
    ctx.run.append(QUERIES, pd.DataFrame([{
        "step": cell["step"], "phase": phase, "repeat": ctx.repeat, "arm": ctx.arm.label,
        "query": cell["query"], "order_of": order_of, "started_at": t0,
        "seconds": e.seconds if e.seconds is not None else math.nan, "timed_out": e.timed_out,
        "rows": e.rows, "handler_reads": reads, "cold": ctx.params.cold, "answer": answer,
        "pair": cell.get("pair", 0), "position": cell.get("position", 0)}]))


def _record_plan(ctx: "Context", query: int) -> None:
    with _session(ctx) as session:
        order = sql_.join_order(session.explain(tpch.queries()[query]))
    rows = pd.DataFrame(order).assign(arm=ctx.arm.label, query=query)
    rows["key"] = rows["key"].fillna("").astype(str)
    rows["access_type"] = rows["access_type"].fillna("").astype(str)
    ctx.run.append(PLANS, rows[list(PLANS.columns)])


# ---------------------------------------------------------------- the tables it reports
# (computed by `queries`; the notebook shows them)


# per query, then the geometric mean over the queries
VERDICTS = {**C.verdicts(Params.COMPARISONS), "geometric mean over the queries": "geo"}


class Dbt3Plans(SysbenchStudy[Params]):
    """Its own steps (one query's executions on one candidate), one after another."""
    Params, PROFILES, GOVERNING = Params, PROFILES, GOVERNING
    LOADS = LOADS  # the data load's table, which its notebook shows

    def describe(self, p: Params, steps: int) -> str:
        """The plan in one line (`schedule.describe`), `steps` long."""
        arms_ = S.with_control(self.arms(p), p)
        return (f"{steps} query executions: {p.repeats} repeats × {len(arms_)} "
                f"candidates ({', '.join(a.label for a in arms_)}) × {len(p.queries)} queries at SF {p.scale_factor:g}")

    def arms(self, p: Params) -> list[S.Arm]:
        """One arm per candidate, the baseline first."""
        return S.config_arms(p.candidates, p.flavour)

    def cells(self, p: Params) -> list[dict[str, Any]]:
        """What one block measures: every query once."""
        return [{"query": q} for q in p.queries]

    def prepare(self, ctx: "Context") -> None:
        """Generate (cached) and load the data into this server; the load times are recorded."""
        p = ctx.params
        data = tpch.generate(p.scale_factor)
        loaded = tpch.load(ctx.server, data, engine=p.engine)
        ctx.run.append(LOADS, pd.DataFrame(loaded).assign(flavour=ctx.server.flavour.name))

    def warmup(self, ctx: "Context") -> None:
        """Warm runs: every cell of the block (paired: of a round) once after the restart, for
        the candidate `ctx.arm` (the forced-order phase: each variant as it will be timed),
        recorded with phase warmup."""
        if not ctx.params.cold:
            for cell in ctx.cells:
                sql, order_of = _variant(ctx, cell)
                if sql is not None:
                    ctx.warmups[0] -= 1
                    _execute(ctx, {**cell, "step": ctx.warmups[0]}, "warmup", sql, order_of)

    def step(self, ctx: "Context", cell: dict[str, Any]) -> None:
        """One execution of one query (cold: after a cold restart); its plan on the first repeat
        of the measurement. In the forced-order phase, the cell's variant: the candidate's own plan
        or another's join order forced (a variant that could not be forced is not executed)."""
        sql, order_of = _variant(ctx, cell)
        if sql is None:
            return
        if ctx.params.cold:
            ctx.server.cold_restart(ctx.start_settings(), intent=ctx.arm.intent)
        if ctx.repeat == 1 and "order_of" not in cell:
            _record_plan(ctx, cell["query"])
        _execute(ctx, cell, "forced" if "order_of" in cell else "measure", sql, order_of)

    def follow_up(self, run: "Run", p: Params) -> list[dict[str, Any]]:
        """The forced-order phase's cells: for every query whose candidates chose different join
        orders (their plans of the measurement), one cell per distinct order. Every candidate
        runs them all: its own order as it is, the others forced."""
        return forcing.distinct_orders(run.table(PLANS), [a.label for a in self.arms(p)], p.queries)

    def block_seconds(self, p: Params) -> float:
        """≈ 3 s per query at SF 1 here (22 queries in 60–70 s warm on MariaDB 10.11), scaled;
        warm runs go through the queries twice (the warm-up first)."""
        return len(p.queries) * _per_query(p) * (1 if p.cold else 2)

    def warmup_seconds(self, p: Params) -> float:
        """The warm-up's part of `block_seconds`: one pass over the queries (none when cold)."""
        return 0.0 if p.cold else len(p.queries) * _per_query(p)

    def executions(self, run: "Run", phase: str = "measure") -> "pd.DataFrame":
        """The measured executions (warm-ups dropped); phase "forced": the forced-order phase's."""
        q = run.table(QUERIES)
        return q[q["phase"] == phase].reset_index(drop=True)

    def observations(self, run: "Run", p: Params) -> "pd.DataFrame":
        """What its comparison judges (`dbstudies plan`, a replication): the measured executions."""
        return self.executions(run)

    def answers_line(self, run: "Run", p: Params) -> str:
        """Every measured execution's result against DuckDB's reference answers."""
        q = run.table(QUERIES)
        return tpch.answers_line(q[q["phase"] != "warmup"], p.scale_factor)

    def answer(self, run: "Run", p: Params) -> Answer:
        """What the run answers: the measured executions (`ex`), their `summary`, every
        candidate against the baseline per query (`seconds`) and over the queries (`geo`), the plans
        that differ (`diff`), the forced join orders (`forced`), and the conclusion."""
        measured = S.with_control(self.arms(p), p)
        ex = self.executions(run)
        t = {"ex": ex, "summary": qa.summary(ex), "seconds": qa.relative(ex, measured, p),
             "geo": qa.geomean(ex, measured, p), "diff": qa.plan_diff(run.table(PLANS), measured, p.queries),
             "forced": qa.forced(run.table(FORCED), self.executions(run, "forced"), p)}
        answers = self.answers_line(run, p)
        said = qa.conclusion(t["seconds"], t["geo"], t["diff"], measured, p, t["forced"], answers)
        return Answer(t, dict(VERDICTS), said, comparisons=p.COMPARISONS,
                      headline=qa.headline(t["geo"], t["diff"], measured, p, answers))


STUDY = Dbt3Plans()
