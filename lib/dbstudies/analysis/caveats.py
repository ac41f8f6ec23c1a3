"""What the run's own data say about how far to trust its verdicts, stated in the Answer:
CPU saturation with client and server on the same CPUs (and the client's share of the
CPU per transaction behind each verdict — the CPU budget, `budget`), steps whose first
second differs from the rest (ramp-up), a virtual machine, steps measured again on a busy
host, settings that differ between arms beyond what the study varies."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .. import probes
from ..results import INTERVALS, Run
from . import BY, settings, signed
from .words import listing, percent, span, thread_words

SATURATED = 0.9      # server + client CPU ≥ 90 % of the host's: throughput is bounded by CPU
JUDGED = ("better", "worse")
BUDGET_COLUMNS = ["workload", "threads", "candidate", "verdict", "measured", "predicted",
                  "CPU used (baseline → candidate)", "server µs per transaction",
                  "client µs per transaction", "client's share of the extra CPU"]


def _per_arm(steps: pd.DataFrame) -> pd.DataFrame:
    """Medians per cell × arm of what the budget needs."""
    need = ["tps", "cpu_server_pct", "cpu_client_pct", "cpu_server_us_per_txn", "cpu_client_us_per_txn"]
    return (steps.groupby([*BY, "arm"], sort=False)[need].median()
            .assign(cpu_pct=lambda d: d["cpu_server_pct"] + d["cpu_client_pct"]))


def predicted(baseline_us: float, candidate_us: float) -> float:
    """The throughput change, in %, that CPU µs per transaction predict if the CPUs are the
    limit: the same CPU-seconds spent at the candidate's cost, baseline / candidate − 1.

    >>> round(predicted(100.0, 125.0), 1)
    -20.0
    """
    return (baseline_us / candidate_us - 1) * 100


def budget(steps: pd.DataFrame | None, rel: pd.DataFrame | None, host_cpus: int) -> pd.DataFrame:
    """Per cell of `rel` (a throughput table) judged better or worse: the CPU budget of
    baseline and candidate — CPU µs per transaction of server and client (medians over the
    cell's steps) and the share of the host's CPUs they used (µs per transaction × transactions
    per second) — and the throughput change it predicts if the CPUs are the limit (the same
    CPU-seconds spent at the candidate's cost per transaction: (S_b + C_b) / (S_c + C_c) − 1),
    next to the measured one; with what share of the candidate's extra CPU per transaction is
    the client's. `saturated`: both arms used ≥ 90 % of the host (only there does the budget
    bound throughput). Empty without those costs or judged cells."""
    cols = {"cpu_server_us_per_txn", "cpu_client_us_per_txn", "cpu_server_pct", "cpu_client_pct"}
    if steps is None or rel is None or rel.empty or not cols <= set(steps) or "baseline" not in rel:
        return pd.DataFrame(columns=BUDGET_COLUMNS)
    arm = _per_arm(steps)
    rows = []
    for r in rel[rel["verdict"].isin(JUDGED)].itertuples():
        try:
            b, c = arm.loc[(r.workload, r.threads, r.baseline)], arm.loc[(r.workload, r.threads, r.candidate)]
        except KeyError:
            continue
        sb, cb, sc, cc = (b.cpu_server_us_per_txn, b.cpu_client_us_per_txn,
                          c.cpu_server_us_per_txn, c.cpu_client_us_per_txn)
        if not all(np.isfinite([sb, cb, sc, cc])) or sc + cc <= 0:
            continue
        extra = (sc + cc) - (sb + cb)
        share = (cc - cb) / extra * 100 if abs(extra) > 0.01 * (sb + cb) else float("nan")
        full = host_cpus * 100 * SATURATED
        rows.append({"workload": r.workload, "threads": int(r.threads), "candidate": r.candidate,
                     "verdict": r.verdict, "measured_pct": r.delta_pct,
                     "predicted_pct": predicted(sb + cb, sc + cc),
                     "cpu_baseline_pct": b.cpu_pct, "cpu_candidate_pct": c.cpu_pct,
                     "server_us": (sb, sc), "client_us": (cb, cc), "client_share_pct": share,
                     "saturated": bool(b.cpu_pct >= full and c.cpu_pct >= full)})
    return pd.DataFrame(rows)


def budget_table(b: pd.DataFrame, host_cpus: int) -> pd.DataFrame:
    """`budget` as the report shows it: one row per judged cell, in words."""
    if b.empty:
        return pd.DataFrame(columns=BUDGET_COLUMNS)

    def arrow(pair: tuple[float, float]) -> str:
        def us(x: float) -> str:
            return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"
        return f"{us(pair[0])} → {us(pair[1])} ({signed((pair[1] / pair[0] - 1) * 100)})" if pair[0] > 0 else "–"

    return pd.DataFrame({
        "workload": b["workload"], "threads": b["threads"], "candidate": b["candidate"],
        "verdict": b["verdict"], "measured": b["measured_pct"].map(signed),
        "predicted": [(signed(p) if s else f"({signed(p)}: CPU not saturated)")
                      for p, s in zip(b["predicted_pct"], b["saturated"])],
        "CPU used (baseline → candidate)": [f"{x:.0f} → {y:.0f} % of {host_cpus * 100} %"
                                            for x, y in zip(b["cpu_baseline_pct"], b["cpu_candidate_pct"])],
        "server µs per transaction": b["server_us"].map(arrow),
        "client µs per transaction": b["client_us"].map(arrow),
        "client's share of the extra CPU": b["client_share_pct"].map(
            lambda v: "–" if v != v else f"{v:.0f} %")})


def saturation(steps: pd.DataFrame | None, b: pd.DataFrame, host_cpus: int, pinned: bool) -> str:
    """The CPU-saturation caveat: where server and client together used ≥ 90 % of the host's
    CPUs, and (with `budget` rows) how much of the verdicts' extra CPU is the client's."""
    if steps is None or pinned or not {"cpu_server_pct", "cpu_client_pct"} <= set(steps):
        return ""
    arm = _per_arm(steps).reset_index()
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
    judged = b[b["saturated"]] if len(b) else b
    if len(judged):
        shares = judged["client_share_pct"].dropna()
        gap = (judged["predicted_pct"] - judged["measured_pct"]).abs()
        text += (f" In the {len(judged)} judged cell{'s' if len(judged) != 1 else ''} that saturate, the CPU per "
                 f"transaction predicts the measured change within {percent(gap.max())} points"
                 + (f", and the client's share of the extra CPU per transaction is "
                    f"{span(shares.tolist())}" + (" (over 100 %: the server's own went down)"
                                                  if shares.max() > 100 else "") if len(shares) else "")
                 + " (the CPU budget under “Why”). Pin them apart (`server_cpus`, `client_cpus`) on a "
                 "host with enough cores to judge the server alone.")
    return text


def ramp_up(run: Run, steps: pd.DataFrame | None, mde_pct: float) -> str:
    """Steps whose first second differs from the rest of the step by more than the run's
    minimum detectable effect (median over a cell's steps), e.g. connections still opening."""
    if steps is None or not run.has_table(INTERVALS) or not mde_pct == mde_pct:
        return ""
    i = run.table(INTERVALS).merge(steps[["step", *BY, "arm"]], on="step")
    i = i[i.groupby("step")["second"].transform("size") >= 3]
    if i.empty:
        return ""
    first = i.loc[i.groupby("step")["second"].idxmin()].set_index("step")["tps"]
    rest = i[i["second"] > i.groupby("step")["second"].transform("min")].groupby("step")["tps"].median()
    per_step = ((first / rest - 1) * 100).rename("ramp").reset_index().merge(steps[["step", *BY]], on="step")
    cell = per_step.groupby(BY)["ramp"].median().reset_index()
    off = cell[cell["ramp"].abs() > mde_pct]
    if off.empty:
        return ""
    seconds = int(steps["seconds"].median()) if "seconds" in steps else 0
    where = listing([f"{percent(abs(r.ramp))} % {'slower' if r.ramp < 0 else 'faster'} ({r.workload}, "
                     f"{int(r.threads)} client thread{'s' if r.threads != 1 else ''})" for r in off.itertuples()])
    return (f"**Ramp-up inside the steps.** The first second of a step ran {where} than the rest of it "
            f"(median over the cell's steps), more than the {percent(mde_pct)} % this run can detect"
            + (f"; with {seconds}-s steps that second is {percent(100 / seconds)} % of each" if seconds else "")
            + ". Both arms pay it, but not necessarily alike: longer steps (`duration`) dilute it.")


def virtual_machine(meta: dict[str, Any]) -> str:
    vm = (meta.get("host") or {}).get("virtual_machine")
    if not vm:
        return ""
    kind = "" if vm == "virtual machine" else f" ({vm})"
    return (f"**Measured in a virtual machine{kind}.** Its vCPUs share physical cores with other "
            "guests and wake up slower than bare metal: a single client thread waits on every "
            "round trip, so low-concurrency cells understate what the server can do, and noise "
            "from other tenants is part of every figure.")


def busy(steps: pd.DataFrame | None) -> str:
    """Busy-host re-measurements and steps still measured on a busy host."""
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
                     f"{'were' if again != 1 else 'was'} discarded and measured again (kept in `steps`, phase busy)")
    if still:
        parts.append(f"{still} measured step{'s' if still != 1 else ''} still ran on a busy host after "
                     f"{probes.BUSY_RETRIES} retries (`steps.host_busy`)")
    return "**Busy host.** " + "; ".join(parts) + "."


THROUGHPUT = ("qps", "tps")  # the verdict tables whose judged cells get a CPU budget


def throughput_key(verdicts: dict[str, str]) -> str | None:
    """The key of an answer's throughput verdict table (`THROUGHPUT`), or None."""
    return next((k for k in verdicts.values() if k in THROUGHPUT), None)


def judged_budget(tables: dict[str, Any], throughput: str | None, host_cpus: int) -> pd.DataFrame:
    """`budget` of an answer's tables (its `steps`, its throughput table `throughput`),
    computed once and kept in `tables["budget"]` for the caveat and the report's table."""
    if "budget" not in tables:
        tables["budget"] = budget(_steps(tables), tables.get(throughput) if throughput else None, host_cpus)
    return tables["budget"]


def _steps(tables: dict[str, Any]) -> pd.DataFrame | None:
    steps = tables.get("steps")
    return steps if isinstance(steps, pd.DataFrame) and {*BY, "arm"} <= set(steps) else None


def caveats(run: Run, tables: dict[str, Any], throughput: str | None) -> list[str]:
    """Every caveat that applies to this run (Markdown, one item each). `tables`: the
    answer's tables (`steps` among them, where the study has one); `throughput`: the key of
    its throughput verdict table, whose judged cells get the CPU budget (None: no budget)."""
    meta = run.metadata
    steps = _steps(tables)
    rel = tables.get(throughput) if throughput else None
    host = (meta.get("host") or {}).get("cpus") or 0
    params = meta.get("parameters") or {}
    pinned = bool(params.get("server_cpus") and params.get("client_cpus"))
    b = judged_budget(tables, throughput, host)
    mde = rel["mde_pct"].median() if rel is not None and "mde_pct" in rel and len(rel) else float("nan")
    out = [saturation(steps, b, host, pinned), ramp_up(run, steps, mde), virtual_machine(meta), busy(steps),
           settings.beyond_varied(meta)]
    return [c for c in out if c]
