"""DBT3 (TPC-H) power test: the 22 queries, repeated, per candidate server configuration,
normalised to a baseline, with the plans each candidate chose (modelled on the DBT3 runs of
the MariaDB sysbench/DBT3 write-up in shared/sources).

Arms: the `candidates` — named configurations (server variables such as
`optimizer_use_condition_selectivity`, intents, and optionally their own `flavour`), the first
the baseline. Each server loads the TPC-H data once (generated offline at `scale_factor`,
cached). The paired design (default) runs the candidates of one flavour on one shared server,
each execution's session given its candidate's settings (a setting no session can take is a
parameter error before the load; a candidate with an intent or its own flavour gets a server
of its own); a round runs every query on every candidate back to back, in a balanced order,
and the verdicts come from the per-round log ratios. The block design restarts the server
with one candidate per block. Warm runs execute each query once unmeasured (per candidate)
after each restart; cold runs restart the server (OS page cache dropped, no buffer-pool
reload) before every execution. Each query has a server-side `timeout`: a query that hits it is
recorded as timed out (no seconds) and shown ">timeout", never as a number.

Per query, every candidate's median seconds is compared with the baseline's (ratio of
geometric means, CI, a paired t on the per-round log ratios with the variance moderated across
the queries — blocks: Welch on logs —, Holm across the queries; draw below `draw_threshold`);
the geometric mean over the queries is compared per repeat. EXPLAIN FORMAT=JSON of every
query on every candidate gives the join orders; queries whose orders differ are listed.

Then the forced-order phase (`follow_up`): for every query whose candidates chose different
join orders, every candidate runs it `repeats` more times with its own plan and with each
other order forced by STRAIGHT_JOIN (`sql.force_order`; EXPLAIN must show the forced order in
effect, else the variant is reported as not forced and not timed). Forced vs own plan, and
forced vs the time of the candidate whose order it is, are compared like the queries above.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import dbstudies

from .. import study as S
from ..schema import Table

if TYPE_CHECKING:
    import pandas as pd

    from ..experiment import Context
    from ..results import Run

QUERIES = Table("queries", 3, {
    "step": "int64", "phase": "str", "repeat": "int64", "arm": "str", "query": "int64",
    "order_of": "str", "started_at": "float64", "seconds": "float64", "timed_out": "bool",
    "rows": "int64", "handler_reads": "int64", "cold": "bool", "answer": "str",
    "pair": "int64", "position": "int64",
}, "one execution of a TPC-H query (phase warmup, measure, or forced: the forced-order phase); "
   "order_of: the candidate whose join order was forced with STRAIGHT_JOIN, empty for the "
   "candidate's own plan; seconds is NaN when it timed out; answer: 'ok', how the result "
   "differs from DuckDB's reference answer, or empty when not checked (a timeout, or a scale "
   "factor without reference answers); pair: the paired design's pair (the candidates' "
   "executions of one cell in one round, back to back; 0 in blocks and warm-ups), position: "
   "the execution's place in it")
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
OWN_PLAN = ""  # order_of of an execution with the candidate's own plan
CENSORED = "timeout (censored: not tested)"


@dataclass(frozen=True, kw_only=True)
class Params(S.StudyParams):
    """The study's parameters (README: "DBT3 study parameters")."""
    scale_factor: float
    engine: str
    candidates: dict
    queries: list[int]
    cold: bool
    timeout: float
    RESERVED: ClassVar[frozenset[str]] = frozenset()
    SHARED_SERVER: ClassVar[bool] = True  # candidates' settings are given to each session

    def check(self) -> list[str]:
        problems = S.configs_problems("candidates", self.candidates, self.flavour)
        if not self.scale_factor > 0:
            problems.append(f"scale_factor: must be > 0, got {self.scale_factor}")
        if self.engine not in dbstudies.tpch.ENGINES:
            problems.append(f"engine: one of {', '.join(dbstudies.tpch.ENGINES)}, got {self.engine!r}")
        if not self.queries or len(set(self.queries)) != len(self.queries) or not all(
                isinstance(q, int) and 1 <= q <= 22 for q in self.queries):
            problems.append(f"queries: distinct query numbers 1…22, got {self.queries}")
        if not self.timeout > 0:
            problems.append(f"timeout: must be > 0 seconds, got {self.timeout}")
        try:
            dbstudies.tpch.generator_available()
        except dbstudies.errors.WorkloadError as e:
            problems.append(f"scale_factor: {e}")
        return problems

    def servers(self) -> list[str]:
        """The flavours started (a candidate may name its own)."""
        return S.config_servers(self.candidates, self.flavour)


_CANDIDATES = {"selectivity 4 (default)": {}, "selectivity 1": {"optimizer_use_condition_selectivity": 1}}
_COMMON = dict(flavour="mariadb-10.11", seed=1, draw_threshold=0.05, aa_control=False,
               server_cpus=None, settings={}, engine="InnoDB", candidates=_CANDIDATES, budget=None,
               design="paired", restart_every=1)
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


def arms(p: Params) -> list[S.Arm]:
    """One arm per candidate, the baseline first."""
    return S.config_arms(p.candidates, p.flavour)


def cells(p: Params) -> list[dict[str, Any]]:
    """What one block measures: every query once."""
    return [{"query": q} for q in p.queries]


# ---------------------------------------------------------------- hooks

def prepare(ctx: "Context") -> None:
    """Generate (cached) and load the data into this server; the load times are recorded."""
    import pandas as pd
    p = ctx.params
    data = dbstudies.tpch.generate(p.scale_factor)
    loaded = dbstudies.tpch.load(ctx.server, data, engine=p.engine)
    ctx.run.append(LOADS, pd.DataFrame(loaded).assign(flavour=ctx.server.flavour.name))


def warmup(ctx: "Context") -> None:
    """Warm runs: every cell of the block (paired: of a round) once after the restart, for
    the candidate `ctx.arm` (the forced-order phase: each variant as it will be timed),
    recorded with phase warmup."""
    if not ctx.params.cold:
        for cell in ctx.cells:
            sql, order_of = _variant(ctx, cell)
            if sql is not None:
                ctx.warmups[0] -= 1
                _execute(ctx, {**cell, "step": ctx.warmups[0]}, "warmup", sql, order_of)


def step(ctx: "Context", cell: dict[str, Any]) -> None:
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


def follow_up(p: Params, run: "Run") -> list[dict[str, Any]]:
    """The forced-order phase's cells: for every query whose candidates chose different join
    orders (their plans of the measurement), one cell per distinct order, named by the first
    candidate that chose it. Every candidate runs them all: its own order as it is, the others
    forced."""
    plans = run.table(PLANS)
    cells = []
    for q in p.queries:
        by_order: dict[str, str] = {}
        for a in arms(p):
            own = _order(plans, a.label, q)
            if own:
                by_order.setdefault(dbstudies.workloads.sql.order_signature(own), a.label)
        if len(by_order) > 1:
            cells += [{"query": q, "order_of": label} for label in by_order.values()]
    return cells


def _order(plans: "pd.DataFrame", arm: str, query: int) -> list[dict[str, Any]]:
    part = plans[(plans["arm"] == arm) & (plans["query"] == query)]
    return part.sort_values(["select_id", "position"]).to_dict("records")


def _variant(ctx: "Context", cell: dict[str, Any]) -> tuple[str | None, str]:
    """The SQL a cell executes on this candidate and whose order it forces (OWN_PLAN: none);
    None when the order could not be forced. Rewritten and verified once per candidate."""
    query = int(cell["query"])
    text = dbstudies.tpch.queries()[query]
    if "order_of" not in cell:
        return text, OWN_PLAN
    key = (ctx.arm.label, query, cell["order_of"])
    variants = ctx.memo.setdefault("variants", {})
    if key not in variants:
        variants[key] = _force(ctx, query, cell["order_of"], text)
    return variants[key]


def _force(ctx: "Context", query: int, order_of: str, text: str) -> tuple[str | None, str]:
    """Rewrite `text` so that this candidate joins in `order_of`'s order: every query block of
    that plan with two or more tables is forced (so that blocks which already agree keep their
    order under the STRAIGHT_JOIN the outer SELECT gets; one that cannot be forced is left as
    it is unless it differs), then EXPLAIN must show every forced block in the wanted order.
    The attempt is recorded (FORCED) either way."""
    import pandas as pd
    sql_ = dbstudies.workloads.sql
    if "plans" not in ctx.memo:
        ctx.memo["plans"] = ctx.run.table(PLANS)
    own, wanted = (_order(ctx.memo["plans"], label, query) for label in (ctx.arm.label, order_of))
    if sql_.order_signature(own) == sql_.order_signature(wanted):
        return text, OWN_PLAN  # this candidate chose that order itself
    blocks = _blocks(wanted)
    differing = [tables for sid, tables in blocks.items() if _blocks(own).get(sid) != tables]
    forced, reason, in_effect, done = text, "", "", []
    try:
        for tables in blocks.values():
            try:
                forced = sql_.force_order(forced, tables)
                done.append(tables)
            except sql_.OrderNotForced:
                if tables in differing:
                    raise
        with _session(ctx) as session:
            plan = session.explain(forced)
        in_effect = sql_.order_signature(sql_.join_order(plan))
        for tables in done:
            sql_.verify_order(plan, tables)
    except sql_.OrderNotForced as e:
        reason = str(e)
    ctx.run.append(FORCED, pd.DataFrame([{
        "arm": ctx.arm.label, "query": query, "order_of": order_of,
        "own_order": sql_.order_signature(own), "wanted_order": sql_.order_signature(wanted),
        "plan_in_effect": in_effect, "forced": not reason, "reason": reason, "sql": forced}]))
    return (None if reason else forced), order_of


def _blocks(order: list[dict[str, Any]]) -> dict[int, list[str]]:
    """A plan's query blocks with two or more real tables (not <derived…>/<subquery…>), each
    its tables in join order."""
    blocks: dict[int, list[str]] = {}
    for t in order:
        if not str(t["table"]).startswith("<"):
            blocks.setdefault(int(t["select_id"]), []).append(str(t["table"]))
    return {sid: tables for sid, tables in blocks.items() if len(tables) >= 2}


def block_seconds(p: Params) -> float:
    """A rough estimate: ≈ 3 s per query at SF 1 on these machines (measured: 22 queries in
    60–70 s warm on MariaDB 10.11), scaled; warm
    runs go through the queries twice (the warm-up first)."""
    return len(p.queries) * _per_query(p) * (1 if p.cold else 2)


def warmup_seconds(p: Params) -> float:
    """The warm-up's part of `block_seconds`: one pass over the queries (none when cold)."""
    return 0.0 if p.cold else len(p.queries) * _per_query(p)


def _per_query(p: Params) -> float:
    return max(0.05, 3.0 * p.scale_factor) + (4 if p.cold else 0)


def _session(ctx: "Context") -> Any:
    """A session on the candidate's server, with the candidate's settings where it shares
    the server with others (`ctx.session`)."""
    return dbstudies.workloads.sql.Session(ctx.server, "tpch", settings=ctx.session)


def _execute(ctx: "Context", cell: dict[str, Any], phase: str, sql: str, order_of: str) -> None:
    import time

    import pandas as pd
    reference = _reference(ctx.params.scale_factor)
    with _session(ctx) as session:
        t0 = time.time()
        e = session.execute(sql, timeout=ctx.params.timeout, keep_result=reference is not None)
    reads = sum(v for k, v in e.counters.items() if k.startswith("Handler_read"))
    answer = ""
    if reference is not None and not e.timed_out:
        problems = dbstudies.tpch.check(int(cell["query"]), e.result, reference[int(cell["query"])])
        answer = "; ".join(problems)[:500] if problems else "ok"
    ctx.run.append(QUERIES, pd.DataFrame([{
        "step": cell["step"], "phase": phase, "repeat": ctx.repeat, "arm": ctx.arm.label,
        "query": cell["query"], "order_of": order_of, "started_at": t0,
        "seconds": e.seconds if e.seconds is not None else math.nan, "timed_out": e.timed_out,
        "rows": e.rows, "handler_reads": reads, "cold": ctx.params.cold, "answer": answer,
        "pair": cell.get("pair", 0), "position": cell.get("position", 0)}]))


@functools.cache
def _reference(sf: float) -> dict[int, Any] | None:
    """DuckDB's reference answers at `sf`, None at a scale factor that has none."""
    try:
        return dbstudies.tpch.answers(sf)
    except dbstudies.errors.WorkloadError:
        return None


def answers_line(run: "Run", p: Params) -> str:
    """What the results' check found, for the conclusion: every measured execution's rows
    against DuckDB's reference answers, or why they were not checked."""
    q = run.table(QUERIES)
    q = q[q["phase"] != "warmup"]
    if _reference(p.scale_factor) is None:
        return (f"Answers not checked: DuckDB has reference answers for scale factors "
                f"{', '.join(f'{a:g}' for a in dbstudies.tpch.ANSWER_SCALES)} only, not {p.scale_factor:g}.")
    checked = q[q["answer"] != ""]
    wrong = checked[checked["answer"] != "ok"]
    line = (f"Answers: {len(checked) - len(wrong)} of {len(checked)} checked executions match "
            f"DuckDB's reference answers at SF {p.scale_factor:g}")
    if wrong.empty:
        return line + "."
    first = wrong.iloc[0]
    where = ", ".join(sorted({f"Q{r.query} on {r.arm}" + (f" (order of {r.order_of})" if r.order_of else "")
                              for r in wrong.itertuples()}))
    return f"{line}; **{len(wrong)} differ** ({where}), e.g. {first['answer']}."


def _record_plan(ctx: "Context", query: int) -> None:
    import pandas as pd
    with _session(ctx) as session:
        order = dbstudies.workloads.sql.join_order(session.explain(dbstudies.tpch.queries()[query]))
    rows = pd.DataFrame(order).assign(arm=ctx.arm.label, query=query)
    rows["key"] = rows["key"].fillna("").astype(str)
    rows["access_type"] = rows["access_type"].fillna("").astype(str)
    ctx.run.append(PLANS, rows[list(PLANS.columns)])


# ---------------------------------------------------------------- analysis

def executions(run: "Run", phase: str = "measure") -> "pd.DataFrame":
    """The measured executions (warm-ups dropped); phase "forced": the forced-order phase's."""
    q = run.table(QUERIES)
    return q[q["phase"] == phase].reset_index(drop=True)


def paired_tables(run: "Run") -> list[tuple[str, "pd.DataFrame", list[str], str]]:
    """What `dbstudies plan` predicts (planner): the per-query table, from the measured
    executions' seconds."""
    return [("seconds per query", executions(run), ["query"], "seconds")]


def summary(ex: "pd.DataFrame") -> "pd.DataFrame":
    """Per query × candidate: n, timeouts, median, min and max seconds (of those that finished)."""
    g = ex.groupby(["query", "arm"], sort=False)
    out = g.agg(n=("seconds", "size"), timeouts=("timed_out", "sum"), median_s=("seconds", "median"),
                min_s=("seconds", "min"), max_s=("seconds", "max"),
                handler_reads=("handler_reads", "median")).reset_index()
    return out.sort_values(["query"], kind="stable", ignore_index=True)


def relative(ex: "pd.DataFrame", p: Params) -> "pd.DataFrame":
    """Every candidate against the baseline per query (seconds, lower is better), one Holm
    family over the table. A query with a timeout on either side is not tested (its times
    are censored): its verdict says so."""
    a = arms(p)
    return _compare(ex, ["query"], "arm", a[0].label, [c.label for c in a[1:] if c.twin_of is None], p)


def _compare(ex: "pd.DataFrame", by: list[str], factor: str, baseline: str, candidates: list[str],
             p: Params) -> "pd.DataFrame":
    """Seconds of each candidate vs the baseline per group of `by` (lower is better), one Holm
    family, paired by round when the executions were measured in pairs; a group where either
    side has a timeout is not tested (censored), said so."""
    import pandas as pd
    timed_out = ex.groupby([*by, factor])["timed_out"].any().to_dict()
    keys = list(ex[by].drop_duplicates().itertuples(index=False, name=None))
    censored = {(k, c) for k in keys for c in candidates
                if timed_out.get((*k, baseline), False) or timed_out.get((*k, c), False)}
    rows = zip(ex[by].itertuples(index=False, name=None), ex[factor])
    clean = ex[[not (timed_out.get((*k, f), False) if f == baseline else (k, f) in censored)
                for k, f in rows]]
    rel = dbstudies.experiment.design_table(clean, by=by, factor=factor, baseline=baseline,
                                            candidates=candidates, value="seconds",
                                            higher_is_better=False, threshold=p.draw_threshold)
    said = [{"candidate": c, **dict(zip(by, k)), "verdict": CENSORED,
             "bound": censored_bound(*(_side(ex, by, k, factor, x) for x in (baseline, c)), p.timeout)}
            for k, c in sorted(censored) if (*k, c) in timed_out]
    return pd.concat([rel, pd.DataFrame(said)], ignore_index=True) if said else rel


def _side(ex: "pd.DataFrame", by: list[str], key: tuple, factor: str, level: str) -> "pd.DataFrame":
    mask = ex[factor] == level
    for col, v in zip(by, key):
        mask &= ex[col] == v
    return ex[mask]


def censored_bound(base: "pd.DataFrame", cand: "pd.DataFrame", timeout: float) -> str:
    """What a censored comparison still says: with a timeout on one side only, a timed-out
    execution took at least `timeout`, so the ratio of geometric means (candidate/baseline)
    is at least (candidate's timeouts) or at most (baseline's) the ratio computed with the
    timeout in their place: "≥ 4,100 %" / "≤ 3 %". Empty when both sides timed out.

    >>> import pandas as pd
    >>> b = pd.DataFrame({"seconds": [2.0, 2.0], "timed_out": [False, False]})
    >>> c = pd.DataFrame({"seconds": [float("nan")] * 2, "timed_out": [True, True]})
    >>> censored_bound(b, c, 120), censored_bound(c, b, 120), censored_bound(c, c, 120)
    ('≥ 6,000 %', '≤ 1.7 %', '')
    """
    import numpy as np
    tb, tc = bool(base["timed_out"].any()), bool(cand["timed_out"].any())
    if tb == tc or base.empty or cand.empty:
        return ""
    def gm(side: "pd.DataFrame") -> float:
        return float(np.exp(np.log(side["seconds"].where(~side["timed_out"], timeout)).mean()))
    pct = gm(cand) / gm(base) * 100
    return f"{'≥' if tc else '≤'} {pct:,.0f} %" if pct >= 10 else f"{'≥' if tc else '≤'} {pct:.2g} %"


def pair_ratios(ex: "pd.DataFrame", p: Params) -> "pd.DataFrame":
    """Every round's time ratio candidate / baseline per query (paired executions; timed-out
    ones left out), for `plots.pair_ratios`; empty for blocks."""
    import pandas as pd
    if not dbstudies.experiment.is_paired(ex):
        return pd.DataFrame()
    a = arms(p)
    done = ex[~ex["timed_out"]]
    out = pd.concat([dbstudies.stats.pair_up(done, by=["query"], factor="arm", baseline=a[0].label,
                                             candidate=c.label, value="seconds", pair="repeat")
                     .assign(candidate=c.label) for c in a[1:] if c.twin_of is None], ignore_index=True)
    return out.assign(ratio=out["b"] / out["a"], all="all queries")


def query_table(summ: "pd.DataFrame", rel: "pd.DataFrame", p: Params) -> "pd.DataFrame":
    """The sources' per-query table: seconds per candidate (">timeout" when every execution
    timed out), each candidate relative to the baseline (% of its time) and the verdict."""
    import pandas as pd
    names = [a.label for a in arms(p)]
    rows = []
    for q in p.queries:
        row: dict[str, Any] = {"query": f"Q{q}"}
        for name in names:
            s = summ[(summ["query"] == q) & (summ["arm"] == name)]
            row[name] = "" if s.empty else _seconds_text(s.iloc[0], p.timeout)
        for name in names[1:]:
            r = rel[(rel["query"] == q) & (rel["candidate"] == name)]
            if not r.empty:
                row[f"{name} vs baseline"] = _relative_text(r.iloc[0])
        rows.append(row)
    return pd.DataFrame(rows)


def _seconds_text(s: Any, timeout: float) -> str:
    """Median seconds of a summary row (n, timeouts, median_s): ">T" when every execution
    timed out, the count of those that did after the median of the others."""
    if s["timeouts"] == s["n"]:
        return f">{timeout:g}"
    return f"{s['median_s']:.3g}" + (f" ({int(s['timeouts'])} >{timeout:g})" if s["timeouts"] else "")


def _share(r: dict[str, Any], whose: str) -> str:
    """A comparison for the conclusion: "35 % of its own plan's time [30, 41] → **better**"."""
    import pandas as pd
    if not r:
        return ""
    if pd.isna(r.get("ratio")):
        return f"vs {whose} time: {_relative_text(r)}"
    return (f"{r['ratio'] * 100:.0f} % of {whose} time [{r['ci_low'] * 100:.0f}, "
            f"{r['ci_high'] * 100:.0f}] → **{r['verdict']}**")


def _relative_text(r: Any) -> str:
    """A comparison row as the tables show it: 35% [30, 41] better (% of the baseline's time)."""
    import pandas as pd
    if pd.isna(r.get("ratio")):
        bound = r.get("bound")
        return f"{bound} {r['verdict']}" if isinstance(bound, str) and bound else str(r["verdict"])
    return f"{r['ratio'] * 100:.0f}% [{r['ci_low'] * 100:.0f}, {r['ci_high'] * 100:.0f}] {r['verdict']}"


def geomean(ex: "pd.DataFrame", p: Params) -> "pd.DataFrame":
    """Per candidate × repeat (round): the geometric mean of the queries' seconds (repeats
    where a query timed out are left out), then each candidate against the baseline (paired by
    round when the executions were)."""
    import numpy as np
    per_repeat = (ex[~ex["timed_out"]].groupby(["arm", "repeat"])
                  .agg(n=("seconds", "size"), geomean_s=("seconds", lambda s: float(np.exp(np.log(s).mean()))))
                  .reset_index())
    per_repeat = per_repeat[per_repeat["n"] == len(p.queries)].assign(all="all queries")
    if dbstudies.experiment.is_paired(ex):  # a round's geometric means were measured in pairs
        per_repeat["pair"] = per_repeat["repeat"]
    return dbstudies.experiment.compare_arms(per_repeat, arms(p), by=["all"], value="geomean_s",
                                             higher_is_better=False, threshold=p.draw_threshold)


def plan_diff(run: "Run", p: Params) -> "pd.DataFrame":
    """Per query: each candidate's join order (query block by block) and whether they differ."""
    import pandas as pd
    plans = run.table(PLANS)
    rows = []
    for q in p.queries:
        row: dict[str, Any] = {"query": f"Q{q}"}
        for a in arms(p):
            part = plans[(plans["query"] == q) & (plans["arm"] == a.label)]
            row[a.label] = dbstudies.workloads.sql.order_signature(part.to_dict("records")) if not part.empty else ""
        row["differs"] = len({v for k, v in row.items() if k not in ("query",)}) > 1
        rows.append(row)
    return pd.DataFrame(rows)


def forced(run: "Run", p: Params) -> "pd.DataFrame":
    """The forced-order phase, one row per STRAIGHT_JOIN rewrite (candidate × query × the
    candidate whose order it forces): whether the order was in effect, and the timings of the
    phase — own plan, forced, and the other candidate's own plan (medians and ">timeout") —
    with forced vs own plan and forced vs theirs compared as the queries are (ratio of
    geometric means, CI, Welch on logs, each comparison kind one Holm family)."""
    import pandas as pd
    tried = run.table(FORCED).drop_duplicates(["arm", "query", "order_of"])
    fx = executions(run, "forced")
    if tried.empty:
        return pd.DataFrame()
    vs_own = _compare(fx, ["arm", "query"], "order_of", OWN_PLAN, sorted(set(tried["order_of"])), p)
    pairs = []
    for t in tried[tried["forced"]].itertuples():
        pairs.append(fx[(fx["arm"] == t.arm) & (fx["query"] == t.query) & (fx["order_of"] == t.order_of)]
                     .assign(side="forced"))
        pairs.append(fx[(fx["arm"] == t.order_of) & (fx["query"] == t.query) & (fx["order_of"] == OWN_PLAN)]
                     .assign(arm=t.arm, order_of=t.order_of, side="theirs"))
    both = pd.concat(pairs, ignore_index=True) if pairs else fx.assign(side="")
    vs_theirs = _compare(both, ["arm", "query", "order_of"], "side", "theirs", ["forced"], p)
    rows = [{"query": t.query, "candidate": t.arm, "order_of": t.order_of,
             "wanted_order": t.wanted_order, "own_order": t.own_order, "forced": t.forced,
             "reason": t.reason, "own": _seconds(fx, t.arm, t.query, OWN_PLAN),
             "forced_s": _seconds(fx, t.arm, t.query, t.order_of),
             "theirs": _seconds(fx, t.order_of, t.query, OWN_PLAN),
             "vs_own": _row(vs_own, arm=t.arm, query=t.query, candidate=t.order_of),
             "vs_theirs": _row(vs_theirs, arm=t.arm, query=t.query, order_of=t.order_of)}
            for t in tried.itertuples()]
    return pd.DataFrame(rows).sort_values(["query", "candidate"], kind="stable", ignore_index=True)


def _seconds(ex: "pd.DataFrame", arm: str, query: int, order_of: str) -> dict[str, Any]:
    """n, timeouts, median, min and max seconds of one variant's executions."""
    x = ex[(ex["arm"] == arm) & (ex["query"] == query) & (ex["order_of"] == order_of)]
    s = x["seconds"]
    return {"n": len(x), "timeouts": int(x["timed_out"].sum()), "median_s": s.median(),
            "min_s": s.min(), "max_s": s.max()}


def _row(table: "pd.DataFrame", **where: Any) -> dict[str, Any]:
    """The first row of `table` matching `where` as a dict ({} if none)."""
    hit = table
    for k, v in where.items():
        hit = hit[hit[k] == v] if k in hit else hit.iloc[0:0]
    return hit.iloc[0].to_dict() if len(hit) else {}


def forced_table(fo: "pd.DataFrame", p: Params) -> "pd.DataFrame":
    """`forced` as the report shows it: per rewrite the order forced, seconds with the own plan,
    forced and of the candidate whose order it is, and both comparisons."""
    import pandas as pd
    rows = []
    for r in fo.itertuples():
        ok = r.forced
        rows.append({"query": f"Q{r.query}", "candidate": r.candidate, "join order of": r.order_of,
                     "order forced": r.wanted_order if ok else f"not forced: {r.reason}",
                     "own plan s": _seconds_text(r.own, p.timeout) if r.own["n"] else "",
                     "forced s": _seconds_text(r.forced_s, p.timeout) if ok and r.forced_s["n"] else "",
                     "forced vs own plan": _relative_text(r.vs_own) if r.vs_own else "",
                     "their plan s": _seconds_text(r.theirs, p.timeout) if r.theirs["n"] else "",
                     "forced vs theirs": _relative_text(r.vs_theirs) if r.vs_theirs else ""})
    return pd.DataFrame(rows)


def forced_summary(fo: "pd.DataFrame") -> "pd.DataFrame":
    """Seconds of each forced rewrite beside the two plans it sits between, for a chart: x is
    "Q<n> on <candidate>", arm the variant (its own plan, the other order forced, the other
    candidate's own plan); median with min–max from the phase's executions."""
    import pandas as pd
    rows = []
    for r in fo[fo["forced"]].itertuples() if not fo.empty else []:
        x = f"Q{r.query} on {r.candidate}"
        for arm, s in (("own plan", r.own), (f"the other order forced (STRAIGHT_JOIN)", r.forced_s),
                       ("the other candidate's own plan", r.theirs)):
            rows.append({"case": x, "arm": arm, "median_s": s["median_s"], "min_s": s["min_s"],
                         "max_s": s["max_s"]})
    return pd.DataFrame(rows)


def conclusion(rel: "pd.DataFrame", geo: "pd.DataFrame", diff: "pd.DataFrame", p: Params,
               fo: "pd.DataFrame | None" = None, answers: str = "") -> str:
    """A short Markdown conclusion computed from the tables (no claim is hard-coded)."""
    base = arms(p)[0].label
    lines = []
    for r in geo.itertuples():
        lines.append(f"- Geometric mean over {len(p.queries)} queries: {r.candidate} "
                     f"{r.delta_pct:+.1f}% vs {base} [{(r.ci_low - 1) * 100:+.1f}, "
                     f"{(r.ci_high - 1) * 100:+.1f}] → **{r.verdict}** (lower time is better).")
    if not rel.empty:
        lines.append(f"- Per query, vs {base}: {dbstudies.analysis.verdicts(rel)}.")
        tested = rel.dropna(subset=["p_value"]) if "p_value" in rel else rel.iloc[0:0]
        if not tested.empty:
            lines += [f"  - {line}." for line in dbstudies.stats.reachability(tested)]
    if answers:
        lines.append(f"- {answers}")
    differ = diff[diff["differs"]]["query"].tolist()
    lines.append(f"- Join orders differ between candidates in {len(differ)} of {len(diff)} queries"
                 + (f": {', '.join(differ)}." if differ else "."))
    for r in (fo.itertuples() if fo is not None and not fo.empty else []):
        what = f"  - Q{r.query} on {r.candidate} with the join order of {r.order_of}"
        if not r.forced:
            lines.append(f"{what}: not forced ({r.reason}).")
            continue
        parts = [_share(r.vs_own, "its own plan's"), _share(r.vs_theirs, f"{r.order_of}'s")]
        lines.append(f"{what} forced (STRAIGHT_JOIN): " + "; ".join(x for x in parts if x) + ".")
    return "\n".join(lines)
