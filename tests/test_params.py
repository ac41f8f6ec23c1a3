"""Parameter validation and the run plan (no server needed)."""
from pathlib import Path

import pytest

from dbstudies import servers
from dbstudies.kit import study, thread_handling
from dbstudies.kit.study import load, names
from dbstudies.kit.studykit import arms_of
from dbstudies.measure import checks, schedule
from dbstudies.store import params as P
from dbstudies.store.params import ParamError, parse_value
from dbstudies.workflows import generated

tp = study.load("thread_pool")


def problems(**overrides):
    with pytest.raises(ParamError) as e:
        checks.resolve(tp, "smoke", **overrides)
    return e.value.problems


def test_profiles_resolve_and_differ():
    smoke, quick, full = (checks.resolve(tp, p) for p in ("smoke", "quick", "full"))
    assert smoke.duration < quick.duration <= full.duration
    assert smoke.profile == "smoke" and full.repeats >= 3 and not smoke.target
    assert quick.target == {"qps": 0.20, "p95": 0.25} and quick.budget == 20 and quick.repeats == 4  # make study
    assert full.target == {"qps": 0.05, "p95": 0.20} and full.budget == 180  # paper-grade: a precision
    # the source's 1 … 4096 threads stay reachable: a smaller pool keeps both servers in memory
    seeds = checks.resolve(tp, "full", threads=[2 ** i for i in range(13)],
                       settings={"innodb_buffer_pool_size": "3G"})
    assert max(seeds.threads) == 4096
    for name in study.names():  # every study's every profile is valid as shipped
        for profile in ("smoke", "quick", "full"):
            assert checks.resolve(study.load(name), profile).profile == profile


def test_cli_strings_are_coerced():
    p = checks.resolve(tp, "smoke", threads="[1,8,64]", duration="5", workloads="oltp_read_only,oltp_read_write",
                   settings='{"innodb_buffer_pool_size": "1G"}', draw_threshold="0.1")
    assert p.threads == [1, 8, 64] and p.duration == 5
    assert p.workloads == ["oltp_read_only", "oltp_read_write"]
    assert p.settings == {"innodb_buffer_pool_size": "1G"} and p.draw_threshold == 0.1
    assert checks.resolve(tp, "smoke", threads=16).threads == [16]
    assert parse_value("[1, 8]") == [1, 8] and parse_value("abc") == "abc"


@pytest.mark.parametrize("overrides, fragment", [
    ({"thread": [1]}, "thread: unknown parameter"),
    ({"workloads": ["tpch"]}, "workloads: need distinct values"),
    ({"threads": [0, 8]}, "threads: each must be between 1 and 4096"),
    ({"threads": [8, 8]}, "threads: need distinct thread counts"),
    ({"threads": [5000]}, "between 1 and 4096"),
    ({"duration": "five"}, "duration: expected a whole number"),
    ({"duration": 0}, "duration: must be ≥ 1"),
    ({"repeats": 0}, "repeats: must be ≥ 1"),
    ({"schedulers": ["pool-of-threads", "fibers"]}, "schedulers: need distinct values"),
    ({"flavour": "mysql-3.23"}, "flavour: unknown server flavour"),
    ({"server_cpus": "0-999"}, "server_cpus: CPUs"),
    ({"client_cpus": "x"}, "client_cpus: bad CPU list"),
    ({"settings": {"datadir": "/var/lib/mysql"}}, "settings: ['datadir'] are set by the driver"),
    ({"settings": "not a mapping"}, "settings: expected a mapping"),
    ({"draw_threshold": 2}, "draw_threshold: must be in [0, 1)"),
])
def test_bad_parameters_are_rejected(overrides, fragment):
    assert any(fragment in p for p in problems(**overrides)), problems(**overrides)


def test_all_problems_are_reported_at_once():
    found = problems(repeats=0, duration=0, threads=[0])
    assert len(found) == 3


def test_unknown_profile():
    with pytest.raises(ParamError, match="unknown profile 'huge'"):
        checks.resolve(tp, "huge")


def test_the_block_plan_interleaves_repeats_and_is_seeded():
    p = checks.resolve(tp, "quick", repeats=6, seed=3, design="blocks", budget=0, target={})  # paired: test_paired_design
    plan = schedule.steps(tp, p)
    cells = len(p.workloads) * len(p.threads)
    assert len(plan) == 6 * 2 * cells and plan["step"].tolist() == list(range(1, len(plan) + 1))
    # every (repeat, arm) block is contiguous and holds each cell exactly once
    blocks = plan.groupby(["repeat", "arm"], sort=False)
    assert blocks.ngroups == 12
    for _, b in blocks:
        assert b["step"].diff().dropna().eq(1).all()
        assert len(b[["workload", "threads"]].drop_duplicates()) == cells
    # the scheduler that goes first changes across repeats (not all A then all B)
    firsts = plan.groupby("repeat")["arm"].first()
    assert firsts.nunique() == 2
    assert plan.equals(schedule.steps(tp, p))
    assert not plan.equals(schedule.steps(tp, checks.resolve(tp, "quick", repeats=6, seed=4, design="blocks", budget=0, target={})))


def test_schedulers_are_intents_said_in_each_flavours_dialect():
    mariadb, mysql = servers.load_flavour("mariadb-10.11"), servers.load_flavour("mysql-9.7")
    th = thread_handling
    pool, per_connection = th.scheduler_intent(th.POOL, 6), th.scheduler_intent(th.PER_CONNECTION, 6)
    assert mariadb.settings_for(pool) == {"thread_handling": "pool-of-threads", "thread_pool_size": 6}
    assert mariadb.settings_for(per_connection) == mysql.settings_for(per_connection) == {
        "thread_handling": "one-thread-per-connection"}
    with pytest.raises(servers.Unavailable, match="^the thread pool is not available on mysql-9.7"):
        mysql.settings_for(pool)


def test_pool_arm_gets_one_group_per_server_cpu():
    (base, pool) = arms_of(tp, checks.resolve(tp, "smoke", server_cpus="0"))
    assert base.label == thread_handling.PER_CONNECTION and base.twin_of is None  # the baseline comes first
    assert pool.intent == servers.Intent(thread_pool=True, thread_pool_size=1) and not pool.settings


def test_aa_control_adds_an_interleaved_twin_of_the_baseline():
    p = checks.resolve(tp, "quick", aa_control=True, repeats=6, budget=0, target={})  # 6 fixed rounds
    arms = arms_of(tp, p)
    assert [a.label for a in arms] == [thread_handling.PER_CONNECTION, thread_handling.PER_CONNECTION + " (A/A)", thread_handling.POOL]
    assert arms[1].settings == arms[0].settings and arms[1].twin_of == thread_handling.PER_CONNECTION
    plan = schedule.steps(tp, p)
    assert plan.groupby(["repeat", "arm"]).ngroups == 18
    positions = plan.groupby("repeat")["arm"].unique().map(list)
    assert len({tuple(x) for x in positions}) > 1  # the twin's place changes across repeats
    assert schedule.estimated_seconds(tp, p) == pytest.approx(1.5 * schedule.estimated_seconds(tp, checks.resolve(tp, "quick", repeats=6, budget=0, target={})))
    assert [a.label for a in arms_of(tp, checks.resolve(tp, "quick"))] == [thread_handling.PER_CONNECTION, thread_handling.POOL]


def test_shared_validators_report_everything_at_once():
    found = problems(repeats=0, seed=-1, draw_threshold=1.5, server_cpus="9999",
                     settings={"port": 1, "thread_pool_size": 4}, tables=0, schedulers=["x"])
    assert [f.split(":")[0] for f in found] == ["repeats", "seed", "draw_threshold", "server_cpus",
                                                "settings", "tables", "schedulers"]
    assert "['port', 'thread_pool_size']" in found[4]


def test_cli_text_values_are_parsed_for_their_type():
    p = checks.resolve(tp, "smoke", server_cpus="0", client_cpus="1", aa_control="true", repeats="3")
    assert (p.server_cpus, p.client_cpus, p.aa_control, p.repeats) == ("0", "1", True, 3)
    assert any("aa_control: expected true/false" in x for x in problems(aa_control="maybe"))


def test_list_names_every_study_with_its_parameters(capsys):
    """`dbstudies list`: each study's title, then each parameter with its quick value."""
    from dbstudies import cli
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("checkpoint_stalls: Checkpoint and flushing stalls")  # studies found, by name
    for name in study.names():
        assert f"\n{name}: " in "\n" + out
    quick = checks.resolve(tp, "quick")
    assert f"  threads (quick: {quick.threads!r}, smoke: [1, 4], full: " in out  # other profiles where they differ
    assert "— client thread counts" in out  # and what it means
    assert "  candidates (quick: " in out and "  stall_fraction (quick: " in out


@pytest.mark.parametrize("name", names())
def test_a_profile_lists_only_what_it_changes(name):
    """A field's default is its value: a profile is an overlay, so no entry repeats the
    field's default (186 of 459 did), and every profile still resolves every field."""
    s = load(name)
    defaults = P.defaults(s.Params)
    for profile, values in s.PROFILES.items():
        same = sorted(k for k, v in values.items() if k in defaults and v == defaults[k] and type(v) is type(defaults[k]))
        assert same == [], f"{name} {profile}: {same} equal the field's default — leave them out"
        resolved = P.profile_values(s.Params, s.PROFILES, profile)
        assert set(resolved) == set(P.fields(s.Params)) | {"profile"}, f"{name} {profile}: a field with no default and no value"


def test_a_smoke_run_measures_no_busy_step_again_unless_asked():
    """`busy_retries` is declared once (SysbenchParams, default 2) with a smoke overlay of 0
    for every sysbench study (`PROFILE_DEFAULTS`), under each study's own profile; the README
    tables, the re-run's "changed parameters" and parameter loading read the same values."""
    from dbstudies.kit.studykit import SysbenchParams
    sysbench = [n for n in names() if issubclass(load(n).Params, SysbenchParams)]
    assert len(sysbench) == 5 and "dbt3_plans" not in sysbench
    for name in sysbench:
        s = load(name)
        assert checks.resolve(s, "smoke").busy_retries == 0 and checks.resolve(s, "quick").busy_retries == 2
        assert P.profile_values(s.Params, s.PROFILES, "smoke")["busy_retries"] == 0
        assert "busy_retries" not in s.PROFILES["smoke"]  # said once, in the class
        assert "| `busy_retries` | 0 | 2 | 2 |" in generated.readme_of(s).read_text()
    assert checks.resolve(tp, "smoke", busy_retries=1).busy_retries == 1
    assert "busy_retries: must be ≥ 0" in " ".join(problems(busy_retries=-1))


def test_a_recorded_run_reads_back_typed_old_runs_and_variants_too(tmp_path):
    """`Run.params`: the one reader of a run's parameters. A run that predates a field
    (the quick fixture: `target`, `busy_retries`) reads its default, not today's profile value
    (the quick profile now measures to a target: that run did not); a parameter since removed
    (`stall_factor`) is dropped; a variant reads the analysis parameter it changed."""
    import shutil

    from test_precision import QUICK

    from dbstudies.store.results import Run
    tp = load("thread_pool")
    p = Run.open(QUICK).params(tp)
    assert isinstance(p, tp.Params) and p.repeats == 16 and p.threads == [1, 16, 64, 256]
    assert p.target == {} and p.budget is None and p.busy_retries == 2 and p.profile == "quick"
    assert tp.PROFILES["quick"]["target"]  # what the profile says today did not apply
    smoke = next((Path(__file__).parent / "fixtures" / "runs" / "thread_pool").iterdir())
    run = Run.open(shutil.copytree(smoke, tmp_path / smoke.name))
    variant = run.as_variant({"draw_threshold": 0.1})
    assert run.params(tp).draw_threshold == 0.05 and variant.params(tp).draw_threshold == 0.1
    assert study.params_of(variant).draw_threshold == 0.1  # its own study, loaded from its metadata


def test_a_field_a_run_predates_reads_back_as_its_profile_said_unless_it_is_a_mode(tmp_path):
    """A versions run recorded before `schedulers` existed ran one scheduler — what its
    profile says; read at the field's default (both schedulers) its arms would not be the
    run's and every table would come out empty. A `target` it predates it did not use."""
    from dbstudies.store.results import Run
    versions = load("versions")
    run = Run.create("versions", {"profile": "smoke", "flavours": ["mariadb-10.11", "mysql-9.7"], "repeats": 2},
                     root=tmp_path)
    p = run.params(versions)
    assert p.schedulers == ["one-thread-per-connection"] and p.target == {} and p.repeats == 2
    assert [a.label for a in arms_of(versions, p)] == ["mariadb-10.11", "mysql-9.7"]
