"""`dbstudies history` and `bisect` (`dbstudies.workflows.history`, `dbstudies.workflows.bisection`): the series' checks before anything
starts, the bisection's decisions and its end on simulated runs at this host's recorded noise,
the series' effects and report from simulated runs. The live series of this machine is in
docs/statistics.md ("Which build changed it") and the maintainers' notes."""
from __future__ import annotations

import json
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import trees

from dbstudies import cli, stats
from dbstudies.core import paths
from dbstudies.core.errors import ParamError
from dbstudies.plots import axes
from dbstudies.store import archive
from dbstudies.workflows import bisection, cluster, grid, history, series, sweep

AA = np.loadtxt(Path(__file__).parent / "fixtures" / "series" / "aa-pairs.txt")
BUILDS = [f"b{i}" for i in range(1, 9)]
STEP_AT, STEP = 5, -0.10  # from b5 on, 10 % fewer transactions


def level(build: str) -> float:
    return np.log1p(STEP) if build in BUILDS and BUILDS.index(build) + 1 >= STEP_AT else 0.0


def steps_of(rng, arms: list[str], pairs: int = 40) -> pd.DataFrame:
    """A paired run of `arms` at this host's noise: per pair a shared level (drift), per step
    noise whose pair differences have the recorded A/A spread."""
    rows = []
    sd = AA.std(ddof=1) / np.sqrt(2)
    for p in range(1, pairs + 1):
        drift = rng.normal(0, 0.05)
        for a in arms:
            rows.append({"workload": "oltp_point_select", "threads": 16, "arm": a, "pair": p,
                         "qps": 90_000 * np.exp(drift + level(a) + rng.normal(0, sd))})
    return pd.DataFrame(rows)


def test_the_midpoint_is_put_on_its_side_or_said_to_be_in_between():
    rng = np.random.default_rng(1)
    verdict, why, e = bisection.side(steps_of(rng, ["b1", "b3", "b8"]), "b1", "b3", "b8")
    assert verdict == "good" and "b3 is like b1" in why and e["bad vs good"]["hi"] < 0
    verdict, *_ = bisection.side(steps_of(rng, ["b1", "b6", "b8"]), "b1", "b6", "b8")
    assert verdict == "bad"
    verdict, *_ = bisection.side(steps_of(rng, ["b1", "b2", "b3"]), "b1", "b2", "b3")
    assert verdict == "no change"  # 40 pairs: the ends' interval lies within ±5 %
    # three pairs of ends across a real −10 % step: −5.0 % [−17.4, +9.3] — undecided, never "no change"
    verdict, why, e = bisection.side(steps_of(rng, ["b1", "b3", "b8"], pairs=3), "b1", "b3", "b8")
    assert not e["bad vs good"]["moved"] and verdict == "undecided" and "too wide to call them the same" in why, why
    verdict, why, _ = bisection.side(steps_of(rng, ["b1", "b2", "b3"], pairs=2), "b1", "b2", "b3")
    assert verdict == "undecided" and "measure them with more pairs" in why, why


def test_a_bisection_ends_at_the_step_in_fewer_builds_than_the_series(tmp_path, monkeypatch):
    monkeypatch.setattr(series, "SERIES_DIR", tmp_path)
    rng = np.random.default_rng(2)
    files = tuple(f"/builds/{b}.toml" for b in BUILDS)  # flavour files: the runs name their arms by stem
    s = series.Series("t", files[0], files, "smoke", {})
    done = bisection.bisect(s, files[0], files[-1], say=lambda m: None,
                          measure_three=lambda g, m, b: steps_of(rng, [series.short(x) for x in (g, m, b)]))
    assert done["end"].startswith("the change is between build b4 and build b5: "), done["end"]
    lo, hi = map(float, done["end"].replace("−", "-").split("[")[1].rstrip("]").split(", "))
    assert lo < STEP * 100 < hi  # its size, with an interval that holds the true −10 %
    assert [(p["mid"], p["side"]) for p in done["path"]] == [("b4", "good"), ("b6", "bad"), ("b5", "bad")]
    assert len(done["measured"]) == 5 < len(BUILDS)  # b1, b4, b5, b6, b8
    kept = json.loads((tmp_path / "t" / "bisect.json").read_text())
    assert kept["end"] == done["end"] and len(kept["path"]) == len(done["path"])


def test_the_series_finds_its_step_and_writes_a_report_with_its_figure(tmp_path, monkeypatch):
    monkeypatch.setattr(series, "SERIES_DIR", tmp_path)
    rng = np.random.default_rng(3)
    s = series.Series("t", "ref", tuple(f"/somewhere/{b}.toml" for b in BUILDS), "smoke", {})  # flavour files
    effects = pd.concat([pd.DataFrame([{"workload": "oltp_point_select", "threads": 16, "build": b, "order": i,
                                        **_effect(steps_of(rng, ["ref", b]), b)}]) for i, b in enumerate(BUILDS)])
    monkeypatch.setattr(history, "series_effects", lambda s, runs: effects)
    found = history.changes(effects, BUILDS)
    (change,) = [c for c in found["changes"] if c["kept"]]
    assert (change["after"], change["before"]) == ("b4", "b5")
    assert change["steps"][0]["lo"] < -10 < change["steps"][0]["hi"]
    colours = dict(axes._COLOURS)  # the configurations' colours, one per label for a whole process
    page = history.report(s, {b: tmp_path for b in s.builds}).read_text()
    assert axes._COLOURS == colours  # the series' figure takes none (later figures keep theirs)
    assert "Between b4 and b5" in page and "data:image/png;base64," in page and "no change detectable above" in page
    assert (tmp_path / "t" / "effects.csv").exists() and (tmp_path / "t" / "figures" / "effects.png").exists()
    assert "Bisection" not in page and f"dbstudies pack {tmp_path / 't'}" in page
    # a bisection in the same folder: its end, path and command in the same report
    series.save_bisect(s, {"builds": BUILDS, "measured": ["b1", "b4", "b5", "b6", "b8"], "argv": "dbstudies bisect --name t",
                           "path": [{"good": "b4", "mid": "b5", "bad": "b6", "side": "bad", "why": "b5 is like b6",
                                     "run": "/x/r"}], "end": "the change is between build b4 and build b5"}, fresh=True)
    page = history.report(s, {b: tmp_path for b in s.builds}).read_text()
    assert page.count("<b>Bisection: the change is between build b4 and build b5</b> — 5 of 8 builds measured") == 2
    assert "<td>b5 is like b6</td>" in page and "dbstudies bisect --name t" in page


def test_a_series_on_dask_hosts_keeps_what_came_back_names_what_did_not_and_goes_on_from_there(tmp_path, monkeypatch):
    """The builds not yet measured are one sweep on the scheduler (its runs checked in
    tests/test_sweep.py on a real cluster): a run that came back is the series', one whose
    host died is named with where it stayed, and the next `history` asks only for the rest."""
    monkeypatch.setattr(series, "SERIES_DIR", tmp_path)
    s = series.Series("t", "ref", ("b1", "b2", "b3"), "smoke", {})
    keys = {b: grid.Job(series.STUDY, "smoke", s.parameters_of("ref", b)).key for b in s.builds}
    (tmp_path / "r1").mkdir()
    (tmp_path / "r1" / "metadata.json").write_text("{}")
    asked = []

    def run_on(self, way):
        asked.append((way.address, [j.key for j in self.jobs]))
        self.records += [{"key": keys["b1"], "status": "complete", "run_dir": str(tmp_path / "r1")},
                         {"key": keys["b2"], "status": "abandoned", "run_dir": None, "kept_at": "host2:/runs/x",
                          "error": "KilledWorker"}]
    monkeypatch.setattr(sweep.Sweep, "run_on", run_on)
    monkeypatch.setattr(history, "effects_of", lambda run, base, cand, metric=None: pd.DataFrame())
    with pytest.raises(RuntimeError) as e:
        history.measure(s, say=lambda m: None, scheduler=cluster.Access("tls://h:8786", None))
    assert asked == [("tls://h:8786", [keys["b1"], keys["b2"], keys["b3"]])]
    assert str(e.value) == ("b2: its run ended abandoned: KilledWorker (host2:/runs/x); "
                            "b3: its run ended not run (no run directory)")
    assert json.loads((tmp_path / "t" / "series.json").read_text())["runs"] == {"b1": str(tmp_path / "r1")}
    monkeypatch.setattr(sweep, "completed", lambda runs_dir, study: {keys["b1"]: tmp_path / "r1"})
    with pytest.raises(RuntimeError):
        history.measure(s, say=lambda m: None, scheduler=cluster.Access("tls://h:8786", None))
    assert asked[1] == ("tls://h:8786", [keys["b2"], keys["b3"]])  # b1 is not measured again


# the count (instructions per transaction): recorded pair residuals and the spread of a build's
# effect between runs (tests/fixtures/series/count-*.txt, from the live count runs of 2026-11-28)
COUNT_PAIRS = np.loadtxt(Path(__file__).parent / "fixtures" / "series" / "count-pairs.txt")
COUNT_RUNS_SD = float(np.loadtxt(Path(__file__).parent / "fixtures" / "series" / "count-runs.txt").std(ddof=1))
COUNT_STEP = 0.01  # +1 % instructions from b5 on


def _count_effect(rng, level: float, between_runs: bool, pairs: int = 4) -> dict:
    """One count run's effect (log) of a build against another, at the recorded noise: its pairs
    resampled from the recorded residuals, and — measured in a run of its own against the
    reference — that run's shift (two neighbours in one run share theirs)."""
    d = rng.choice(COUNT_PAIRS, pairs) + level + (rng.normal(0, COUNT_RUNS_SD) if between_runs else 0.0)
    return stats.paired_effect(d)


def test_by_count_a_1_percent_step_is_reported_at_its_build_alone_once_its_neighbours_confirm_it(tmp_path, monkeypatch):
    """Issue 65's known answer: 8 builds counted against the reference, 4 pairs each, a +1 %
    step in instructions per transaction from b5 on. The series' effects alone put a change point
    wherever two runs moved apart (≈ 15 % of all-equal series: a count's runs move by 0.04 %, its
    pairs by 0.03 %); the neighbours' own paired run confirms the step and drops those — reported
    at b4→b5, and only there, in ≥ 95 % of series; in all-equal series in ≤ 5 %."""
    monkeypatch.setattr(series, "SERIES_DIR", tmp_path)
    s = series.Series("c", "ref", tuple(BUILDS), "count", {})
    m = s.metric  # the versions study's count comparison at its count profile's draw threshold
    assert (m.column, m.same, m.digits, m.by) == ("instr_per_txn", 0.002, 2, ["workload", "threads"])
    assert series.Series("q", "ref", tuple(BUILDS), "quick", {}).metric == series.QPS  # throughput, ±5 %
    rng = np.random.default_rng(21)
    (tmp_path / "metadata.json").write_text("{}")  # the neighbours' run: its effect simulated below

    def lvl(b: str, step: float) -> float:
        return np.log1p(step) if BUILDS.index(b) + 1 >= STEP_AT else 0.0

    def one(step: float) -> list[tuple[str, str]]:
        rows = [{"workload": "oltp_point_select", "threads": 1, "build": b, "order": i,
                 **_count_effect(rng, lvl(b, step), True)} for i, b in enumerate(BUILDS)]
        found = history.changes(pd.DataFrame(rows), BUILDS)
        monkeypatch.setattr(history, "effects_of", lambda run, base, cand, metric: pd.DataFrame(
            [{"workload": "oltp_point_select", "threads": 1,
              **_count_effect(rng, lvl(cand, step) - lvl(base, step), False)}]))
        found = history.confirmed(s, found, {pair: tmp_path for pair in history.neighbours(s, found)})
        return [(c["after"], c["before"]) for c in history.reported(found)], found

    hits = candidates = alarms = 0
    for _ in range(200):
        got, found = one(COUNT_STEP)
        hits += got == [("b4", "b5")]
        candidates += [(c["after"], c["before"]) for c in found["changes"] if c["kept"]] == [("b4", "b5")]
        alarms += bool(one(0.0)[0])
    print(f"by count, +1 % at b5: reported there alone in {hits / 2:.1f} % (the effects alone: {candidates / 2:.1f} %); "
          f"all-equal series reported a change in {alarms / 2:.1f} %")
    assert hits / 200 >= 0.95 and alarms / 200 <= 0.05
    # … and in words: the step's size to two decimals, the neighbours' run beside it
    got, found = one(COUNT_STEP)
    words = history.change_words(found, s.metric)
    assert words[0].startswith("**Between b4 and b5**: oltp_point_select@1 +1.0") and "confirmed: b5 against b4" in words[0]
    # a step the effects show and the neighbours' run does not (two runs drifted), or has not measured yet
    drift = {"changes": [{"index": 6, "after": "b6", "before": "b7", "kept": True, "together": 1, "steps": [
        {"cell": "oltp_point_select@1", "pct": 0.08, "lo": 0.03, "hi": 0.13, "moved": 1}]}], "quiet": [], "tau2": {}}
    monkeypatch.setattr(history, "effects_of", lambda run, base, cand, metric: pd.DataFrame(
        [{"workload": "oltp_point_select", "threads": 1, **stats.paired_effect([0.0001, -0.0002, 0.0, 0.0001])}]))
    words = history.change_words(history.confirmed(s, drift, {("b6", "b7"): tmp_path}), s.metric)
    assert words[0].startswith("**No change point**") and "confirmed by its neighbours' paired run" in words[0]
    assert "not confirmed: b7 against b6 in one paired run oltp_point_select@1 +0.00 % [" in words[1] and "not counted" in words[1]
    words = history.change_words(history.confirmed(s, drift, {}), s.metric)
    assert "not confirmed yet" in words[1] and not history.reported(drift)


def _effect(steps: pd.DataFrame, build: str) -> dict:
    d = np.log(steps[steps["arm"] == build]["qps"].to_numpy() / steps[steps["arm"] == "ref"]["qps"].to_numpy())
    se = d.std(ddof=1) / np.sqrt(len(d))
    return {"log": d.mean(), "se": se, "pairs": len(d), "pct": np.expm1(d.mean()) * 100,
            "lo": np.expm1(d.mean() - 2 * se) * 100, "hi": np.expm1(d.mean() + 2 * se) * 100}


@pytest.mark.parametrize("argv, said", [
    (["history", "--reference", "mariadb-10.11", "--builds", "mariadb-10.5"], "at least 2 builds"),
    (["history", "--reference", "mariadb-10.11", "--builds", "mariadb-10.5", "nope"], "unknown server flavour 'nope'"),
    (["history", "--reference", "mariadb-10.11", "--order", "/nonexistent/order.txt"], "--order /nonexistent/order.txt"),
    (["bisect", "--good", "mariadb-10.5", "--bad", "nope", "--builds", "mariadb-10.5", "mariadb-11.8"],
     "nope is not among the builds"),
    (["history", "--reference", "mariadb-10.11", "--order", "version", "--builds", "a", "b"], "give it with --from-dir"),
    (["history", "--reference", "mariadb-10.11", "--from-dir", "/nonexistent/builds"], "no such folder"),
    (["history", "--reference", "mariadb-10.11", "--from-dir", "/tmp", "--builds", "a", "b"], "name the builds one way"),
])
def test_bad_input_is_one_line_and_exit_2_with_nothing_written(argv, said, capsys):
    assert cli.main([*argv, "--name", "bad"]) == 2
    err = capsys.readouterr().err
    assert said in err and len([x for x in err.splitlines() if x.startswith("  - ")]) == 1, err
    assert not (series.SERIES_DIR / "bad").exists()


def test_a_build_whose_server_does_not_run_is_refused_before_anything_runs(tmp_path):
    text = (Path(paths.SERVERS_DIR) / "mariadb-10.11.toml").read_text()
    crashing = tmp_path / "crashing.toml"
    crashing.write_text(text.replace('name = "mariadb-10.11"', 'name = "crashing"')
                        .replace('server = "/usr/sbin/mariadbd"', 'server = "/bin/false"'))
    with pytest.raises(ParamError) as e:
        series.check("mariadb-10.11", [str(crashing)], "smoke", {}, least=1)
    assert e.value.problems == ["crashing: its server does not run: `/bin/false --version` names no MariaDB or "
                                "MySQL version"]


def test_a_build_whose_server_refuses_its_settings_is_refused_before_anything_runs():
    with pytest.raises(ParamError) as e:
        series.check("mariadb-10.11", ["mariadb-11.8"], "smoke", {"settings": {"innodb_no_such_option": 1}},
                      least=1)
    assert any("innodb_no_such_option" in m for m in e.value.problems)


@pytest.mark.server
def test_a_folder_of_builds_is_the_series_in_its_order_and_a_bad_one_writes_nothing(tmp_path, monkeypatch):
    """Subfolders of build prefixes (the host's MariaDB as a release tarball and as a build
    tree) become flavours under the series' folder, ordered by version then name, or by an
    order file; the reference may be one of them. A subfolder that is no server, or an order
    naming a missing one: one line each, exit 2, nothing written."""
    monkeypatch.setattr(series, "SERIES_DIR", tmp_path / "series")
    prefix = trees.mariadb_prefix(tmp_path / "prefix")
    top = tmp_path / "builds"
    trees.mariadb_tarball(prefix, top / "r10")
    trees.mariadb_build_tree(prefix, top / "r2")
    (top / "r1").symlink_to(top / "r10")
    (top / "notes").mkdir()  # no server in it
    assert cli.main(["history", "--name", "dir", "--reference", "r1", "--from-dir", str(top)]) == 2
    assert not (tmp_path / "series").exists()
    order = tmp_path / "order.txt"
    order.write_text("r10\nr2\nr3\n")
    with pytest.raises(ParamError) as e:
        series.detect_folder(top, order)
    assert e.value.problems == [f"--order {order} names r3, which is no subfolder of {top}"]

    seen = {}

    def stop(s, **kw):
        seen["series"] = s
        raise RuntimeError("measured nothing")
    monkeypatch.setattr(history, "measure", stop)
    (top / "notes").rmdir()
    with pytest.raises(RuntimeError, match="measured nothing"):
        history.main("dir", "r1", "smoke", {}, folder=top)
    s = seen["series"]
    assert [series.short(b) for b in s.builds] == ["r2", "r10"] and series.short(s.reference) == "r1"
    written = sorted(p.name for p in (tmp_path / "series" / "dir" / "builds").iterdir())
    assert written == ["r1.toml", "r10.toml", "r2.toml"]
    assert series.load_flavour(str(s.builds[0])).layout == "build tree"
    order.write_text("r10  # the tarball first\nr2\n")
    with pytest.raises(RuntimeError, match="measured nothing"):
        history.main("dir", "r1", "smoke", {}, folder=top, order=order)
    assert [series.short(b) for b in seen["series"].builds] == ["r10", "r2"]
    monkeypatch.setattr(bisection, "bisect", lambda s, good, bad, say=print: seen.update(ends=(good, bad)) or 1 / 0)
    with pytest.raises(ZeroDivisionError):  # the ends named as the report names them: their subfolders
        bisection.main("dir", "smoke", {}, "r1", "r10", folder=top)
    assert [series.short(b) for b in seen["ends"]] == ["r1", "r10"] and seen["ends"][0].endswith("builds/r1.toml")


def test_a_series_packs_as_one_file_with_its_runs_and_without_datadirs(tmp_path, monkeypatch):
    monkeypatch.setattr(series, "SERIES_DIR", tmp_path / "series")
    s = series.Series("p", "ref", ("b1", "b2"), "smoke", {})
    series.save_series(s, {"b1": str(s.folder / "runs" / "versions" / "r1")}, argv="dbstudies history --name p")
    run = s.folder / "runs" / "versions" / "r1"
    (run / "server" / "b1" / "datadir").mkdir(parents=True)
    (run / "server" / "b1" / "datadir" / "ibdata1").write_bytes(b"x" * 100)
    (run / "metadata.json").write_text(json.dumps({"status": "running", "study": "versions"}))
    (s.folder / "report.html").write_text("<html></html>")
    with pytest.raises(archive.ArchiveError, match="r1 is still running"):
        archive.pack_folder(s.folder, "series", tmp_path / "out")
    (run / "metadata.json").write_text(json.dumps({"status": "complete", "study": "versions"}))
    assert cli.main(["pack", str(s.folder), "--out", str(tmp_path)]) == 0
    packed = tmp_path / "series-p.series.tar.gz"
    with tarfile.open(packed) as tar:
        names = set(tar.getnames())
        manifest = json.loads(tar.extractfile("MANIFEST.json").read())
    assert {"p/series.json", "p/report.html", "p/runs/versions/r1/metadata.json"} <= names
    assert not any("datadir" in n for n in names) and manifest["kind"] == "series"
    assert set(manifest["files"]) == {n.removeprefix("p/") for n in names if n != "MANIFEST.json"}


def test_a_bisection_in_a_historys_folder_leaves_its_record_and_joins_its_report(tmp_path, monkeypatch):
    monkeypatch.setattr(series, "SERIES_DIR", tmp_path)
    monkeypatch.setattr(series, "check", lambda *a, **k: None)
    monkeypatch.setattr(bisection, "check", lambda *a, **k: None)
    h = series.Series("h", "ref", tuple(BUILDS), "smoke", {})
    series.save_series(h, {}, argv="dbstudies history --name h")
    rng = np.random.default_rng(2)
    monkeypatch.setattr(bisection, "_three", lambda s, g, m, b, say: steps_of(rng, [g, m, b]))
    assert cli.main(["bisect", "--name", "h", "--profile", "smoke", "--good", "b1", "--bad", "b8", "--builds", *BUILDS]) == 0
    kept = json.loads((tmp_path / "h" / series.SERIES_FILE).read_text())
    assert kept["reference"] == "ref" and kept["argv"] == "dbstudies history --name h"  # the history's, untouched
    record = json.loads((tmp_path / "h" / series.BISECT_FILE).read_text())
    assert record["end"].startswith("the change is between build b4 and build b5") and len(record["measured"]) == 5
    assert record["argv"].startswith("dbstudies bisect --name h --good b1 --bad b8 --profile smoke --builds b1 b2")
    page = (tmp_path / "h" / "report.html").read_text()
    assert "<h1>Bisection: h</h1>" in page and "5 of 8 builds measured" in page


def test_the_history_profiles_are_an_overlay_of_the_versions_studys_parameters():
    """Every value a history profile sets is a versions-study parameter, read by its `Params`
    (a typo is a failing test, not a silently ignored key); the count profile's runs count."""
    from dbstudies.kit.study import load
    from dbstudies.store import params as P
    known = P.fields(load("versions").Params)
    assert {k for o in series.PROFILES.values() for k in o} <= set(known)
    p = series.Series("q", "ref", ("b1", "b2"), "quick", {"threads": [4]}).params
    assert (p.threads, p.repeats, p.target, p.restart_every) == ([4], 48, {"qps": 0.04}, 10)
    assert series.Series("c", "ref", ("b1", "b2"), "count", {}).params.count == 3000
