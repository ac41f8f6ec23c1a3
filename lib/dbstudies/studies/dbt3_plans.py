"""DBT3 (TPC-H) power test: the 22 queries, repeated, per candidate server configuration,
normalised to a baseline, with the plans each candidate chose (modelled on the DBT3 runs of
the MariaDB sysbench/DBT3 write-up in shared/sources).

Arms: the `candidates` — named configurations (server variables such as
`optimizer_use_condition_selectivity`, intents, and optionally their own `flavour`), the first
the baseline. Each server loads the TPC-H data once (generated offline at `scale_factor`,
cached). Every block restarts the server with one candidate; warm runs then execute each query
once unmeasured, cold runs restart the server (OS page cache dropped, no buffer-pool reload)
before every execution. Each query has a server-side `timeout`: a query that hits it is
recorded as timed out (no seconds) and shown ">timeout", never as a number.

Per query, every candidate's median seconds is compared with the baseline's (ratio of
geometric means, CI, Welch on logs, Holm across the queries; draw below `draw_threshold`);
the geometric mean over the queries is compared per repeat. EXPLAIN FORMAT=JSON of every
query on every candidate gives the join orders; queries whose orders differ are listed.
"""
from __future__ import annotations

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

QUERIES = Table("queries", 1, {
    "step": "int64", "phase": "str", "repeat": "int64", "arm": "str", "query": "int64",
    "started_at": "float64", "seconds": "float64", "timed_out": "bool", "rows": "int64",
    "handler_reads": "int64", "cold": "bool",
}, "one execution of a TPC-H query; seconds is NaN when it timed out")
LOADS = Table("loads", 1, {"flavour": "str", "table": "str", "rows": "int64", "load_s": "float64",
                           "index_s": "float64"}, "TPC-H load and index build per table")
PLANS = Table("plans", 1, {"arm": "str", "query": "int64", "select_id": "int64", "position": "int64",
                           "table": "str", "access_type": "str", "key": "str", "rows": "float64",
                           "filtered": "float64"}, "the join order of each query's plan per candidate")


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
               server_cpus=None, settings={}, engine="InnoDB", candidates=_CANDIDATES)
ALL = list(range(1, 23))
PROFILES: dict[str, dict[str, Any]] = {
    "smoke": dict(_COMMON, scale_factor=0.01, queries=[3, 5, 7, 13], repeats=2, cold=False,
                  timeout=30),
    "quick": dict(_COMMON, scale_factor=1, queries=ALL, repeats=3, cold=False, timeout=120),
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
    """Warm runs: every query once after the restart, recorded with phase warmup."""
    if not ctx.params.cold:
        for q in ctx.params.queries:
            ctx.warmups[0] -= 1
            _execute(ctx, {"step": ctx.warmups[0], "query": q}, "warmup")


def step(ctx: "Context", cell: dict[str, Any]) -> None:
    """One execution of one query (cold: after a cold restart); its plan on the first repeat."""
    if ctx.params.cold:
        ctx.server.cold_restart(ctx.arm.settings, intent=ctx.arm.intent)
    if ctx.repeat == 1:
        _record_plan(ctx, cell["query"])
    _execute(ctx, cell, "measure")


def block_seconds(p: Params) -> float:
    """A rough estimate: ≈ 2 s per query at SF 1 on these machines (DESIGN §5), scaled."""
    per_query = max(0.05, 2.0 * p.scale_factor) + (4 if p.cold else 0)
    return len(p.queries) * per_query * (1 if p.cold else 2)


def _execute(ctx: "Context", cell: dict[str, Any], phase: str) -> None:
    import time

    import pandas as pd
    sql = dbstudies.tpch.queries()[cell["query"]]
    with dbstudies.sql.Session(ctx.server, "tpch") as session:
        t0 = time.time()
        e = session.execute(sql, timeout=ctx.params.timeout)
    reads = sum(v for k, v in e.counters.items() if k.startswith("Handler_read"))
    ctx.run.append(QUERIES, pd.DataFrame([{
        "step": cell["step"], "phase": phase, "repeat": ctx.repeat, "arm": ctx.arm.label,
        "query": cell["query"], "started_at": t0,
        "seconds": e.seconds if e.seconds is not None else math.nan, "timed_out": e.timed_out,
        "rows": e.rows, "handler_reads": reads, "cold": ctx.params.cold}]))


def _record_plan(ctx: "Context", query: int) -> None:
    import pandas as pd
    with dbstudies.sql.Session(ctx.server, "tpch") as session:
        order = dbstudies.sql.join_order(session.explain(dbstudies.tpch.queries()[query]))
    rows = pd.DataFrame(order).assign(arm=ctx.arm.label, query=query)
    rows["key"] = rows["key"].fillna("").astype(str)
    rows["access_type"] = rows["access_type"].fillna("").astype(str)
    ctx.run.append(PLANS, rows[list(PLANS.columns)])


# ---------------------------------------------------------------- analysis

def executions(run: "Run") -> "pd.DataFrame":
    """The measured executions (warm-ups dropped)."""
    q = run.table(QUERIES)
    return q[q["phase"] == "measure"].reset_index(drop=True)


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
    import pandas as pd
    a = arms(p)
    timed_out = ex.groupby(["query", "arm"])["timed_out"].any()
    clean = ex[~ex.set_index(["query", "arm"]).index.map(
        lambda k: bool(timed_out.get((k[0], a[0].label), False) or timed_out.get(k, False)))]
    rel = dbstudies.experiment.compare_arms(clean, a, by=["query"], value="seconds",
                                            higher_is_better=False, threshold=p.draw_threshold)
    censored = [{"candidate": c.label, "query": q, "verdict": "timeout (censored: not tested)"}
                for q in p.queries for c in a[1:]
                if timed_out.get((q, a[0].label), False) or timed_out.get((q, c.label), False)]
    return pd.concat([rel, pd.DataFrame(censored)], ignore_index=True) if censored else rel


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
            if s.empty:
                row[name] = ""
            elif s.iloc[0]["timeouts"] == s.iloc[0]["n"]:
                row[name] = f">{p.timeout:g}"
            else:
                row[name] = f"{s.iloc[0]['median_s']:.3g}" + (f" ({int(s.iloc[0]['timeouts'])} >{p.timeout:g})"
                                                               if s.iloc[0]["timeouts"] else "")
        for name in names[1:]:
            r = rel[(rel["query"] == q) & (rel["candidate"] == name)]
            if r.empty:
                continue
            r = r.iloc[0]
            row[f"{name} vs baseline"] = (r["verdict"] if pd.isna(r.get("ratio")) else
                                          f"{r['ratio'] * 100:.0f}% [{r['ci_low'] * 100:.0f}, "
                                          f"{r['ci_high'] * 100:.0f}] {r['verdict']}")
        rows.append(row)
    return pd.DataFrame(rows)


def geomean(ex: "pd.DataFrame", p: Params) -> "pd.DataFrame":
    """Per candidate × repeat: the geometric mean of the queries' seconds (repeats where a
    query timed out are left out), then each candidate against the baseline."""
    import numpy as np
    per_repeat = (ex[~ex["timed_out"]].groupby(["arm", "repeat"])
                  .agg(n=("seconds", "size"), geomean_s=("seconds", lambda s: float(np.exp(np.log(s).mean()))))
                  .reset_index())
    per_repeat = per_repeat[per_repeat["n"] == len(p.queries)].assign(all="all queries")
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
            row[a.label] = dbstudies.sql.order_signature(part.to_dict("records")) if not part.empty else ""
        row["differs"] = len({v for k, v in row.items() if k not in ("query",)}) > 1
        rows.append(row)
    return pd.DataFrame(rows)


def conclusion(rel: "pd.DataFrame", geo: "pd.DataFrame", diff: "pd.DataFrame", p: Params) -> str:
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
    differ = diff[diff["differs"]]["query"].tolist()
    lines.append(f"- Join orders differ between candidates in {len(differ)} of {len(diff)} queries"
                 + (f": {', '.join(differ)}." if differ else "."))
    return "\n".join(lines)
