"""The Answer in words (issue 34): the verdicts as sentences, the source's claims tested,
the caveats the run's own data raise (CPU saturation with the client's share, ramp-up, a
virtual machine, settings beyond what is varied) and the CPU budget behind each verdict."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dbstudies import stats
from dbstudies.analysis import budget, caveats, claims, words
from dbstudies.core import comparisons
from dbstudies.core.comparisons import SYSBENCH
from dbstudies.kit.study import load
from dbstudies.measure import checks
from dbstudies.store.record import Host
from dbstudies.store.results import Run
from dbstudies.store.tables import INTERVALS, STEPS

tp = load("thread_pool")
PC, POOL = "one-thread-per-connection", "pool-of-threads"
THREADS = (1, 16, 64, 256)


def steps(gain: dict[int, float], rounds: int = 8, cpu: dict[str, tuple[float, float]] | None = None,
          cv: float = 0.02, seed: int = 1) -> pd.DataFrame:
    """Paired steps of two workloads: the pool `gain[threads]` × the baseline's QPS; `cpu`:
    per arm (server, client) µs per transaction, at 195 % of the host's 200 % CPU."""
    rng = np.random.default_rng(seed)
    cpu = cpu or {PC: (10.0, 5.0), POOL: (10.0, 5.0)}
    rows, step = [], 0
    for r in range(1, rounds + 1):
        for w in ("oltp_point_select", "oltp_read_only"):
            for t in THREADS:
                for pos, arm in enumerate((PC, POOL)):
                    step += 1
                    qps = 10_000 * (gain.get(t, 1.0) if arm == POOL else 1.0) * np.exp(rng.normal(0, cv))
                    row = {c: 0 for c in STEPS.columns}
                    row.update(step=step, phase="measure", repeat=r, arm=arm, workload=w, threads=t,
                               qps=qps, tps=qps, latency_p99_ms=5.0, cpu_server_pct=130.0,
                               cpu_client_pct=65.0, pair=step - pos, position=pos, seconds=3.0,
                               cpu_server_us_per_txn=cpu[arm][0], cpu_client_us_per_txn=cpu[arm][1])
                    rows.append(row)
    return STEPS.conform(pd.DataFrame(rows))


def qps_table(s: pd.DataFrame) -> pd.DataFrame:
    """The QPS table of fixed rounds (the quick profile's precision target off)."""
    return tp.relative(s, checks.resolve(tp, "quick", budget=0, target={}))


def test_the_verdicts_in_words_name_sizes_directions_and_cells():
    rel = qps_table(steps({64: 0.8, 256: 0.75}))
    text = words.paragraph("throughput (QPS)", rel)
    assert text.startswith("**Throughput (QPS)** against one-thread-per-connection: pool-of-threads ")
    assert "lower (worse) from 64 client threads up in both workloads (4 of 8 cells)" in text
    assert "the same within −4.8 … +5 % up to 16 client threads in both workloads (4 of 8 cells)" in text
    assert "nan" not in text and "e-0" not in text
    better = words.paragraph("p99", qps_table(steps({1: 1.3})))
    assert "higher (better) at 1 client thread in both workloads" in better


def test_a_significant_difference_inside_the_draw_threshold_names_the_threshold_it_was_judged_by():
    """A count's 0.2 % band, not the default 5 % (a count run's words said "−4.8 … +5 %")."""
    p = checks.resolve(tp, "quick", budget=0, target={}, draw_threshold=0.002)
    text = words.paragraph("instructions per transaction", tp.relative(steps({1: 1.001}, cv=0.0002), p))
    assert "the same within −0.2 … +0.2 % at every client thread count" in text, text  # +0.1 % at 1 thread, significant
    assert "5 %" not in text


def test_cells_in_words():
    every = [1, 16, 64, 256]
    assert words.thread_words([64, 256], every) == "from 64 client threads up"
    assert words.thread_words([16, 256], every) == "at 16 and 256 client threads"
    full = pd.DataFrame({"workload": ["a"] * 4 + ["b"] * 4, "threads": every * 2})
    sub = full.iloc[[2, 3, 5]]
    assert words.where(sub, full) == "in a from 64 client threads up and in b at 16 client threads"
    queries = pd.DataFrame({"query": [3, 5, 7]})
    assert words.where(queries.iloc[[0, 2]], queries) == "in Q3 and Q7"


def test_a_source_claim_is_reproduced_contradicted_or_untested():
    rel = qps_table(steps({256: 1.3}))
    claim = claims.Claim("post", "the pool wins at many threads", "qps", POOL, "better", "+30 %",
                        ("oltp_read_only",), 256)
    said = claims.held(claim, {"qps": rel})
    assert "*post*: the pool wins at many threads (+30 %) — **reproduced** here: pool-of-threads 2" in said
    assert "higher (better) at 256 client threads in oltp_read_only" in said
    worse = claims.held(claim, {"qps": qps_table(steps({256: 0.7}))})
    assert "**contradicted**" in worse
    assert "**untested** here: no cell of oltp_read_write" in claims.held(
        claims.Claim("post", "rw", "qps", POOL, "draw", workloads=("oltp_read_write",)), {"qps": rel})
    assert "**consistent" in claims.held(claims.Claim("post", "no change at 1", "qps", POOL, "draw",
                                                    workloads=("oltp_read_only",)), {"qps": qps_table(steps({}))})
    assert tp.claims(checks.resolve(tp, "quick"))[0].candidate == POOL


def test_the_cpu_budget_predicts_the_change_and_names_the_clients_share():
    """The pool costs the client 5 µs more per transaction, the server nothing: under a full
    CPU that predicts −25 % (15 / 20 − 1), all of it the client's."""
    s = steps({16: 0.75, 64: 0.75, 256: 0.75}, cpu={PC: (10.0, 5.0), POOL: (10.0, 10.0)})
    rel = qps_table(s)
    b = budget.judged_only(budget.budget(s, rel, host_cpus=2))  # the draws' rows: for `client_decides`
    assert len(b) == 6 and b["saturated"].all()
    assert b["predicted_pct"].round(6).eq(-25.0).all() and b["client_share_pct"].round(6).eq(100.0).all()
    shown = budget.budget_table(b, 2).iloc[0]
    assert shown["predicted"] == "−25.0 % (matches; the CPUs were full)"
    assert shown["client µs per transaction"] == "5 → 10 (+100.0 %); f 0.50"  # f: the baseline's client µs over its server's
    before_v6 = s.drop(columns=["wait_server_us_per_txn", "wait_client_us_per_txn"], errors="ignore")
    assert "µs waiting for a CPU: server; client" not in budget.budget_table(  # a run before steps v6: no run delay
        budget.judged_only(budget.budget(before_v6, rel, host_cpus=2)), 2).columns
    # with run delay recorded: the pool's server waits half as long for a CPU, its client twice
    waited = s.assign(wait_server_us_per_txn=np.where(s["arm"] == POOL, 2.0, 4.0),
                      wait_client_us_per_txn=np.where(s["arm"] == POOL, 6.0, 3.0))
    shown = budget.budget_table(budget.judged_only(budget.budget(waited, rel, host_cpus=2)), 2).iloc[0]
    assert shown["µs waiting for a CPU: server; client"] == "4 → 2 (−50.0 %); 3 → 6 (+100.0 %)"
    text = caveats.saturation(s, b, 2, pinned=False)
    assert "Server and sysbench together used 195 % of the host's 200 % at every client thread count" in text
    assert "predicts the measured change within" in text and "client's share of the extra CPU per transaction is 100 %" in text
    assert caveats.saturation(s, b, 2, pinned=True) == ""  # pinned apart: they do not share


def test_a_verdict_the_client_explains_says_so_in_its_own_sentence_and_a_claim_is_not_testable():
    """The pool's −25 % is all sysbench's extra CPU on the server's CPUs: the throughput
    sentence says so before its next clause, and a source's claim about the server is not
    testable here — never 'contradicted' — with what was tested said instead."""
    s = steps({16: 0.75, 64: 0.75, 256: 0.75}, cpu={PC: (10.0, 5.0), POOL: (10.0, 10.0)})
    rel = qps_table(s)
    client = budget.client_explained(budget.budget(s, rel, 2), pinned=False)
    assert len(client) == 6 and budget.client_explained(budget.budget(s, rel, 2), pinned=True).empty
    text = words.paragraph("throughput (QPS)", rel, client, 2)
    worse = next(c for c in text.split("; ") if "lower (worse)" in c)
    assert ("— in all 6 of these cells 100 % of the change in CPU per transaction is sysbench's own, on "
            "the same 2 CPUs as the server: mostly the client's cost") in worse
    gains = claims.Claim("S", "the pool gains with many threads", "qps", POOL, "better", min_threads=16)
    decides = budget.client_decides(budget.budget(s, rel, 2), pinned=False)
    said = claims.held(gains, {"qps": rel}, client, pinned=False, cpus=2, decides=decides)
    assert "**not testable here**" in said and "contradicted" not in said
    assert "What was tested: pool-of-threads 24–26 % lower (worse) from 16 client threads up" in said
    assert "**contradicted**" in claims.held(gains, {"qps": rel}, None, pinned=False, cpus=2)  # without the budget
    apart = claims.Claim("S", "the pool gains", "qps", POOL, "better", client_apart=True)
    assert "the source ran sysbench on cores of its own" in claims.held(apart, {"qps": rel}, None, pinned=False, cpus=2)
    assert "**contradicted**" in claims.held(apart, {"qps": rel}, None, pinned=True, cpus=2)


def test_a_claim_gets_one_rule_whatever_the_verdict_where_the_client_decides_the_cell():
    """A draw where the pool's server CPU per transaction fell and sysbench's rose by more, on
    CPUs both saturate: the claim that the pool gains is not testable here — as it would be
    for a worse verdict — never "not shown"; pinned apart, the same draw tests it and does not show it. A
    client share over 100 % is said as what it is."""
    s = steps({16: 1.0, 64: 1.0, 256: 1.0}, cpu={PC: (10.0, 5.0), POOL: (8.0, 7.5)})
    rel = qps_table(s)
    assert set(rel["verdict"]) == {"draw"}
    b = budget.budget(s, rel, 2)
    decides = budget.client_decides(b, pinned=False)
    assert len(decides) == len(rel) and budget.client_decides(b, pinned=True).empty
    gains = claims.Claim("S", "the pool gains with many threads", "qps", POOL, "better", min_threads=16)
    said = claims.held(gains, {"qps": rel}, None, pinned=False, cpus=2, decides=decides)
    assert "**not testable here**" in said and "not shown" not in said and "What was tested" in said
    assert "**not shown**" in claims.held(gains, {"qps": rel}, None, pinned=True, cpus=2,
                                             decides=budget.client_decides(b, pinned=True))
    assert words.share_words([68.0, 115.0]).endswith("over 100 %: the server's own went the other way")


def test_typical_and_slowest_transactions_moving_apart_are_said_together():
    def table(deltas, verdicts):
        return pd.DataFrame({"workload": ["w"] * 3, "threads": [1, 16, 64], "candidate": [POOL] * 3,
                             "baseline": [PC] * 3, "delta_pct": deltas, "verdict": verdicts})
    p50 = table([1.0, 21.0, 68.0], ["draw", "worse", "worse"])
    p99 = table([2.0, -46.0, -73.0], ["draw", "better", "better"])
    said = words.moving_apart({"p50 latency": p50, "p99 latency": p99})
    assert said == [f"**Typical and slowest transactions move apart** with {POOL} against {PC}: a typical "
                    "transaction (p50) takes 21–68 % longer, while the slowest 1 % (p99) take 46–73 % less "
                    "time — from 16 client threads up."]
    assert words.moving_apart({"p50 latency": p50, "p99 latency": table([1.0, 5.0, 9.0], ["draw", "worse", "worse"])}) == []


def test_ramp_up_a_virtual_machine_and_busy_steps_are_caveats(tmp_path):
    s = steps({})
    run = Run.create("thread_pool", {}, root=tmp_path)
    seconds = [{**{c: 0 for c in INTERVALS.columns}, "step": st, "second": sec,
                "tps": (700.0 if sec == 1 and t == 256 else 1000.0)}
               for st, t in zip(s["step"], s["threads"]) for sec in (1, 2, 3)]
    run.append(INTERVALS, pd.DataFrame(seconds))
    ramp = caveats.ramp_up(run, s, mde_pct=10.0)
    assert ramp.startswith("**The first second of a step differs from the rest of it.** It ran 30 % slower: a "
                           "ramp-up (oltp_point_select, 256 client threads; median of 16 of the cell's 16 steps) and "
                           "30 % slower: a ramp-up (oltp_read_only, 256")
    assert "With 3-s steps that second is 33 % of each" in ramp
    assert "`" not in ramp.split("(`duration`)")[0]  # no code names in its prose
    # a run whose MDE is huge still says a 30 % first second (the caveat's own 20 % cap)
    assert "more than the 20 % this caveat looks for" in caveats.ramp_up(run, s, mde_pct=2000.0)
    # a first second faster than the rest is a decay, and steps too short to show it are counted
    decay = [{**r, "tps": 1300.0 if r["second"] == 1 and r["step"] in set(s.loc[s["threads"] == 1, "step"]) else r["tps"]}
             for r in seconds if not (r["step"] == s["step"].iloc[-1] and r["second"] > 1)]
    other = Run.create("thread_pool", {}, root=tmp_path / "decay")
    other.append(INTERVALS, pd.DataFrame(decay))
    said = caveats.ramp_up(other, s, mde_pct=10.0)
    assert "30 % faster: throughput fell after it (oltp_point_select, 1 client thread; median of 16" in said
    assert "1 step with fewer than 3 seconds recorded cannot show it and is not counted" in said
    assert "virtual machine (kvm)" in caveats.virtual_machine(Host(virtual_machine="kvm"))
    assert caveats.virtual_machine(Host()) == ""
    assert caveats.busy(s) == ""


def test_settings_beyond_what_the_arms_vary_are_a_caveat():
    from dbstudies.store import settings
    meta = {"arms": [{"label": "A", "settings": {"x_size": "1"}}, {"label": "B", "settings": {"x_size": "2"}}],
            "servers": [{"label": "A", "global_variables": {"x_size": "1", "sync_binlog": "0", "lock_wait_timeout": "10"}},
                        {"label": "B", "global_variables": {"x_size": "2", "sync_binlog": "1", "lock_wait_timeout": "10.000000"}}]}
    said = settings.beyond_varied(meta)
    assert said.startswith("**Settings differ beyond what the study varies**: 1 between A and B — `sync_binlog` (0 vs 1)")
    assert "x_size" not in said and "lock_wait_timeout" not in said  # varied on purpose; equal values
    meta["servers"][1]["global_variables"]["sync_binlog"] = "0"
    assert settings.beyond_varied(meta) == ""
    # the AIO a server says it uses at start differs though its variable does not (one allowed io_uring)
    for s, aio in zip(meta["servers"], ("io_uring", "Linux native AIO")):
        s["global_variables"]["innodb_use_native_aio"], s["aio"] = "ON", aio
    assert dict(settings.differences(meta)) == {settings.AIO_SAID: ["io_uring", "Linux native AIO"], "x_size": ["1", "2"]}
    assert f"`{settings.AIO_SAID}` (io_uring vs Linux native AIO)" in settings.beyond_varied(meta)


def test_holm_adjusted_intervals_agree_with_the_holm_verdicts():
    """Beside a Holm verdict, the adjusted interval excludes no change where the cell is
    better or worse, and the smallest p's interval is the widest widening (1 − α/m)."""
    rel = qps_table(steps({16: 1.08, 64: 0.9, 256: 1.3}, cv=0.04, seed=3))
    judged = rel[rel["verdict"].isin(["better", "worse"])]
    assert len(judged) >= 3
    assert ((judged["holm_ci_low"] > 1) | (judged["holm_ci_high"] < 1)).all()
    assert (rel["holm_ci_low"] <= rel["ci_low"] + 1e-12).all() and (rel["holm_ci_high"] >= rel["ci_high"] - 1e-12).all()
    blocks = stats.compare_table(steps({256: 1.3}).assign(repeat=lambda d: d["repeat"]), by=["workload", "threads"],
                                 factor="arm", baseline=PC, candidates=[POOL], value="qps")
    assert blocks[["holm_ci_low", "holm_ci_high"]].notna().all().all()


@pytest.mark.parametrize("r, said", [
    ({"ci_low": 1e-4, "ci_high": 4e8, "n_baseline": 2, "sd_diff": 0.5}, "[unbounded: 2 pairs]"),
    ({"ci_low": 0.063, "ci_high": 49.4, "n_baseline": 2}, "[unbounded: 2 repeats]"),
    ({"ci_low": 0.95, "ci_high": 1.2, "n_baseline": 9, "sd_diff": 0.1}, "[−5.0, +20.0]"),
])
def test_an_interval_too_wide_to_bound_anything_says_so(r, said):
    from dbstudies.analysis import interval
    assert interval(pd.Series(r)) == said


def test_the_tail_ratio_is_each_steps_p99_over_its_own_p50_judged_paired():
    """The pool's steps at 256 threads have a p99 5 × their p50, the baseline's 3 ×: its tail
    ratio is judged worse there; at the other thread counts both arms' tails have one shape,
    a draw."""
    s = steps({}).assign(latency_p50_ms=1.0)
    s = s.assign(latency_p99_ms=np.where((s["arm"] == POOL) & (s["threads"] == 256), 5.0, 3.0))
    marked = comparisons.with_tail_ratio(s)
    assert (marked["tail_ratio"] == marked["latency_p99_ms"] / marked["latency_p50_ms"]).all()
    rel = tp.relative(marked, checks.resolve(tp, "quick"), "tail")
    assert set(rel.loc[rel["threads"] == 256, "verdict"]) == {"worse"}
    assert set(rel.loc[rel["threads"] != 256, "verdict"]) == {"draw"} and rel["delta_pct"].notna().all()


def test_the_tail_ratio_measures_the_tail_not_a_body_that_moved():
    """The pool's whole distribution takes 2.2 × the baseline's (its p50 moved, as at
    point_select@256), its shape unchanged: p99 calls it worse, the tail ratio a draw — the
    tail did not grow beyond the body."""
    s = steps({})
    slower = np.where(s["arm"] == POOL, 2.2, 1.0) * (1 + 0.01 * (s["step"] % 3))  # a little step-to-step noise
    marked = comparisons.with_tail_ratio(s.assign(latency_p50_ms=slower, latency_p99_ms=4 * slower))
    p = checks.resolve(tp, "quick")
    assert set(tp.relative(marked, p, "p99")["verdict"]) == {"worse"}
    assert set(tp.relative(marked, p, "tail")["verdict"]) == {"draw"}


def test_the_whole_runs_p99_merges_histograms_and_resamples_rounds():
    """Percentiles cannot be averaged: the run's p99 comes from every step's histogram merged;
    its CI from resampling whole rounds is wider where rounds disagree."""
    from dbstudies.analysis import tails
    rows, steps_ = [], []
    for r in range(1, 9):
        slow = 300 if r % 2 else 0  # half the rounds have a stall
        for arm, extra in ((PC, 0), (POOL, slow)):
            step = len(steps_) + 1
            steps_.append({"step": step, "workload": "w", "threads": 8, "arm": arm, "repeat": r})
            rows += [{"step": step, "value_ms": 1.0, "count": 10_000 - extra},
                     {"step": step, "value_ms": 40.0, "count": extra}]
    out = tails.merged_percentile(pd.DataFrame(rows), pd.DataFrame(steps_)).set_index("arm")
    assert out.loc[PC, "run_p99_ms"] == 1.0 and out.loc[PC, "run_p99_low"] == out.loc[PC, "run_p99_high"] == 1.0
    assert out.loc[POOL, "run_p99_ms"] == 40.0  # 1.5 % of all its transactions took 40 ms
    assert out.loc[POOL, "run_p99_low"] <= 40.0 <= out.loc[POOL, "run_p99_high"]


def test_the_latency_tables_are_calibrated_on_the_aa_noise_in_one_line():
    from dbstudies.analysis import sysbench_answer
    cal = pd.DataFrame({"shift_pct": [0.0, 10.0, 20.0], "tables_any_verdict": [0.06, 0.5, 0.9],
                        "cells_better": [0.0, 0.2, 0.43]})
    line = sysbench_answer.calibration_lines({"p95": cal, "tail": pd.DataFrame()}, SYSBENCH)
    assert line == ["- The latency tables judged on the same A/A noise: p95 latency 6 % of tables with a "
                    "non-draw, a 20 % difference found in 43 % of cells."]
    assert sysbench_answer.calibration_lines({"p99": pd.DataFrame()}, SYSBENCH) == []
