"""Measuring to a precision target (issue 45), without servers: the pairs a target needs, what
a draw measured to one says, where the loop spends its rounds (on known-answer noise), the
arm orders it keeps balanced, what it refuses, and what the report says of it."""
import math
import re
from types import SimpleNamespace as NS

import numpy as np
import pandas as pd
import pytest
from conftest import FIXTURES

from dbstudies import analysis, stats
from dbstudies.analysis import words
from dbstudies.analysis.said import verdict_summary
from dbstudies.core.comparisons import Comparison
from dbstudies.core.errors import ParamError
from dbstudies.kit import study as study_registry
from dbstudies.kit.contract import Answer, Study
from dbstudies.kit.study import load
from dbstudies.kit.studykit import Arm
from dbstudies.measure import checks, precision, schedule
from dbstudies.measure import loop as loop_module
from dbstudies.measure.loop import Loop
from dbstudies.report import described
from dbstudies.store.results import Run
from dbstudies.workflows import planner

QUICK = next((FIXTURES / "quick" / "thread_pool").iterdir())  # 16 rounds × 8 cells, measured here


@pytest.mark.parametrize("sd, m", [(0.05, 1), (0.14, 8), (0.3, 24)])
def test_rounds_for_is_the_fewest_pairs_that_reach_the_target(sd, m):
    n = stats.rounds_for(sd, 0.10, m)
    assert stats.paired_mde(sd, n, m, n - 1, threshold=0) <= 0.10
    assert n == 2 or stats.paired_mde(sd, n - 1, m, n - 2, threshold=0) > 0.10
    assert stats.rounds_for(sd, 0.05, m) > n                        # a finer target needs more
    assert stats.rounds_for(sd, 0.10, m, prior_df=20) <= n          # a prior's df never needs more
    assert stats.rounds_for(float("nan"), 0.10) == math.inf


def known_table(target: float = 0.05) -> pd.DataFrame:
    """A paired table of four cells with known answers: quiet and equal, noisy and few,
    clearly better, precise but about as far off as the target — read to `target`."""
    rng = np.random.default_rng(7)
    rows = []
    threads = {"quiet": 1, "noisy": 16, "faster": 64, "near": 256}
    for cell, n, sd, effect in (("quiet", 12, 0.01, 0.0), ("noisy", 4, 0.30, 0.0), ("faster", 10, 0.02, 0.30),
                                ("near", 30, 0.05, 0.045)):
        for r, d in enumerate(rng.normal(0, sd, n) + effect):
            rows += [{"workload": "w", "cell": cell, "threads": threads[cell], "arm": "A", "repeat": r + 1, "qps": 1000.0},
                     {"workload": "w", "cell": cell, "threads": threads[cell], "arm": "B", "repeat": r + 1,
                      "qps": 1000.0 * math.exp(d)}]
    df = pd.DataFrame(rows)
    t = stats.paired_table(df, by=["workload", "threads"], factor="arm", baseline="A", candidates=["B"],
                           value="qps", threshold=target)
    return stats.target_readings(t.assign(baseline="A"), target).set_index("threads", drop=False)


def test_a_draw_measured_to_a_target_says_the_same_or_inconclusive():
    t = known_table()
    assert t.loc[1, "verdict"] == "draw" and t.loc[1, "reading"] == "same"
    assert t.loc[16, "verdict"] == "draw" and t.loc[16, "reading"] == "undecided"
    assert t.loc[16, "target_mde_pct"] > 5 and t.loc[16, "more_pairs"] > 4
    assert t.loc[64, "verdict"] == "better" and t.loc[64, "reading"] == ""
    # precise to the target, its interval past +5 %: undecided, with no more rounds to ask for
    assert t.loc[256, "verdict"] == "draw" and t.loc[256, "reading"] == "undecided" and t.loc[256, "more_pairs"] == 0
    assert t.loc[256, "target_mde_pct"] <= 5 and t.loc[256, "holm_ci_high"] > 1.05
    # the quiet cell's Holm interval lies inside ±5 %, the noisy one's does not
    assert stats.within(t.loc[1, "holm_ci_low"], t.loc[1, "holm_ci_high"], 0.05)
    assert not stats.within(t.loc[16, "holm_ci_low"], t.loc[16, "holm_ci_high"], 0.05)
    cells = t.apply(analysis.cell_text, axis=1)
    assert cells.loc[1].endswith("the same within −4.8 … +5 %")
    assert f"inconclusive: could see ±{stats.mde_text(t.loc[16, 'target_mde_pct'])}, the target −4.8 … +5 % needs " \
           f"about {int(t.loc[16, 'more_pairs'])} more rounds" in cells.loc[16]
    assert cells.loc[256].endswith("inconclusive: precise to the target (could see "
                                   f"±{t.loc[256, 'target_mde_pct']:.1f} %), but its interval reaches past −4.8 … +5 %")
    assert analysis.verdicts(t) == "1 better, 1 the same within −4.8 … +5 %, 2 inconclusive"
    summary = verdict_summary(Answer({"qps": t}, {"throughput": "qps"}, "")).iloc[0]
    assert (summary["better"], summary["same"], summary["inconclusive"], summary["cells"]) == (1, 1, 2, 4)
    assert "draw" not in summary  # a draw is read by its interval: never a plain draw
    said = words.candidate_clause(t)
    assert "the same within −4.8 … +5 % at 1 client thread" in said and "inconclusive at 16 client threads" in said
    assert ("inconclusive at 256 client threads (1 of 4 cells: precise to the target, but the interval reaches past "
            "−4.8 … +5 %)") in said
    # without a target the same words, by the draw band: the quiet cell the same, the others inconclusive
    plain = verdict_summary(Answer({"t": t.drop(columns=["reading"])}, {"t": "t"}, "")).iloc[0]
    assert (plain["same"], plain["inconclusive"]) == (1, 2) and "within target" not in plain


def test_a_stable_effect_never_reads_the_same_under_a_wide_target():
    """A target of 20 % beside a draw threshold of 5 %: a draw whose interval lies inside the
    target's band but reaches past the threshold's is *within the target*, not shown to
    exceed 5 % nor to be under it — never "the same" (a −9 % effect read "the same within
    ±20 %" in one run and "worse" in the next); "the same" keeps to the threshold's band, and
    every word agrees with the interval printed beside it."""
    rng = np.random.default_rng(4)
    rows = []
    for threads, n, sd, effect in ((1, 12, 0.01, 0.0), (16, 12, 0.06, -0.04), (64, 30, 0.04, -0.10)):
        for r, d in enumerate(rng.normal(0, sd, n) + effect):
            rows += [{"workload": "w", "threads": threads, "arm": "A", "repeat": r + 1, "qps": 1000.0},
                     {"workload": "w", "threads": threads, "arm": "B", "repeat": r + 1, "qps": 1000.0 * math.exp(d)}]
    t = stats.paired_table(pd.DataFrame(rows), by=["workload", "threads"], factor="arm", baseline="A",
                           candidates=["B"], value="qps", threshold=0.05)
    t = stats.target_readings(t.assign(baseline="A"), 0.2, threshold=0.05).set_index("threads", drop=False)
    assert list(t["reading"]) == ["same", "bounded", ""] and t.loc[64, "verdict"] == "worse"
    for r in t.itertuples():  # the words and the interval: one rule
        lo, hi = r.holm_ci_low, r.holm_ci_high
        if r.reading == "same":
            assert stats.within(lo, hi, 0.05)
        if r.reading == "bounded":
            assert stats.within(lo, hi, 0.2) and not stats.within(lo, hi, 0.05) and lo < 1 < hi
    cells = t.apply(analysis.cell_text, axis=1)
    assert cells.loc[16].endswith("within the target's −16.7 … +20 %: not shown to exceed 5 %, nor to be under it")
    said = words.candidate_clause(t)
    assert "within the target's −16.7 … +20 % at 16 client threads" in said and "the same within −4.8 … +5 %" in said


def test_a_target_below_the_draw_threshold_lowers_it():
    p = NS(draw_threshold=0.05, target={"qps": 0.03})
    assert analysis.threshold(p, "qps") == 0.03 and analysis.threshold(p, "p95") == 0.05


def test_the_shortfall_of_a_recorded_quick_run_is_its_pairs_against_their_noise():
    run = Run.open(QUICK)
    p = NS(target={"qps": 0.10, "p95": 0.25})
    short = precision.shortfall(load("thread_pool"), p, run)
    assert short.attrs["by"] == ["workload", "threads"] and len(short) == 8
    assert (short["pairs"] == 16).all()
    for metric, target in p.target.items():
        met = short[f"mde_{metric}"] <= target * 100
        assert (short.loc[met, f"needs_{metric}"] <= 16).all()      # met: needs no more than it has
        assert (short.loc[~met, f"needs_{metric}"] > 16).all()
    assert (short["more"] == np.maximum(short[["needs_qps", "needs_p95"]].max(axis=1) - 16, 0)).all()


def test_rounds_go_to_the_cells_nearest_their_target_and_the_rest_are_named():
    short = pd.DataFrame({"cell": ["met", "near", "far", "never"], "more": [0, 3, 10, math.inf]})
    assert precision.fund(short, lambda c: 10.0, remaining=1000.0) == (["near", "far"], ["never"])
    assert precision.fund(short, lambda c: 10.0, remaining=100.0) == (["near"], ["far", "never"])
    # restarts count: 10 rounds of the far cell need 10 restarts of 5 s
    assert precision.fund(short, lambda c: 10.0, remaining=135.0, restart=5.0) == (["near"], ["far", "never"])
    assert precision.fund(short, lambda c: 10.0, remaining=200.0, restart=5.0, restart_every=2)[0] == ["near", "far"]


@pytest.mark.parametrize("k, first", [(2, 3), (3, 4), (4, 5)])
def test_a_cell_measured_pair_by_pair_keeps_its_arm_orders_balanced(k, first):
    arms = [Arm(x) for x in "ABCD"[:k]]
    plan = schedule.paired_order(arms, [{"threads": 1}], first, seed=k)
    orders = [tuple(g.sort_values("position")["arm"]) for _, g in plan.groupby("pair")]
    rng = np.random.default_rng(1)
    for _ in range(17):
        orders.append(schedule.next_order(orders, rng))
        counts = pd.DataFrame([{a: o.index(a) for a in o} for o in orders])
        per_position = counts.apply(lambda c: c.value_counts().reindex(range(k), fill_value=0))
        assert (per_position.max() - per_position.min() <= 1).all()


@pytest.mark.parametrize("overrides, message", [
    ({"target": {"tps": 0.05}}, r"target: 'tps' is not one of this study's tables \(qps, p95, p99, tail\)"),
    ({"target": {"qps": 5}}, r"target: qps must be a fraction in \(0, 1\) — 0.05 for 5 % — got 5"),
    ({"target": {"qps": 0.05}, "budget": 0}, r"target: needs a `budget`"),
    ({"target": {"qps": 0.05}, "design": "blocks"}, r"target: measuring to a target needs `design` paired"),
    ({"target": {"qps": 0.05}, "repeats": 2}, r"target: `repeats` is the rounds every cell gets first, at least 3"),
    ({"target": {"qps": 0.05}, "budget": 2}, r"budget: 2 min cannot hold the 4 rounds every cell gets first"),
    ({"target": "qps"}, r"target: expected a mapping, got 'qps'"),
])
def test_what_a_target_refuses_before_anything_starts(overrides, message):
    with pytest.raises(ParamError, match=message):
        checks.resolve(load("thread_pool"), "quick", **{"budget": 30, **overrides})


def test_a_study_whose_cells_come_during_the_run_takes_no_target():
    with pytest.raises(ParamError, match="target: this study's comparison tables take no precision target"):
        checks.resolve(load("latency"), "quick", target={"p99": 0.2})
    p = checks.resolve(load("dbt3_plans"), "quick", target={"seconds": 0.05}, budget=60)
    assert schedule.rounds(p) == p.repeats  # the first rounds are planned; the rest come to the target


# ---------------------------------------------------------------- the loop, on known-answer noise

SD = {1: 0.02, 16: 0.15, 64: 3.0}   # per cell: met at once, met after some pairs, out of reach


def fake_study(values: list[dict]) -> Study:
    """A study whose pairs write known-answer QPS (log ratio ~ N(0, SD[threads]), seeded per
    pair) to `values`, each pair taking 10 s of a fake clock."""
    class Fake(Study):
        Params = NS(COMPARISONS=(Comparison("qps", "qps", True, "QPS"),))

        def pair(self, begin, cells):
            rng = np.random.default_rng(cells[0]["pair"])
            d = rng.normal(0, SD[cells[0]["threads"]])
            for i, cell in enumerate(cells):
                begin(i, cell)
                values.append({**cell, "qps": 1000.0 * (math.exp(d) if cell["arm"] == "B" else 1.0)})
            CLOCK[0] += 10.0

        def observations(self, run, p):
            return pd.DataFrame(values)
    return Fake()


CLOCK = [0.0]


def refined(tmp_path, monkeypatch, minutes: float) -> tuple[Loop, pd.DataFrame, pd.DataFrame, Run, list]:
    """The loop's rounds to a QPS target of 15 % on the fake study, `minutes` after its first 4 rounds."""
    values: list[dict] = []
    study = fake_study(values)
    arms = {"A": Arm("A"), "B": Arm("B")}
    p = NS(target={"qps": 0.15}, seed=1, restart_every=1, budget=30, design="paired", flavour="f",
           SHARED_SERVER=False)
    cells = [{"workload": "w", "threads": t} for t in SD]
    first = schedule.paired_order(list(arms.values()), cells, 4, seed=1)
    run = Run.create("fake_study", {"profile": "quick"}, root=tmp_path)
    run.update(arms=[{"label": "A", "twin_of": None}, {"label": "B", "twin_of": None}])
    monkeypatch.setattr(loop_module.time, "monotonic", lambda: CLOCK[0])
    loop = Loop(study, p, run)
    contexts = {k: NS(arm=None, repeat=0, session=None, progress=None) for k in arms}
    monkeypatch.setattr(loop, "servers", lambda steps, arms_: ({a: a for a in arms}, {a: [arms[a]] for a in arms}, contexts))
    monkeypatch.setattr(loop, "restart_due", lambda *a: None)
    for _, pair in first.groupby("pair", sort=False):  # the first rounds, as `rounds` measures them
        loop.pair(contexts, arms, pair.to_dict("records"), int(pair["repeat"].iloc[0]), 0, 0, NS(
            set_postfix_str=lambda s: None, update=lambda n: None))
    loop.end = CLOCK[0] + minutes * 60  # the budget left (no profiled rounds to keep time for)
    return loop, first, loop.refine(first, arms, progress=False), run, values


def test_the_loop_spends_rounds_only_where_a_cell_is_short_of_its_target(tmp_path, monkeypatch):
    loop, first, measured, run, values = refined(tmp_path, monkeypatch, 20)
    got = pd.DataFrame(values)
    assert CLOCK[0] <= loop.deadline
    # what it returns is what it measured, numbered on from the first rounds (a later phase goes on from it)
    assert len(measured) == len(got) - len(first) and measured["step"].min() == first["step"].max() + 1
    assert measured["pair"].min() == first["pair"].max() + 1 and list(measured.columns) == list(first.columns)
    pairs = got[got["arm"] == "A"].groupby("threads").size()
    record = run.metadata["precision"]
    assert pairs[1] == 4                           # met after its first rounds: nothing more
    assert 4 < pairs[16] < 120                     # rounds until it met the target
    by_cell = {c["cell"][1]: c for c in record["cells"]}
    assert by_cell[16]["more"] == 0 and by_cell[16]["mde_pct"]["qps"] <= 15
    assert by_cell[64]["left"] and by_cell[64]["more"] > 0 and pairs[64] == 4   # out of reach: left, named
    assert record["stopped"] == "1 cell short of the target needs more rounds than the budget has left"
    assert record["first_rounds"] == 4 and record["rounds"] == got["repeat"].max()
    # every refined pair: its cell's arms back to back, both positions as often (within one)
    for t, g in got.groupby("threads"):
        firsts = g[g["position"] == 0]["arm"].value_counts()
        assert abs(firsts.get("A", 0) - firsts.get("B", 0)) <= 1, t
    assert "4 rounds of every cell, then rounds only for the cells still above their target (QPS 15 %" in \
        described.design_line({**run.metadata, "design": "paired", "parameters": {"budget": 30}})


def test_the_planner_says_how_long_a_target_takes_and_what_it_leaves_undecided():
    tp, run = load("thread_pool"), Run.open(QUICK)
    p = checks.resolve(tp, "quick", repeats=4, budget=35, target={"p95": 0.25})
    head, most, *left = planner.to_target(tp, p, [run], "the recorded quick run")
    # per cell, the rounds its recorded noise needs (the test's variance: what fixed rounds, and the
    # words of an undecided cell, go by) — and the loop's own count (its pairs' spread about zero),
    # which a real difference adds to: the loop's hardest cell is left at its first rounds
    short = precision.shortfall(tp, NS(target=p.target), run).set_index("cell")["needs_p95"]
    _, frame, by, value = study_registry.paired_tables(tp, run)["p95"]
    v = precision.cell_variances(frame, by, value, *precision.compared(run))
    s2, _, d0 = stats.moderated(v["s2"].to_numpy(float), v["n"].to_numpy(float) - 1)
    plain = {tuple(c): stats.rounds_for(math.sqrt(x), 0.25, len(v), d0) for c, x in zip(v[by].to_numpy().tolist(), s2)}
    fixed = max(plain.values())
    assert f"the same MDE in every cell with fixed rounds: {fixed} rounds" in head and fixed < short.max()
    noisiest = max(plain, key=plain.get)
    assert most.startswith(f"  the cells whose noise needs the most rounds: {noisiest[0]}, {noisiest[1]} client threads ({fixed})")
    minutes = float(head.split("about ")[1].split(" min")[0])
    assert minutes <= 35 and left[0].startswith("  expected undecided within the 35-minute budget")
    hardest = short.idxmax()
    assert f"{hardest[0]}, {hardest[1]} client threads" in "".join(left)
    roomy = checks.resolve(tp, "quick", repeats=4, budget=600, target={"p95": 0.25})
    assert len(planner.to_target(tp, roomy, [run], "the recorded quick run")) == 2  # nothing left undecided


def test_where_rounds_go_never_depends_on_which_arm_of_a_pair_won():
    """What makes stopping valid: the loop's decisions see each pair's difference only up to its
    sign. Swapping the two arms' values in some rounds (an A/A pair's labels are exchangeable)
    leaves every cell's pairs to go as they were — and the test's own variance would not."""
    tp, run = load("thread_pool"), Run.open(QUICK)
    p = NS(target={"qps": 0.10, "p95": 0.25})
    tables = study_registry.paired_tables(tp, run)
    base, (cand,) = precision.compared(run)
    swapped = {}
    for metric, (label, frame, by, value) in tables.items():
        f = frame.copy()
        flip = f["repeat"].isin([2, 3, 5, 8, 13]) & f["arm"].isin([base, cand])
        f.loc[flip, "arm"] = f.loc[flip, "arm"].map({base: cand, cand: base})
        swapped[metric] = (label, f, by, value)
    before = precision.shortfall(tp, p, run).set_index("cell")
    class Swapped(type(tp)):
        def observations(self, run, p):
            return swapped["qps"][1]
    after = precision.shortfall(Swapped(), p, run).set_index("cell")
    for c in ("needs_qps", "needs_p95", "hopes_qps", "hopes_p95", "more", "hope"):
        assert np.allclose(before[c], after[c]), c
    v = [precision.cell_variances(t[1], t[2], t[3], base, [cand]) for t in (tables["qps"], swapped["qps"])]
    assert np.allclose(v[0]["s0"], v[1]["s0"]) and not np.allclose(v[0]["s2"], v[1]["s2"])
    assert (v[0]["s0"] >= v[0]["s2"] - 1e-12).all()  # precise on s0: precise on the test's variance


def test_stopping_on_precision_keeps_the_false_positive_rate():
    """Known-answer noise (normal, 8 cells whose SDs span 6×, no true difference): the adaptive
    rule — 4 first rounds, then pairs only while a cell's MDE is above 15 % — calls a
    difference in about as few tables as 48 fixed pairs do, finds +20 %, and spends fewer
    pairs."""
    rng = np.random.default_rng(3)
    d = rng.normal(0, 1, (400, 8)) * np.array([0.03, 0.05, 0.06, 0.08, 0.1, 0.12, 0.15, 0.18])
    r = stats.adaptive_on_resamples(d, 8, 0.15, first=4, most=48, shifts=(0.0, 0.20), draws=150, seed=1)
    fixed = stats.rule_on_resamples(d[:48], 8, shifts=(0.0,), draws=300, seed=1)
    assert r["tables_any_verdict"].iloc[0] <= 0.08 and fixed["tables_any_verdict"].iloc[0] <= 0.08
    assert r["cells_better"].iloc[1] >= 0.85 and r["cells_met"].iloc[0] >= 0.9
    assert r["pairs_per_cell"].iloc[0] < 0.6 * 48


def test_the_loop_never_starts_a_round_that_would_end_past_its_budget(tmp_path, monkeypatch):
    loop, first, more, run, values = refined(tmp_path, monkeypatch, 25 / 60)  # 25 s: two 10-s pairs
    assert CLOCK[0] <= loop.deadline and len(more) <= 2 * 2
    assert run.metadata["precision"]["stopped"].endswith("need more rounds than the budget has left") or \
        run.metadata["precision"]["stopped"].endswith("needs more rounds than the budget has left")


@pytest.mark.parametrize("where", ["make_study", "quick"])
def test_every_word_agrees_with_the_interval_printed_beside_it_in_the_recorded_quick_runs(where):
    """Over a recorded quick run's verdict tables, as its report prints them: "the same" only
    where the printed interval lies inside the draw threshold's band, "within the target"
    inside the target's band and not the threshold's, "inconclusive" past the band (the target's, or
    the threshold's where the table has no target),
    "better" and "worse" only where it excludes no change — read back from the printed text."""
    from pathlib import Path

    from dbstudies.analysis.said import answer_text
    from dbstudies.kit.study import load, params_of
    from dbstudies.store.results import Run
    run = Run.open(next((Path(__file__).parent / "fixtures" / where / "thread_pool").iterdir()))
    said = load("thread_pool").answer(run, params_of(run))
    seen = 0
    for name, rel in said.verdict_tables().items():
        for _, r in rel.iterrows():
            text = analysis.cell_text(r)
            m = re.match(r"([+−]?[\d.]+) % \[([+−][\d.]+), ([+−][\d.]+)\]", text)
            if not m:
                continue  # unbounded: no interval to agree with
            lo, hi = (1 + float(x.replace("−", "-")) / 100 for x in m.groups()[1:])
            seen += 1
            if "the same within" in text:
                band = float(re.search(r"… \+([\d.]+) %", text).group(1)) / 100
                assert stats.within(lo, hi, band), (name, text)
            elif "within the target's" in text:
                band = float(re.search(r"… \+([\d.]+) %", text).group(1)) / 100
                assert stats.within(lo, hi, band) and not stats.within(lo, hi, r["threshold_pct"] / 100), (name, text)
            elif text.split("] ", 1)[1].startswith("inconclusive"):
                band = (r["target_pct"] if r.get("reading") == "undecided" else r["threshold_pct"]) / 100
                assert not stats.within(lo, hi, band), (name, text)
            elif r["verdict"] in ("better", "worse"):
                assert lo > 1 or hi < 1, (name, text)
    assert seen >= 30
    assert "the same within ±" not in answer_text(said, run).lead  # every band said as applied
