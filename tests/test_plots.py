"""Figures: dodged series, plain 1-2-5 log ticks, one colour per configuration, alt text."""
import base64

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from dbstudies import plots  # noqa: E402


def summary():
    rows = []
    for w in ("oltp_point_select", "oltp_read_only"):
        for arm, k in (("one-thread-per-connection", 1.0), ("pool-of-threads", 1.2)):
            for t in (1, 16, 256):
                q = 1000 * t ** 0.5 * k
                rows.append({"workload": w, "arm": arm, "threads": t, "qps_median": q,
                             "qps_min": q * 0.9, "qps_max": q * 1.1, "cpu_server_pct": 50.0 + t / 4,
                             "cpu_client_pct": 20.0 + t / 8})
    return pd.DataFrame(rows)


def test_scaling_dodges_series_and_labels_ticks_plainly():
    fig = plots.scaling(summary(), "qps", "queries per second")
    ax = fig.axes[0]
    xs = [np.asarray(c.lines[0].get_xdata(), float) for c in ax.containers]  # one errorbar per arm
    assert len(xs) == 2 and np.all(xs[0] < xs[1])  # the two arms never share an x
    assert np.allclose(np.sqrt(xs[0] * xs[1]), [1, 16, 256])  # centred on the true x
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert "1,000" in labels and "2,000" in labels and not any("^" in x or "e" in x for x in labels)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "4", "8", "16", "32", "64", "128", "256"]
    assert plots.problems(plots.properties(fig)) == []
    assert "one-thread-per-connection, pool-of-threads" in fig.dbstudies_alt
    assert fig.get_size_inches()[0] <= plots.MAX_W


def test_colours_are_the_same_configuration_in_every_figure():
    s = summary()
    q, c = plots.scaling(s, "qps", "QPS"), plots.cpu(s)
    pal = plots.palette(s["arm"])
    qcol = {c.get_label(): c.lines[0].get_color() for c in q.axes[0].containers}
    ccol = {ln.get_label().split(",")[0]: ln.get_color() for ln in c.axes[0].get_lines()}
    for arm, colour in pal.items():
        assert matplotlib.colors.same_color(qcol[arm], colour)
        assert matplotlib.colors.same_color(ccol[arm], colour)


def test_publish_saves_png_and_svg_and_shows_alt_text(tmp_path, monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj._repr_png_()))
    run = type("R", (), {"figures": tmp_path / "figures"})()  # what publish asks of a run
    plots.publish(plots.scaling(summary(), "qps", "QPS"), run, "qps")
    png = tmp_path / "figures" / "qps.png"
    assert png.stat().st_size > 0 and (tmp_path / "figures" / "qps.svg").exists()
    (data, meta), = shown  # the saved file shown, at the inline size (100 of its 120 dpi)
    assert base64.b64decode(data) == png.read_bytes() and meta["alt"].startswith("QPS against client threads")
    assert meta["width"] == round(int.from_bytes(png.read_bytes()[16:20], "big") * 100 / 120)


@pytest.mark.parametrize("low, high, expected", [(0.05, 0.3, [0.02, 0.05, 0.1, 0.2, 0.5]),
                                                 (900, 1100, [500, 1000, 2000])])
def test_ticks_125(low, high, expected):
    assert plots.ticks_125(low, high) == expected


def test_query_charts_of_a_partial_run_draw_what_there_is():
    """A run that failed before any candidate ran holds the baseline only: the normalised
    chart holds the baseline's own spread, the per-query chart shows the baseline; long x
    labels (the forced-order chart) are wrapped, not overlapping."""
    base = pd.DataFrame({"query": [3, 5], "arm": ["base", "base"], "geomean_s": [1.0, 2.0],
                         "min_s": [0.9, 1.8], "max_s": [1.1, 2.2]})
    fig = plots.normalised(base, "base")
    assert not fig.axes[0].patches  # no candidate bar; the baseline's own spread only
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["base (= 100 %): its own min–max"]
    assert [t.get_text() for t in plots.per_query(base).axes[0].get_xticklabels()] == ["Q3", "Q5"]
    cases = base.assign(case=["Q3 on selectivity 4 (default)", "Q5 on selectivity 1"])
    ticks = [t.get_text() for t in plots.per_query(cases, x="case").axes[0].get_xticklabels()]
    assert ticks[0] == "Q3 on\nselectivity 4\n(default)" and all(
        len(line) <= 16 for t in ticks for line in t.split("\n"))


def test_bands_draw_the_median_over_repeats_inside_a_min_max_band():
    rows = [{"arm": arm, "step": step, "second": s, "tps": base * k + s, "bp_hit_pct": 90.0 + k}
            for arm, base in (("none", 100.0), ("page:zlib", 50.0))
            for step, k in ((1, 0.9), (2, 1.0), (3, 1.2)) if not (arm == "page:zlib" and step == 1)
            for s in range(10)]
    fig = plots.bands(pd.DataFrame(rows), {"tps": "TPS", "bp_hit_pct": "hit %"})
    tps_ax, hit_ax = fig.axes[:2]
    none = tps_ax.lines[0].get_ydata()
    assert np.allclose(none, [100 + s for s in range(10)])  # the middle repeat of three
    band = tps_ax.collections[0].get_paths()[0].vertices[:, 1]
    assert band.min() == pytest.approx(90) and band.max() == pytest.approx(129)
    assert tps_ax.get_ylim()[0] == 0 and hit_ax.get_ylim()[0] > 80  # percentages zoom
    assert "median over repeats" in fig.dbstudies_alt


def test_bars_group_prefixes_with_min_max_whiskers():
    summ = pd.DataFrame([{"arm": a, "app_median": m, "app_min": m - 1, "app_max": m + 2,
                          "alloc_median": m / 2, "alloc_min": m / 2, "alloc_max": m / 2}
                         for a, m in (("none", 10.0), ("page:zlib", 8.0))])
    fig = plots.bars(summ, {"MiB": {"app": "apparent", "alloc": "allocated"}})
    ax = fig.axes[0]
    heights = [p.get_height() for p in ax.patches]
    assert heights == [10.0, 8.0, 5.0, 4.0]  # apparent per arm, then allocated per arm
    assert [t.get_text() for t in ax.get_xticklabels()] == ["none", "page:zlib"]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["apparent (light)", "allocated (solid)"]
    colours = [p.get_facecolor()[:3] for p in ax.patches]
    assert colours[0] == colours[2] != colours[1]  # each arm keeps its colour, shade tells apart


def test_problems_find_what_makes_a_figure_hard_to_read():
    """One labelled tick on a log axis, no unit, two series without a legend, a point
    beyond the axis and a marker cut by the frame are each found; the same data drawn by
    `scaling` (ticks, unit, legend, room at the edges) has none of them."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    ax.plot([1, 2, 3], [2.1, 2.3, 2.6], "o", label="a")
    ax.plot([1, 2, 3], [2.2, 2.4, 9.0], "o", label="b")
    ax.set_yscale("log")
    ax.set_ylim(2.1, 3)
    ax.set_ylabel("latency")
    ax.set_xlabel("client threads")
    found = plots.problems(plots.properties(fig))
    assert "panel 1: y label 'latency' names no unit" in found
    assert "panel 1: 2 series and no legend" in found
    assert "panel 1: 1 data point(s) outside the axes, unmarked" in found
    assert "panel 1: 1 marker(s) on the frame, cut in half" in found
    assert any(p.startswith("panel 1: ") and "labelled y tick" in p for p in found)
    narrow = summary().assign(qps_median=2.3, qps_min=2.1, qps_max=2.6)
    assert plots.problems(plots.properties(plots.scaling(narrow, "qps", "latency (ms)"))) == []


def test_a_zoomed_chart_marks_the_values_beyond_its_edge():
    s = pd.DataFrame({"query": [3, 5, 3, 5], "arm": ["base", "base", "c", "c"],
                      "geomean_s": [1.0, 1.0, 1.68, 0.95], "min_s": [0.9, 0.9, 1.6, 0.7],
                      "max_s": [1.1, 1.1, 1.7, 1.0]})
    fig = plots.normalised(s, "base", zoom=20)
    ax = fig.axes[0]
    marks = [(ln.get_ydata()[0], ln.get_marker(), ln.get_markerfacecolor())
             for ln in ax.get_lines() if ln.get_gid() == plots.CLIPPED]
    assert marks == [(120, "^", "0.15"), (80, "v", "none")]  # Q3's bar, Q5's whisker (70 %)
    assert [t.get_text() for t in ax.texts] == ["168 %"]
    assert plots.problems(plots.properties(fig)) == []


def test_a_label_keeps_its_colour_across_figures_with_other_labels():
    a = plots.palette(["z-base", "z-cand"])
    b = plots.palette(["z-cand"])            # a figure of the candidate alone
    c = plots.palette(["z-own", "z-base"])   # a label first seen later gets a new colour
    assert b["z-cand"] == a["z-cand"] and c["z-base"] == a["z-base"]
    assert c["z-own"] not in (a["z-base"], a["z-cand"])


def test_a_sweeps_runs_side_by_side_are_readable():
    table = pd.DataFrame([{"run": f"threads=[{t}]", "arm": arm, "workload": "oltp_read_only", "threads": t,
                           "qps_median": 1000.0 * t ** 0.5 * k} for t in (1, 8, 64)
                          for arm, k in (("one-thread-per-connection", 1.0), ("pool-of-threads", 1.2))])
    fig = plots.sweep(table, "qps_median", "queries per second")
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["threads=[1]", "threads=[8]", "threads=[64]"]
    assert plots.problems(plots.properties(fig)) == []
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["one-thread-per-connection", "pool-of-threads"]


def test_whiskers_of_a_tight_spread_far_from_zero_are_not_cut_by_the_frame():
    """Per-run panels start at zero; the autoscaled top, kept when rescaled from zero, sat a
    pixel above the markers of a tight spread (a checkpoint smoke run's median TPS)."""
    s = pd.DataFrame({"arm": ["a", "b"], "x_median": [4440.0, 4300.0], "x_min": [4430.0, 4290.0],
                      "x_max": [4450.0, 4310.0], "y_median": [0.0, 0.0], "y_min": [0.0, 0.0], "y_max": [0.0, 0.0]})
    fig = plots.whiskers(s, {"x": "median TPS", "y": "stall seconds"})
    assert plots.problems(plots.properties(fig)) == []
    assert fig.axes[1].get_ylim()[1] == 1  # nothing stalled: an axis up to 1


def test_the_shift_function_finds_a_known_shift_and_draws_it_readably():
    """A candidate whose every transaction takes 3× the baseline's in the tail only: the
    ratio is 1 in the body and 3 at p99 and beyond, each inside its round-resampled band."""
    from dbstudies.analysis import tails
    rng = np.random.default_rng(3)
    rows, steps = [], []
    for r in range(1, 9):
        for arm in ("base", "cand"):
            step = len(steps) + 1
            steps.append({"step": step, "workload": "w", "threads": 16, "arm": arm, "repeat": r})
            body = rng.lognormal(0, 0.3, 990)
            tail = rng.lognormal(np.log(8), 0.2, 10) * (3 if arm == "cand" else 1)
            values, counts = np.unique(np.round(np.concatenate([body, tail]), 2), return_counts=True)
            rows += [{"step": step, "value_ms": v, "count": c} for v, c in zip(values, counts)]
    d = tails.shift(pd.DataFrame(rows), pd.DataFrame(steps), "base", ["cand"])
    at = d.set_index("q")
    assert at.loc[50.0, "ratio"] == pytest.approx(1, abs=0.1) and at.loc[50.0, "low"] <= 1 <= at.loc[50.0, "high"]
    assert at.loc[99.9, "ratio"] == pytest.approx(3, rel=0.35) and at.loc[99.9, "low"] > 1.5
    assert (d["low"] <= d["ratio"]).all() and (d["ratio"] <= d["high"]).all() and (d["rounds"] == 8).all()
    fig = plots.shift(d, threshold=0.05)
    assert plots.problems(plots.properties(fig)) == []


def test_the_figure_check_counts_every_drawn_series_and_an_empty_figure_fails_it():
    """Error bars are series too (the QPS-vs-threads figure counted 0, so an empty one would
    have passed); a figure that draws nothing is a problem; lines across thread counts that
    were not measured are dotted and the title says so."""
    import matplotlib.pyplot as plt
    s = pd.DataFrame([{"workload": "w", "arm": arm, "threads": t, "qps_median": 100.0 * t * k,
                       "qps_min": 90.0 * t * k, "qps_max": 110.0 * t * k}
                      for t in (1, 16, 64) for arm, k in (("a", 1.0), ("b", 0.8))])
    fig = plots.scaling(s, "qps", "queries per second")
    props = plots.properties(fig)
    assert props["panels"][0]["series"] == 2 and props["panels"][0]["drawn"] >= 2
    assert plots.problems(props) == []
    assert "dotted: thread counts in between not measured" in fig._suptitle.get_text()
    styles = {ln.get_linestyle() for ln in fig.axes[0].get_lines() if len(ln.get_xdata()) == 2}
    assert styles == {":"}  # 1 → 16 and 16 → 64 both skip counts
    empty, _ = plt.subplots()
    empty.axes[0].set_xlabel("client threads")
    assert "no data series drawn" in " ".join(plots.problems(plots.properties(empty)))
    plt.close("all")


def test_an_unbounded_interval_leaves_the_ratio_axis_readable():
    """Two pairs give an interval of 1e-6 … 4e8 (the tables say "unbounded"): it used to set
    the y-range, leaving one labelled tick (a versions smoke run's figure); now the rounds'
    ratios and the bounded intervals set it, and the unbounded one runs to the frame."""
    pairs = pd.DataFrame([{"workload": w, "threads": t, "candidate": "b", "repeat": r, "ratio": 1.0 + 0.05 * r}
                          for w in ("w1", "w2") for t in (1, 4) for r in (1, 2)])
    rel = pd.DataFrame([{"workload": w, "threads": t, "candidate": "b", "ratio": 1.07,
                         "ci_low": 1e-6 if w == "w2" else 0.9, "ci_high": 4e8 if w == "w2" else 1.3}
                        for w in ("w1", "w2") for t in (1, 4)])
    fig = plots.ratios_per_round(pairs, rel, ylabel="QPS", threshold=0.05)
    props = plots.properties(fig)
    assert plots.problems(props) == []
    assert all(len(p["yticks"]) >= 3 for p in props["panels"])
    assert fig.axes[1].get_ylim()[1] < 2  # not the interval's 4e8


def test_an_interval_cut_at_the_frame_is_never_a_point_outside_it():
    """An unbounded interval is cut at the frame; its cap, drawn at ratio − its distance to
    the frame, used to land a floating-point hair beyond the limit — "1 data point outside
    the axes" in a thread-pool smoke run's figure, whose rounds and intervals these are."""
    import matplotlib.pyplot as plt
    rounds = {1: (0.8205865938802751, 1.1760644685490718), 8: (0.6986164721183118, 0.38228942114038983),
              64: (0.42773989127309503, 1.2490834291215869)}
    pairs = pd.DataFrame([{"workload": "oltp_point_select", "threads": t, "candidate": "pool", "repeat": r + 1,
                           "ratio": q} for t, qs in rounds.items() for r, q in enumerate(qs)])
    rel = pd.DataFrame([{"workload": "oltp_point_select", "threads": t, "candidate": "pool", "ratio": q,
                         "ci_low": lo, "ci_high": hi, "holm_ci_low": hlo, "holm_ci_high": hhi}
                        for t, q, lo, hi, hlo, hhi in (
                            (1, 0.9823760667027163, 0.19347634099886285, 4.988014200847284, 0.19347634099886285,
                             4.988014200847284),
                            (8, 0.516791724706627, 0.09730646218555743, 2.7446654695549118, 0.04042449293229238,
                             6.606729419527317),
                            (64, 0.7309465166231326, 0.11932896751465286, 4.477394058554011, 0.06774388040831798,
                             7.886805523143443))])
    props = plots.properties(plots.ratios_per_round(pairs, rel, ylabel="QPS", threshold=0.05))
    assert props["panels"][0]["outside"] == 0 and plots.problems(props) == []
    plt.close("all")
