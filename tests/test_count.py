"""The server's instructions per transaction, counted by callgrind (issue 65): the dump
reader on a known file, and a real server under valgrind whose windows count what its
serving thread executed — the same per transaction window after window, and more with a
setting known to add work."""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from dbstudies import servers
from dbstudies.analysis import counted, said
from dbstudies.core.errors import ParamError
from dbstudies.kit.study import load
from dbstudies.measure import checks, experiment, ownership
from dbstudies.observe import callgrind
from dbstudies.servers import Server
from dbstudies.store import results
from dbstudies.workloads import sysbench

# a dump as callgrind writes one (names compressed on first use, a call's inclusive cost on
# the line after `calls=`, a recursive call, a cost line without a cost)
DUMP = """# callgrind format
version: 1
positions: line
events: Ir
summary: 0

ob=(1) /usr/sbin/mariadbd
fl=(1) ???
fn=(1) do_command(THD*, bool)
0 100
cfn=(2) dispatch_command(enum_server_command, THD*, char*, unsigned int, bool)
calls=3 0
0 900
fn=(2)
0 600
cfn=(3) alloc_root
calls=10 0
0 300
cfn=(2)
calls=1 0
0 50
fn=(3)
0 300
0
totals: 1000
"""


def test_a_dump_is_read_with_its_names_self_and_inclusive_costs(tmp_path):
    f = tmp_path / "callgrind.out.7.1-03"
    f.write_text(DUMP)
    p = callgrind.read(f)
    assert p.total == 1000 and sum(p.self_cost.values()) == 1000
    do, dispatch = "do_command(THD*, bool)", "dispatch_command(enum_server_command, THD*, char*, unsigned int, bool)"
    assert p.self_cost == {do: 100, dispatch: 600, "alloc_root": 300}
    # inclusive: its own and its calls' (a call to itself is not counted again)
    assert p.inclusive == {do: 1000, dispatch: 900, "alloc_root": 300}


def test_without_valgrind_a_count_is_refused_in_one_line(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    (line,) = callgrind.problems()
    assert "valgrind" in line and "make setup" in line


@pytest.fixture
def counting(tmp_path):
    """Debian's MariaDB under callgrind, counting nothing until a window opens, with a
    sysbench table of 1,000 rows loaded and read once."""
    flavour = servers.load_flavour("mariadb-10.11")
    out = tmp_path / "counts"
    out.mkdir()
    s = Server(flavour, tmp_path / "srv", wrapper=callgrind.wrapper(out),
               settings=callgrind.settings_for(servers.known_options(flavour), {}))
    with s:
        s.start()
        sb = sysbench.Sysbench(s, tables=1, table_size=1000)
        sb.prepare(threads=1)
        sb.run("oltp_point_select", threads=1, duration=10, events=200)  # warm: rows and plans cached
        yield s, sb, callgrind.Window(s.pid, out)


@pytest.mark.server
def test_windows_count_the_serving_thread_alike_a_setting_that_adds_work_more_and_a_closed_one_nothing(counting):
    s, sb, window = counting
    assert "valgrind" in " ".join(s.server_argv())

    def per_transaction() -> tuple[float, callgrind.Count]:
        window.open()
        res = sb.run("oltp_point_select", threads=1, duration=120, events=300)
        count = window.close()
        assert res.totals["events"] == 300 and "--events=300" in res.argv and "--time=0" in res.argv
        return count.served / 300, count

    first, count = per_transaction()
    # one thread served the client (it ran dispatch_command); a point select is tens of
    # thousands of instructions (42,620 on this binary in issue 65's own windows)
    assert len(count.serving) == 1 and count.served > 0 and 20_000 < first < 100_000, count.threads
    assert count.total >= count.served and len(count.files) == len(count.threads)
    second, _ = per_transaction()
    assert second == pytest.approx(first, rel=0.01)  # nearly deterministic: not the host's noise
    s.query("SET GLOBAL userstat = ON")  # per-statement user/table/index statistics: more work
    more, _ = per_transaction()
    assert 1.03 < more / first < 1.12, (first, more)
    # a window never opened counted nothing, and says so
    sb.run("oltp_point_select", threads=1, duration=60, events=50)
    with pytest.raises(callgrind.CountError, match="instrumentation never came on"):
        window.close()


def test_a_rootfs_flavour_runs_the_hosts_valgrind_inside_its_tree(tmp_path):
    """bwrap first, then the host's valgrind launcher by the host's C library (bullseye's is
    too old for it), then the server; its dumps and callgrind_control's pipes in a bound folder."""
    flavour = servers.load_flavour("mariadb-10.5")
    out = tmp_path / "counts"
    s = Server(flavour, tmp_path / "srv", **callgrind.server_options(flavour, out, {}))
    argv = s.server_argv()
    assert argv[0] == "bwrap" and argv.index("--") < argv.index("env") < argv.index(flavour.server)
    inside = argv[argv.index("--") + 1:]
    assert inside[2] == f"{callgrind.INSIDE}/lib/ld-linux-x86-64.so.2" and inside[5].endswith("/valgrind.bin")
    assert f"--vgdb-prefix={out}/vgdb" in inside and f"--callgrind-out-file={out}/callgrind.out.%p" in inside
    assert ["--bind", str(out.resolve()), str(out)] == argv[argv.index(str(out.resolve())) - 1:][:3]
    assert s.wrapper.comm == callgrind.TOOL
    host = Server(servers.load_flavour("mariadb-10.11"), tmp_path / "h", **callgrind.server_options(
        servers.load_flavour("mariadb-10.11"), out, {}))
    assert host.server_argv()[0] == "valgrind"  # the host's server: no tree, valgrind's own script


@pytest.mark.server
def test_a_rootfs_flavours_server_is_counted_as_the_hosts_is(tmp_path):
    """Bullseye's MariaDB 10.5 in its own tree (a C library older than the host's valgrind
    launcher needs): a window opened and closed from the host by callgrind_control."""
    flavour = servers.load_flavour("mariadb-10.5")
    flavour.provision(say=lambda m: None)  # the first use on a machine builds its tree
    with Server(flavour, tmp_path / "srv", **callgrind.server_options(flavour, tmp_path / "counts", {})) as s:
        s.start()
        assert Path(f"/proc/{s.pid}/comm").read_text().strip() == callgrind.TOOL[:15]  # below bwrap
        sb = sysbench.Sysbench(s, tables=1, table_size=1000)
        sb.prepare(threads=1)
        sb.run("oltp_point_select", threads=1, duration=10, events=100)  # warm
        window = callgrind.Window.of(s)
        window.open()
        sb.run("oltp_point_select", threads=1, duration=120, events=200)
        count = window.close()
    assert len(count.serving) == 1 and 20_000 < count.served / 200 < 100_000, count.threads


def test_a_count_runs_caveats_are_its_own_and_none_is_empty():
    """Servers whose settings are alike add no caveat — not an empty item (a dir flavour's
    A/A across sources printed "- " under the count's caveat)."""
    from types import SimpleNamespace

    from dbstudies.analysis import caveats
    from dbstudies.store.record import Record
    p = checks.resolve(load("versions"), "count")
    (only,) = caveats.caveats(SimpleNamespace(record=Record.of({"servers": []})), p, {}, None)
    assert only.startswith("**A count, not a time.**")


def test_a_count_refuses_what_it_cannot_judge_before_anything_starts():
    with pytest.raises(ParamError) as e:
        checks.resolve(load("thread_pool"), "smoke", count=3000)  # both schedulers: the pool among them
    assert "pool-of-threads arm cannot be judged by count" in str(e.value)
    with pytest.raises(ParamError) as e:
        checks.resolve(load("versions"), "count", flavours=["mariadb-10.11", "mysql-9.7"], count=50)
    text = str(e.value)
    assert "at least 100 transactions" in text and "mysql-9.7" not in text  # a rootfs flavour is counted too
    p = checks.resolve(load("versions"), "count")
    assert [c.key for c in p.COMPARISONS] == ["instructions", "instructions_all"] and p.threads == [1]
    assert [c.key for c in checks.resolve(load("versions"), "smoke").COMPARISONS][0] == "qps"


@pytest.mark.server
def test_a_count_run_measures_windows_and_judges_instructions_not_throughput(tmp_path):
    study = load("versions")
    p = checks.resolve(study, "count", count=300, repeats=2, restart_every=2, warmup=1, table_size=1000)
    run = ownership.open_run(study, p, root=tmp_path)
    experiment.measure(study, p, run, progress=False)
    steps = results.measured(run)
    assert len(steps) == 4 and (steps["events"] == 300).all()  # each window: its fixed transactions
    per = steps["instr_per_txn"]
    # the baseline and its A/A twin, window after window: the same count (no SQL sampler in a window)
    assert per.between(20_000, 100_000).all() and per.max() / per.min() < 1.01, per
    assert (steps["instr_all_per_txn"] >= per).all()
    windows = list(run.servers_dir.glob("*/counts/callgrind.out.*.[12]-*"))  # each window's dump, per thread
    assert {f.parts[-3] for f in windows} == {"one-thread-per-connection", "one-thread-per-connection-A-A"}
    assert any(callgrind.read(f).total for f in windows)  # kept with their servers
    per = counted.per_function(run, steps)  # where they went: every window's functions, per transaction
    per_step = per.groupby("step")["per_txn"].sum()
    assert set(per_step.index) == set(steps["step"]) and (per_step / steps.set_index("step")["instr_per_txn"]).round(6).eq(1).all()
    assert per["function"].str.startswith("dispatch_command").any()
    answer = study.answer(run, p)
    assert not answer["aa"].empty and answer["qps"].empty  # throughput under valgrind is not judged
    told = said.answer_text(answer, run)
    assert "A count, not a time" in told.more and "highest median QPS" not in told.conclusion


def test_functions_lump_a_stripped_binarys_addresses_and_differences_come_largest_first(tmp_path):
    f = tmp_path / "callgrind.out.7.1-03"
    f.write_text(DUMP.replace("fn=(3) alloc_root", "fn=(3) 0x0000000000d93de0"))
    assert callgrind.serving_files(tmp_path / "callgrind.out.7.1", [3]) == [f]
    assert callgrind.functions([f])[callgrind.UNNAMED] == 300
    # inclusively, the named keep their calls' cost; the unnamed (which call each other) get none
    assert callgrind.functions([f], inclusive=True) == {"do_command(THD*, bool)": 1000, (
        "dispatch_command(enum_server_command, THD*, char*, unsigned int, bool)"): 900}
    A, B = (type("Arm", (), {"label": x, "twin_of": None})() for x in ("a", "b"))
    rows = [{"step": s, "arm": arm, "workload": "w", "threads": 1, "function": fn, "per_txn": v,
             "inclusive_per_txn": float("nan") if fn == callgrind.UNNAMED else v + (2000.0 if fn == "parse" else 0.0)}
            for s, arm, scale in ((1, "a", 1.0), (2, "b", 1.0), (3, "a", 1.0), (4, "b", 1.0))
            for fn, v in (("parse", 1000 * scale), ("lock", 500.0 if arm == "a" else 560.0),
                          (callgrind.UNNAMED, 500.0 if s != 4 else 510.0))]
    (d,) = counted.differences(pd.DataFrame(rows), [A, B])
    t = d["table"]
    # lock +60 first, the unnamed +5 (one window of two moved by 10) next, parse unchanged last
    assert t["function"].tolist() == ["lock", callgrind.UNNAMED, "parse"] and t["change/txn"].tolist() == [60.0, 5.0, 0.0]
    assert t["change, % of the baseline's total"].iloc[0] == 3.0  # 60 of 2,000
    assert t["b: windows"].iloc[1] == "500–510" and d["windows"] == {"a": 2, "b": 2}
    assert d["unnamed"]["a"] == pytest.approx(0.25)
    assert t["inclusive/txn, with its calls"].tolist() == ["500 → 560", "– → –", "3,000 → 3,000"]


COUNT_RUNS = sorted((Path(__file__).parent / "fixtures" / "count" / "versions").iterdir())


def test_compare_and_pool_of_two_count_runs_judge_instructions_in_the_counts_decimals(capsys):
    """Two recorded count runs (Debian's 10.11 against trixie's 11.8, and against the same
    binary as a release tarball; their global variables trimmed to a few): `compare` and
    `pool` read instructions per transaction, not the QPS valgrind slowed, with two decimals
    (one would print −0.0 % [−0.0, +0.0]) and the count's MDE."""
    from dbstudies.workflows import sharing
    a, b = COUNT_RUNS
    assert sharing.compare(a, b) == 0
    out = capsys.readouterr().out
    assert f"instructions: run {b.name} vs run {a.name} (baseline)" in out and "qps" not in out
    assert re.search(r"-0\.05% +\[-0\.10, \+0\.00\] +0\.14 +same 0\.2 %", out), out  # the 10.11 baseline of both runs, 30 min apart
    assert "1.0005 [0.9997, 1.0013]" in out and "A change of the effect of 0.11 % could be seen" in out
    assert sharing.pool([a, b]) == 0
    out = capsys.readouterr().out
    assert "-0.02% [-0.06, +0.02]    draw" in out and "MDE in the median cell 0.062 %" in out


@pytest.mark.notebook
def test_a_recorded_count_runs_report_says_instructions_with_their_caveat_and_two_decimals(tmp_path):
    """The recorded count run (Debian's 10.11 against trixie's 11.8) re-analysed through its
    notebook: the grid and the words judge instructions per transaction in the count's 0.2 %
    band, with two decimals; the caveat says it is a count, not a time; no QPS verdict."""
    import shutil
    import subprocess
    import sys
    run_dir = tmp_path / COUNT_RUNS[0].name
    shutil.copytree(COUNT_RUNS[0], run_dir)
    p = subprocess.run([sys.executable, "-m", "dbstudies", "report", str(run_dir), "--analyse"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    html = (run_dir / "report.html").read_text()
    opening = html.split("class='dbs-first", 1)[1].split("The run's facts", 1)[0]
    assert ">instructions/txn</th>" in opening and ">QPS</th>" not in opening
    assert "−0.17 %<br>[−0.23, −0.11]" in opening  # mariadb-11.8 against 10.11: two decimals
    assert "shown to differ (Holm p &lt; 0.05), not whether by more than −0.2 … +0.2 %" in opening  # [−0.23, −0.11]
    assert "inconclusive" in opening and "A count, not a time." in html
