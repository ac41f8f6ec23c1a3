"""What the run's own data say about how far to trust its verdicts, stated in the Answer:
CPU saturation with client and server on the same CPUs (and the client's share of the
CPU per transaction behind each verdict — the CPU budget, `budget`), steps whose first
second differs from the rest (ramp-up), a virtual machine, steps measured again on a busy
host, settings that differ between arms beyond what the study varies."""
from __future__ import annotations

from typing import Any

import pandas as pd

from .. import workloads
from ..kit.studykit import BY, SysbenchParams
from ..observe import callgrind, probes
from ..store import settings
from ..store.cpus import cpus_shared, pinned_apart
from ..store.record import Host
from ..store.results import Run
from ..store.tables import INTERVALS
from .budget import SATURATED, judged_budget, judged_only, per_arm, steps_of
from .cells import signed, threads
from .tables import design_table, threshold, to_target
from .words import listing, percent, span, thread_words, word_of


def saturation(steps: pd.DataFrame | None, b: pd.DataFrame, host_cpus: int, pinned: bool) -> str:
    """The CPU-saturation caveat: where server and client together used ≥ 90 % of the host's
    CPUs, and (with `budget` rows) how much of the verdicts' extra CPU is the client's."""
    if steps is None or pinned or not {"cpu_server_pct", "cpu_client_pct"} <= set(steps):
        return ""
    arm = per_arm(steps).reset_index()
    full = host_cpus * 100
    hot = arm[arm["cpu_pct"] >= full * SATURATED]
    if hot.empty:
        return ""
    every = sorted(int(t) for t in arm["threads"].unique())
    cells = arm.groupby(BY[:2]).ngroups
    hot_cells = hot.groupby(BY[:2]).ngroups
    text = (f"**CPU saturated, client and server on the same CPUs.** Server and sysbench together used "
            f"{span(hot['cpu_pct'].tolist()).removesuffix(' %')} % of the host's {full} % "
            f"{thread_words(sorted(int(t) for t in hot['threads'].unique()), every)} "
            f"({hot_cells} of {cells} cells): there, throughput is what the CPUs allow at each arm's "
            "CPU per transaction, the client's included, so a configuration that makes sysbench work "
            "harder loses throughput for a reason outside the server.")
    judged = judged_only(b)
    judged = judged[judged["saturated"].astype(bool)] if len(judged) else judged
    if len(judged):
        shares = judged["client_share_pct"].dropna()
        gap = (judged["predicted_pct"] - judged["measured_pct"]).abs()
        text += (f" In the {len(judged)} judged cell{'s' if len(judged) != 1 else ''} that saturate, the CPU per "
                 f"transaction predicts the measured change within {percent(gap.max())} points"
                 + (f", and the client's share of the extra CPU per transaction is "
                    f"{span(shares.tolist())}" + (" (over 100 %: the server's own went down)"
                                                  if shares.max() > 100 else "") if len(shares) else "")
                 + " (the CPU budget under “Why”)" + _client_switches(judged) + ". Pin them apart (`server_cpus`, "
                 "`client_cpus`) on a host with enough cores to judge the server alone.")
    return text


RAMP_CAP = 20.0  # % — a first second this far off is said even where the run's MDE is larger


def _client_switches(judged: pd.DataFrame) -> str:
    """Beside sysbench's CPU per transaction in the judged cells: the estimated change of its
    own voluntary context switches per transaction (it waited on the server and was woken)
    and involuntary ones (preempted for another thread), each by the cost tables' estimator —
    estimates only: whether one *moved* is the costs table's verdict, said there, never here."""
    parts = []
    for kind, what in (("voluntary", "voluntary (waits for the server)"), ("involuntary", "involuntary (preempted)")):
        col = f"{kind}_cs_pct"
        v = judged[col].dropna() if col in judged else pd.Series(dtype=float)
        if len(v):
            lo, hi = v.min(), v.max()
            parts.append(f"{what} {signed(lo).removesuffix(' %')}" + (f" … {signed(hi)}" if abs(hi - lo) >= 0.05 else " %"))
    if not parts:
        return ""
    return ("; sysbench's own context switches per transaction, estimated — " + ", ".join(parts)
            + " (their verdicts: the costs that moved)")


def ramp_up(run: Run, steps: pd.DataFrame | None, mde_pct: float) -> str:
    """Steps whose first second differs from the rest of the step by more than the run's
    minimum detectable effect, or `RAMP_CAP` where that is larger (median over a cell's
    steps): slower is a ramp-up (connections still opening, caches filling), faster a decay
    (throughput fell after the first second). Said with the steps it rests on: steps with
    fewer than 3 per-second rows cannot show it and are counted as such."""
    if steps is None or not run.has_table(INTERVALS):
        return ""
    limit = min(mde_pct, RAMP_CAP) if mde_pct == mde_pct else RAMP_CAP
    i = run.table(INTERVALS).merge(steps[["step", *BY, "arm"]], on="step")
    rows = i.groupby("step")["second"].transform("size")
    short = steps["step"].nunique() - i.loc[rows >= 3, "step"].nunique()
    i = i[rows >= 3]
    if i.empty:
        return ""
    first = i.loc[i.groupby("step")["second"].idxmin()].set_index("step")["tps"]
    rest = i[i["second"] > i.groupby("step")["second"].transform("min")].groupby("step")["tps"].median()
    per_step = ((first / rest - 1) * 100).rename("ramp").reset_index().merge(steps[["step", *BY]], on="step")
    cell = per_step.groupby(BY)["ramp"].agg(["median", "size"]).reset_index()
    total = steps.groupby(BY)["step"].nunique()
    off = cell[cell["median"].abs() > limit]
    if off.empty:
        return ""
    seconds = int(steps["seconds"].median()) if "seconds" in steps else 0

    def said(r: Any) -> str:
        kind = "slower: a ramp-up" if r.median < 0 else "faster: throughput fell after it"
        return (f"{percent(abs(r.median))} % {kind} ({r.workload}, {threads(int(r.threads))}; "
                f"median of {int(r.size)} of the cell's {int(total.loc[(r.workload, r.threads)])} steps)")
    text = (f"**The first second of a step differs from the rest of it.** It ran {listing([said(r) for r in off.itertuples()])}, "
            f"more than the {percent(limit)} % this caveat looks for")
    if short:
        text += f"; {short} step{'s' if short != 1 else ''} with fewer than 3 seconds recorded cannot show it and {'are' if short != 1 else 'is'} not counted"
    return (text + (f". With {seconds}-s steps that second is {percent(100 / seconds)} % of each" if seconds else "")
            + ": whether it moves a verdict is said under “Seconds judged” (the set-up); longer steps "
              "(`duration`) dilute it.")


def seconds_judged(run: Run, steps: pd.DataFrame | None, rel: pd.DataFrame | None, p: Any) -> tuple[str, bool]:
    """Which seconds the QPS verdicts judge — each step whole — and what judging only its
    seconds after the first (a ramp-up's) would change: the QPS table again on each step's
    mean per-second QPS past its first second (steps with fewer than 3 seconds kept whole),
    its words cell by cell against the table's, and how far an effect moved. (text, whether a
    word changed)."""
    if steps is None or rel is None or rel.empty or "baseline" not in rel or not run.has_table(INTERVALS):
        return "", False
    i = run.table(INTERVALS)[["step", "second", "qps"]]
    i = i[i.groupby("step")["second"].transform("size") >= 3]
    later = i[i["second"] > i.groupby("step")["second"].transform("min")].groupby("step")["qps"].mean()
    if later.empty:
        return "", False
    steady = steps.assign(qps=steps["step"].map(later).fillna(steps["qps"]))
    tested = rel[rel["delta_pct"].notna()]
    again = to_target(design_table(steady, by=BY, factor="arm", baseline=rel["baseline"].iloc[0],
                                   candidates=list(dict.fromkeys(tested["candidate"])), value="qps",
                                   higher_is_better=True, threshold=threshold(p, "qps")), p, "qps")
    key = [*BY, "candidate"]
    both = tested.merge(again, on=key, suffixes=("", "_later"))
    if both.empty:
        return "", False
    words_now = [word_of(r) for r in tested.merge(both[key], on=key).itertuples(index=False)]
    words_later = [word_of(r) for r in again.merge(both[key], on=key).itertuples(index=False)]
    moved = (both["delta_pct_later"] - both["delta_pct"]).abs()
    far = both.loc[moved.idxmax()]
    changed = [f"{r.workload}, {threads(int(r.threads))}: {a} → {b}" for r, a, b in
               zip(both.itertuples(), words_now, words_later) if a != b]
    seconds = int(steps["seconds"].median()) if "seconds" in steps else 0
    text = (f"QPS verdicts judge each step whole ({seconds} s); judged on its seconds after the first, "
            + (f"{len(changed)} of {len(both)} change ({'; '.join(changed[:3])}"
               + (f"; and {len(changed) - 3} more" if len(changed) > 3 else "") + ")" if changed
               else f"none of {len(both)} changes")
            + f" — the largest move of an effect {moved.max():.1f} points ({far.workload}, "
              f"{threads(int(far.threads))}: {signed(far.delta_pct)} → {signed(far.delta_pct_later)})")
    return text, bool(changed)


def judged_seconds_of(run: Run, tables: dict[str, Any], throughput: str | None, p: Any) -> tuple[str, bool]:
    """`seconds_judged` of an answer's tables (its steps, its throughput table), computed once
    and kept in `tables["seconds_judged"]` for the caveat and the report's set-up."""
    if "seconds_judged" not in tables:  # the steps' per-second column is QPS: only a QPS table is judged again
        tables["seconds_judged"] = (seconds_judged(run, steps_of(tables), tables.get(throughput), p)
                                    if throughput == "qps" else ("", False))
    return tables["seconds_judged"]


def virtual_machine(host: Host) -> str:
    vm = host.virtual_machine
    if not vm:
        return ""
    kind = "" if vm == "virtual machine" else f" ({vm})"
    return (f"**Measured in a virtual machine{kind}.** Its vCPUs share physical cores with other "
            "guests and wake up slower than bare metal: a single client thread waits on every "
            "round trip, so low-concurrency cells understate what the server can do, and noise "
            "from other tenants is part of every figure.")


def busy(steps: pd.DataFrame | None, retries: int = SysbenchParams.busy_retries) -> str:
    """Busy-host re-measurements and steps still measured on a busy host after the run's
    `retries` (its `busy_retries`; a run that predates the parameter had the default)."""
    if steps is None or "host_busy" not in steps:
        return ""
    again = int(steps["remeasured"].sum()) if "remeasured" in steps else 0
    still = int(steps["host_busy"].sum())
    if not again and not still:
        return ""
    limits = (f"other processes used more than {probes.BUSY_OTHER_PCT:.0f} % of the machine, "
              f"or the hypervisor stole more than {probes.BUSY_STEAL_PCT:.0f} %")
    parts = []
    if again:
        parts.append(f"{again} attempt{'s' if again != 1 else ''} ran on a busy host ({limits}) and "
                     f"{'were' if again != 1 else 'was'} discarded and measured again (kept in the run's steps table as busy attempts)")
    if still:
        parts.append(f"{still} measured step{'s' if still != 1 else ''} still ran on a busy host after "
                     f"{retries} retr{'y' if retries == 1 else 'ies'} (marked busy in the summary's busy-step count)")
    return "**Busy host.** " + "; ".join(parts) + "."


def caveats(run: Run, p: Any, tables: dict[str, Any], throughput: str | None) -> list[str]:
    """Every caveat that applies to this run (its parameters `p`; Markdown, one item each). `tables`: the
    answer's tables (`steps` among them, where the study has one); `throughput`: the key of
    its throughput verdict table, whose judged cells get the CPU budget (None: no budget)."""
    r = run.record
    if getattr(p, "count", 0):  # instructions, not time: what it rests on instead
        return [c for c in (*callgrind.caveats(p.threads, any(workloads.writes(w) for w in p.workloads)),
                            settings.beyond_varied(r)) if c]
    steps = steps_of(tables)
    rel = tables.get(throughput) if throughput else None
    cpus = cpus_shared(p, r.host.cpus)  # the host's, or the pinned ones
    pinned = pinned_apart(p)
    b = judged_budget(tables, throughput, cpus)
    mde = rel["mde_pct"].median() if rel is not None and "mde_pct" in rel and len(rel) else float("nan")
    judged_seconds, changed = judged_seconds_of(run, tables, throughput, p)
    out = [saturation(steps, b, cpus, pinned), ramp_up(run, steps, mde),
           f"**Seconds judged.** {judged_seconds}." if changed else "", virtual_machine(r.host),
           busy(steps, getattr(p, "busy_retries", 0)),  # a study that retries no step: none
           settings.beyond_varied(r)]
    return [c for c in out if c]
