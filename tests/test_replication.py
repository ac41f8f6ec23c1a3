"""Sharing and replicating runs: one archive per run, every command reading it as it reads a
run directory; a replication judged on effects (known-answer data: the same true effects in
two runs are 'not replicated' rarely, different ones mostly); pooling runs; a replication
refused in one line when this machine cannot measure what the run did."""
from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from processes import run_logged

from dbstudies import cli, stats
from dbstudies.analysis import replication
from dbstudies.kit.study import load
from dbstudies.store import archive
from dbstudies.store.results import Run

FIXTURES = Path(__file__).parent / "fixtures"
QUICK = next((FIXTURES / "quick" / "thread_pool").iterdir())        # 16 rounds × 8 cells
TARGETED = next((FIXTURES / "make_study" / "thread_pool").iterdir())  # the same cells, measured to a target
SMALL = next((FIXTURES / "replicate" / "thread_pool").iterdir())        # a smoke run: one cell, 2 rounds


def paired_run(rng, effects, n=16, sd=0.12, base=1000.0) -> pd.DataFrame:
    """A paired table of one simulated run: per cell, n pairs of baseline and candidate whose
    log ratio is effect + N(0, sd), and a baseline level that drifts between runs."""
    drift = rng.normal(0, 0.25)
    rows = []
    for cell, effect in enumerate(effects):
        a = base * np.exp(drift + rng.normal(0, 0.1, n))
        b = a * np.exp(np.log1p(effect) + rng.normal(0, sd, n))
        for r in range(n):
            rows += [{"cell": cell, "arm": "A", "repeat": r, "v": a[r]}, {"cell": cell, "arm": "B", "repeat": r, "v": b[r]}]
    return stats.paired_table(pd.DataFrame(rows), by=["cell"], factor="arm", baseline="A", candidates=["B"], value="v")


def test_the_same_true_effects_in_two_runs_rarely_read_not_replicated_and_different_ones_mostly_do():
    rng = np.random.default_rng(7)
    effects = [0.0, 0.0, 0.0, 0.0, -0.2, -0.2, 0.15, 0.15]
    failed = decisive = 0
    for _ in range(70):
        t = stats.replication_table(paired_run(rng, effects), paired_run(rng, effects), ["candidate", "cell"])
        d = t[t["verdict_original"].isin(["better", "worse"])]
        decisive += len(d)
        failed += int((d["word"] == stats.NOT_REPLICATED).sum())
    assert decisive > 250                     # the design decides the ±15–20 % cells
    assert failed / decisive <= 0.05, failed / decisive
    moved = [0.0, 0.0, 0.0, 0.0, 0.05, 0.05, -0.15, -0.15]  # the effects changed, or flipped
    caught = 0
    for _ in range(20):
        t = stats.replication_table(paired_run(rng, effects), paired_run(rng, moved), ["candidate", "cell"])
        caught += int((t.loc[t["cell"] >= 4, "word"] == stats.NOT_REPLICATED).sum())
    assert caught / (20 * 4) > 0.9


def test_a_replicated_cell_needs_the_same_verdict_and_a_draw_is_never_called_replicated():
    rng = np.random.default_rng(3)
    t = stats.replication_table(paired_run(rng, [0.0, -0.25]), paired_run(rng, [0.0, -0.25]), ["candidate", "cell"])
    assert t.set_index("cell")["word"].to_dict() == {0: stats.CONSISTENT, 1: stats.REPLICATED}
    assert t.loc[1, "rr_ci_low"] < 1 < t.loc[1, "rr_ci_high"]
    # what a change of the effect the two runs could show: √2 × one run's noise, Holm over 2, 80 % power
    expected = np.expm1((2.36 + 0.85) * np.sqrt(2) * 0.12 / np.sqrt(16)) * 100  # t quantiles at ≈ 30 df: 14.6 %
    assert (0.7 < t["mde_pct"] / expected).all() and (t["mde_pct"] / expected < 1.4).all()


def test_pooling_runs_that_agree_shrinks_the_mde_by_root_k_and_flags_runs_that_disagree():
    rng = np.random.default_rng(11)
    runs = [paired_run(rng, [0.0, 0.1, -0.1, 0.0], sd=0.1) for _ in range(4)]
    pooled = stats.pooled_table(runs, ["candidate", "cell"])
    ratio = (pooled["mde_pct"] / pooled["mde_runs_pct"]).median()
    assert 0.4 < ratio < 0.6                   # 1/√4 when τ = 0
    assert pooled["i2"].between(0, 1).all()
    assert pooled.set_index("cell")["verdict"].to_dict()[1] == "better"
    apart = [paired_run(rng, [0.0, e], sd=0.05, n=30) for e in (-0.2, 0.0, 0.25)]
    het = stats.pooled_table(apart, ["candidate", "cell"]).set_index("cell")
    assert het.loc[1, "p_het_holm"] < 0.05 and het.loc[1, "i2"] > 0.8 and het.loc[1, "tau_pct"] > 10
    assert het.loc[0, "p_het_holm"] > 0.05


def test_a_recorded_run_replicates_itself_exactly_and_two_recorded_runs_compare_on_effects():
    study = load("thread_pool")
    same = replication.replication(study, Run(QUICK), Run(QUICK))
    qps = same["qps"]
    assert np.allclose(qps["ratio_of_ratios"], 1.0)
    decisive = qps["verdict_original"].isin(["better", "worse"])
    assert decisive.any() and (qps.loc[decisive, "word"] == stats.REPLICATED).all()
    two = replication.replication(study, Run(QUICK), Run(TARGETED))
    assert set(two) == {"qps", "p95", "p99", "tail", "server_cpu"}
    assert len(two["qps"]) == 8 and set(two["qps"]["word"]) <= {stats.REPLICATED, stats.RESIZED, stats.CONSISTENT,
                                                                 stats.NOT_REPLICATED}
    lines = replication.replication_lines(two)
    assert lines[0].startswith("**throughput (QPS)**: ") and "decisive cell" in lines[0]
    assert "could be seen in the median cell" in lines[0]
    pooled = replication.pooled(study, [Run(QUICK), Run(TARGETED)])
    assert pooled["qps"]["runs"].eq(2).all()
    assert "over 2 runs" in replication.pooled_lines(pooled, 2)[0]


def test_pack_writes_into_a_folder_and_a_place_it_cannot_write_is_one_line(tmp_path, capsys):
    folder = tmp_path / "shared"
    folder.mkdir()
    assert cli.main(["pack", str(TARGETED), "--out", str(folder)]) == 0
    written = list(folder.iterdir())
    assert [p.name for p in written] == [f"thread_pool-{TARGETED.name}{archive.SUFFIX}"]
    assert archive.manifest(written[0])["run_id"] == TARGETED.name
    blocked = tmp_path / "a file"
    blocked.write_text("not a folder")
    capsys.readouterr()
    assert cli.main(["pack", str(TARGETED), "--out", str(blocked / "x.run.tar.gz")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dbstudies: cannot write") and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.rglob("*.part")) == []


def test_a_packed_run_opens_as_the_run_it_was_and_a_tampered_one_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(archive, "UNPACKED", tmp_path / "unpacked")
    packed = archive.pack(Run(TARGETED), tmp_path / "x.run.tar.gz")
    names = tarfile.open(packed).getnames()
    assert archive.MANIFEST in names and f"{TARGETED.name}/metadata.json" in names
    assert not any("datadir" in n for n in names)
    run = archive.unpack(packed, tmp_path / "unpacked")
    assert run.metadata == Run(TARGETED).metadata
    assert archive.origin(run) == str(packed.resolve())
    pd.testing.assert_frame_equal(run.table("steps"), Run(TARGETED).table("steps"))
    # a file that differs from the manifest: refused, never used
    bad = tmp_path / "bad.run.tar.gz"
    with tarfile.open(packed) as src, tarfile.open(bad, "w:gz") as dst:
        for m in src.getmembers():
            data = src.extractfile(m).read()
            if m.name.endswith("metadata.json"):
                data = data.replace(b"complete", b"failed!!")
            m.size = len(data)
            import io
            dst.addfile(m, io.BytesIO(data))
    with pytest.raises(archive.ArchiveError, match="differs from its manifest"):
        archive.unpack(bad, tmp_path / "unpacked")
    with pytest.raises(archive.ArchiveError, match="not a packed run"):
        (tmp_path / "plain.tar.gz").write_bytes(b"not a tar")
        archive.manifest(tmp_path / "plain.tar.gz")


def _copy_run(tmp_path: Path, edit) -> Path:
    run = tmp_path / "orig" / TARGETED.name
    shutil.copytree(TARGETED, run)
    meta = json.loads((run / "metadata.json").read_text())
    edit(meta, run)
    (run / "metadata.json").write_text(json.dumps(meta))
    return run


def _flavour(meta, run):
    for s in meta["servers"]:
        s["flavour"] = "mariadb-10.6"


def _script(meta, run):
    meta["parameters"]["workloads"] = ["scripts/mine.lua"]
    meta["workload_scripts"] = [{"workload": "scripts/mine.lua", "source": "/nowhere/mine.lua",
                                 "copy": "workloads/mine.lua", "sha256": "0" * 64}]


@pytest.mark.parametrize("edit, says", [(_flavour, "measured the server flavour mariadb-10.6, which this machine does not have"),
                                        (_script, "copy of its workload script scripts/mine.lua is missing")])
def test_a_replication_this_machine_cannot_measure_is_one_line_exit_2_and_nothing_written(edit, says, tmp_path, capsys):
    run = _copy_run(tmp_path, edit)
    runs_dir = tmp_path / "runs"
    assert cli.main(["replicate", str(run), "--runs-dir", str(runs_dir)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.strip().count("\n") == 0 and says in captured.err, captured.err
    assert not runs_dir.exists()


def test_a_replication_keeps_the_original_s_parameters_and_refuses_a_changed_one(tmp_path):
    from dbstudies.core.errors import ReplicationError
    from dbstudies.measure import checks
    study = load("thread_pool")
    profile, given = checks.replication_base(study, {"replicate": str(TARGETED), "draw_threshold": 0.02})
    recorded = Run(TARGETED).metadata["parameters"]
    assert profile == recorded["profile"] and given["target"] == recorded["target"]
    assert given["draw_threshold"] == 0.02 and given["replicate"] == str(TARGETED.resolve())
    with pytest.raises(ReplicationError, match=r"drop threads = \[1, 2\]"):
        checks.replication_base(study, {"replicate": str(TARGETED), "threads": [1, 2]})
    with pytest.raises(ReplicationError, match="is a thread_pool run, not versions"):
        checks.replication_base(load("versions"), {"replicate": str(TARGETED)})


def test_a_notebook_s_parameters_cell_naming_a_run_to_replicate_resolves_to_that_run_s_parameters():
    from dbstudies.measure import checks
    from dbstudies.store import params
    study = load("thread_pool")
    cell = {"profile": "quick", **{name: None for name in params.fields(study.Params)}, "replicate": str(TARGETED)}
    p = checks.resolve_cell(study, cell)
    recorded = Run(TARGETED).metadata["parameters"]
    assert p.profile == recorded["profile"] and p.target == recorded["target"] and p.budget == recorded["budget"]
    assert p.threads == recorded["threads"] and p.replicate == str(TARGETED.resolve())


def test_compare_prints_the_runs_effects_before_their_values_and_pool_reads_archives(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(archive, "UNPACKED", tmp_path / "unpacked")
    assert cli.main(["compare", str(QUICK), str(TARGETED)]) == 0
    out = capsys.readouterr().out
    assert out.index("Effects (each arm against the baseline") < out.index("Values (each configuration")
    assert "ratio" in out and "throughput (QPS):" in out
    packed = archive.pack(Run(TARGETED), tmp_path / "t.run.tar.gz")
    assert cli.main(["pool", str(QUICK), str(packed), "--csv", str(tmp_path / "pool.csv")]) == 0
    out = capsys.readouterr().out
    assert "2 runs pooled (random effects, Paule–Mandel)" in out and "1/√2" in out
    assert set(pd.read_csv(tmp_path / "pool.csv")["metric"]) == {"qps", "p95", "p99", "tail", "server_cpu"}
    assert cli.main(["runs", str(packed)]) == 0
    assert TARGETED.name in capsys.readouterr().out
    # a run named twice — as itself, or as its packed copy — counts once: refused, one line
    for twice in ([TARGETED, TARGETED], [QUICK, TARGETED, packed]):
        assert cli.main(["pool", *map(str, twice)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"dbstudies: pool: each run counts once; run {TARGETED.name} is named 2 times")
    assert cli.main(["compare", str(TARGETED), str(TARGETED)]) == 0  # a run with itself: every ratio 1
    assert "1.00 [" in capsys.readouterr().out


def test_clean_removes_the_unpacked_copies_it_can_make_again(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(archive, "UNPACKED", tmp_path / "unpacked")
    a, b = archive.pack(Run(SMALL), tmp_path / "a.run.tar.gz"), archive.pack(Run(TARGETED), tmp_path / "b.run.tar.gz")
    copy_a, copy_b = archive.open_run(a).path, archive.open_run(b).path
    b.unlink()  # its copy is the only one left
    assert archive.clear_copies(keep={str(a.resolve())}) == []  # a replication measuring from a
    assert cli.main(["clean", "--runs-dir", str(tmp_path / "runs")]) == 0 and copy_a.exists()  # only when asked
    assert cli.main(["clean", "--unpacked", "--runs-dir", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert f"removed {copy_a.parent}" in out and "an unpacked copy of a packed run" in out
    assert not copy_a.exists() and (copy_b / "metadata.json").is_file()
    assert archive.open_run(a).path == copy_a and (copy_a / "metadata.json").is_file()  # unpacked again


@pytest.mark.server
@pytest.mark.notebook
def test_replicate_measures_a_packed_run_again_and_its_report_says_whether_the_answer_held(tmp_path):
    """A recorded smoke run (tests/fixtures/replicate: metadata and tables, as a run elsewhere
    would share them) packed, then measured again here from its archive."""
    import sys
    original = SMALL
    packed = tmp_path / "shared" / "small.run.tar.gz"
    assert cli.main(["pack", str(original), "--out", str(packed)]) == 0
    runs_dir = tmp_path / "runs"
    again = run_logged([sys.executable, "-m", "dbstudies", "replicate", str(packed), "--runs-dir", str(runs_dir)],
                       tmp_path, timeout=420)
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"replicating run {original.name}" in again.stderr
    said = again.stdout[again.stdout.index(f"Replication of run {original.name}"):]
    # the words per table (live noise decides which: "k of n decisive cells …" or "decided no cell")
    assert all(f"\n- {w}: " in said for w in ("throughput (QPS)", "p95 latency", "p99 latency", "tail ratio (p99 ÷ p50)"))
    (replica,) = [m.parent for m in runs_dir.glob("*/*/metadata.json")]
    before, after = Run(original).metadata["parameters"], Run(replica).metadata["parameters"]
    assert after.pop("replicate") == str(packed.resolve())
    assert {k: v for k, v in after.items() if k in before} == {k: v for k, v in before.items() if k != "replicate"}
    assert {k: after[k] for k in set(after) - set(before)} == {"cpu_profile_rounds": None, "count": 0}  # fields it predates: their defaults
    html = (replica / "report.html").read_text()
    assert f"Did the answer of run {original.name} replicate?" in html and "ratio of the effects" in html
    assert "Every server flavour ran the same build in both runs" in html
    assert (replica / "figures" / "replication.png").is_file()


def test_compare_and_pool_name_the_same_cells_where_two_runs_disagree():
    """One test for "the runs disagree": a cell whose two effects differ beyond a Welch t on
    few pairs (small df) but would pass Cochran's z is called so by neither `compare` nor
    `pool`; one that differs clearly by both; and `compare`'s interval, Holm-adjusted,
    excludes 1 exactly where its word says the runs differ."""
    keys = ["cell"]
    a = pd.DataFrame({"cell": ["steady", "few pairs", "moved"], "ratio": [0.80, 0.68, 0.80],
                      "ci_low": [0.75, 0.50, 0.76], "ci_high": [0.85, 0.92, 0.84], "df": [30.0, 3.0, 30.0],
                      "verdict": ["worse"] * 3})
    b = a.assign(ratio=[0.81, 0.94, 1.02], ci_low=[0.76, 0.88, 0.98], ci_high=[0.86, 1.00, 1.06],
                 df=[30.0, 30.0, 30.0], verdict=["worse", "worse", "draw"])
    compared = stats.replication_table(a, b, keys).set_index("cell")
    pooled = stats.pooled_table([a, b], keys).set_index("cell")
    differ = set(compared.index[compared["word"] == stats.NOT_REPLICATED])
    assert differ == set(pooled.index[pooled["p_het_holm"] < stats.ALPHA]) == {"moved"}
    assert compared["p_value"].round(9).tolist() == pooled.loc[compared.index, "p_het"].round(9).tolist()
    for cell, r in compared.iterrows():
        assert (r.rr_holm_low > 1 or r.rr_holm_high < 1) == (r.p_holm < stats.ALPHA), cell
