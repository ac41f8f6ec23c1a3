"""Sharing runs and re-measuring them: `dbstudies pack RUN` (one file), `dbstudies replicate
RUN_OR_ARCHIVE` (the same study, parameters, workload scripts and server flavours, measured
again here, and whether the answer held), `dbstudies pool RUN…` (several runs as one estimate)
and the effect-based half of `dbstudies compare`.

    dbstudies pack data/runs/thread_pool/20261126T211644Z-f2875f
    dbstudies replicate data/packs/thread_pool-20261126T211644Z-f2875f.run.tar.gz
    dbstudies pool data/runs/thread_pool/<run-a> data/runs/thread_pool/<run-b>
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd

from .. import servers, stats
from ..analysis import NOT_INTERLEAVED, replication, runs, word_of
from ..core import comparisons
from ..kit.study import load, params_of, reference
from ..measure import checks
from ..store import archive
from ..store.results import Run
from . import runner, series

Say = Callable[[str], None]


def _say(line: str) -> None:
    print(f"dbstudies: {line}", file=sys.stderr, flush=True)


def pack(path: Path, out: Path | None = None) -> int:
    """`dbstudies pack`: write the run (a directory, or an archive: packed again) — or a
    series' folder (`dbstudies history`), all its runs with it — as one file."""
    if series.is_series(path):
        written = archive.pack_folder(path, "series", out)
        print(written)
        _say(f"{written.stat().st_size / 2**20:.1f} MiB; share it: `tar xzf {written.name}` gives the series' "
             "folder — its report.html, and every run in it a run directory again")
        return 0
    run = archive.open_run(path)
    written = archive.pack(run, out)
    print(written)
    _say(f"{written.stat().st_size / 2**20:.1f} MiB; share it, then `dbstudies report {written.name}` or "
         f"`dbstudies replicate {written.name}` where it lands")
    return 0


def builds(original: Run, say: Say = _say) -> list[str]:
    """What differs between the original's server binaries and this machine's, by flavour
    (one line each; said before anything is measured): another build is allowed, and named
    in the report."""
    lines = []
    recorded = {flavour: sha for flavour, sha in original.record.flavours.items() if sha}
    for name, sha in sorted(recorded.items()):
        here = servers.binary_record(servers.load_flavour(name)).get("binary_sha256")
        if here is None:
            lines.append(f"replicate: {name} is not provisioned yet: its build is compared when it starts "
                         "(the report names it)")
        elif here != sha:
            lines.append(f"replicate: {name} here is another build (sha256 {here[:12]}; the original's "
                         f"{sha[:12]}): measured anyway, named in the report")
    for line in lines:
        say(line)
    return lines


def replicate(given: Path, runs_dir: Path, kernel: str | None = None, verbose: bool = False) -> int:
    """`dbstudies replicate`: check that this machine can measure what the run did (one line,
    exit 2, nothing written when it cannot), measure it again, and print the replication."""
    original = archive.open_run(given)
    r = original.record
    study = load(reference(r))
    checks.replication_base(study, {"replicate": str(given)})  # refused here, before any output
    builds(original)
    _say(f"replicating run {original.path.name} ({r.study}, {r.profile})")
    where = str(archive.locate(given))  # as found: here, or from the repository
    return runner.execute(reference(r), "quick", [("replicate", where)], runs_dir, kernel, verbose)


def effects_view(t: pd.DataFrame) -> pd.DataFrame:
    """A replication table as `compare` prints it: each run's effect with its word as its
    report says it, the ratio of the effects with its Holm-adjusted interval beside the Holm p
    and the word."""
    k = t.attrs.get("digits", 1)  # a count's table: two decimals, four in a ratio

    def pct(x: float) -> str:
        return f"{x:+.{k}f}%"
    by = t.attrs["by"]
    return t.assign(original=t["delta_pct_original"].map(pct) + " " + t["said_original"],
                    replication=t["delta_pct_replica"].map(pct) + " " + t["said_replica"],
                    ratio=[f"{r:.{2 * k}f} [{lo:.{2 * k}f}, {hi:.{2 * k}f}]" for r, lo, hi in
                           zip(t["ratio_of_ratios"], t["rr_holm_low"], t["rr_holm_high"])],
                    p_holm=t["p_holm"].map("{:.2g}".format))[["candidate", *by, "original", "replication", "ratio",
                                                             "p_holm", "word"]].rename(
        columns={"ratio": "ratio [Holm-adjusted 95% CI]"})


def compare_effects(run_a: Run, run_b: Run) -> bool:
    """The effect-based comparison `compare` prints first (False when the runs share no
    compared arm and cell)."""
    from ..core.errors import StoreError
    try:
        tables = replication.replication(load(reference(run_a.record)), run_a, run_b)
    except StoreError as e:
        _say(f"no comparison of effects: {e}")
        return False
    print(f"Effects (each arm against the baseline inside each run) of run {run_b.path.name} against run "
          f"{run_a.path.name}:")
    for t in tables.values():
        print(f"\n{t.attrs['words']}:")
        print(effects_view(t).to_string(index=False))
    print("\n" + "\n".join(line.replace("**", "") for line in replication.replication_lines(tables)))
    return True


def _interval(low: float, high: float, k: int) -> str:
    """A ratio's interval in % as a terminal table prints it, with `k` decimals: '[-0.10, +0.00]'."""
    return f"[{(low - 1) * 100:+.{k}f}, {(high - 1) * 100:+.{k}f}]"


def compare(path_a: Path, path_b: Path, metric: str | None = None, csv: Path | None = None) -> int:
    """`dbstudies compare`: run B against run A — first their effects (`compare_effects`),
    then their values per configuration and cell on `metric` (default: run A's lead
    comparison — a count run's instructions), said with the decimals of run A's draw band."""
    run_a, run_b = archive.open_run(path_a), archive.open_run(path_b)
    runs.same_study(run_a, run_b)
    speed = runs.speed_lines([run_a, run_b])
    if speed:  # before any number: values across hosts of different speeds compare the hosts
        print(". ".join(speed) + ".\n")
    if compare_effects(run_a, run_b):
        print("\nValues (each configuration of run B against the same configuration of run A):")
    p = params_of(run_a)
    metric = metric or comparisons.judged(p.COMPARISONS)[0].key
    table = runs.compare_runs(run_a, run_b, metric, threshold=p.draw_threshold, among=p.COMPARISONS)
    k = stats.decimals(p.draw_threshold)
    view = table.assign(
        delta=table["delta_pct"].map(f"{{:+.{k}f}}%".format),
        ci=[_interval(lo, hi, k) for lo, hi in zip(table["ci_low"], table["ci_high"])],
        p_holm=table["p_holm"].map("{:.2g}".format), mde=table["mde_pct"].map(stats.mde_text),
        verdict=[word_of(r) for r in table.assign(threshold_pct=p.draw_threshold * 100).itertuples(index=False)])
    print(f"{metric}: run {Path(path_b).name} vs run {Path(path_a).name} (baseline)")
    print(view.rename(columns={"ci": "95% CI, unadjusted"})[
        ["arm", "workload", "threads", "n_baseline", "n_candidate", "delta", "95% CI, unadjusted", "p_holm",
         "verdict", "mde"]].to_string(index=False))
    print("\n".join(stats.reachability(table)) + ".")
    print(NOT_INTERLEAVED + " The comparison is unpaired (repeats of the two runs as "
          "independent samples), whatever design each run was measured in.")
    hosts = runs.different_hosts(run_a, run_b)
    if hosts:
        print(hosts)
    if csv:
        table.to_csv(csv, index=False)
        _say(f"table written to {csv}")
    return 0


def pool(paths: Sequence[Path], csv: Path | None = None) -> int:
    """`dbstudies pool`: several runs of a study as one estimate per cell, with the between-run
    spread and where the runs disagree beyond their own noise."""
    opened = [archive.open_run(p) for p in paths]
    speed = runs.speed_lines(opened)
    if speed:
        print(". ".join(speed) + ".")
    tables = replication.pooled(load(reference(opened[0].record)), opened)
    for t in tables.values():
        by, k = t.attrs["by"], t.attrs.get("digits", 1)
        view = t.assign(pooled=[f"{d:+.{k}f}% {_interval(lo, hi, k)}"
                                for d, lo, hi in zip(t["delta_pct"], t["ci_low"], t["ci_high"])],
                        tau=t["tau_pct"].map(f"{{:.{k}f}}%".format), I2=t["i2"].map("{:.0%}".format),
                        p_het=t["p_het_holm"].map("{:.2g}".format), mde=t["mde_pct"].map(f"{{:.{k}f}}%".format),
                        mde_one_run=t["mde_runs_pct"].map(f"{{:.{k}f}}%".format))
        print(f"\n{t.attrs['words']} — {len(opened)} runs pooled (random effects, Paule–Mandel):")
        print(view.rename(columns={"said_runs": "each run"})[
            ["candidate", *by, "runs", "pooled", "verdict", "each run", "tau", "I2", "p_het", "mde",
             "mde_one_run"]].to_string(index=False))
    print("\n" + "\n".join(line.replace("**", "") for line in replication.pooled_lines(tables, len(opened))))
    if csv:
        pd.concat([t.assign(metric=m) for m, t in tables.items()], ignore_index=True).to_csv(csv, index=False)
        _say(f"table written to {csv}")
    return 0
