"""The CPU profiles section: which functions' CPU per transaction changed in the cells profiled after
the plan."""

from __future__ import annotations

from typing import Any

from ..store import results
from ..store.results import Run
from .shown import skip, table
from .tables import details


def shows(profiled: float, verdict: float) -> bool:
    """Whether profiled steps differ the way the verdict does: same sign, at least half its size.

    >>> shows(-2.9, -27.0), shows(-20.0, -27.0), shows(5.0, -10.0), shows(1.0, float("nan"))
    (False, True, False, True)
    """
    if verdict != verdict or profiled != profiled:
        return True
    return profiled * verdict > 0 and abs(profiled) >= abs(verdict) / 2


def cpu_profiles(run: Run, arms: list[Any]) -> None:
    """Where each arm's server spent its CPU in the profiled cells (`analysis.cpu_profiles`):
    per cell the flame graph of every arm, then per candidate the functions whose CPU per
    transaction changed against the baseline, judged across the profiled rounds, and its
    difference flame graph colouring only those; last, what
    profiling cost. The SVGs are also written to the run's (or the variant's) profiles/."""
    from IPython.display import HTML, Markdown, display

    from ..analysis import cpu_profiles, signed
    views = cpu_profiles.views(run, arms)
    if not views:
        skip("No on-CPU profiles in this run (`cpu_profile = True` takes them after the plan).")
        return
    folder = run.output_dir / results.PROFILE_DIR  # a re-analysis variant keeps its own
    folder.mkdir(parents=True, exist_ok=True)
    for v in views:
        display(Markdown(f"**{v['title']}** — " + ", ".join(
            f"{a['arm']}: {a['samples']:,} samples at {a['tps']:,.0f} transactions/s"
            + (f" (median of {a['rounds']} rounds)" if a["rounds"] > 1 else "") for a in v["arms"])))
        for a in v["arms"]:
            (folder / f"flame-{results.slug(a['arm'])}-{v['workload']}-{v['threads']}.svg").write_text(a["svg"])
            display(HTML(f"<div class='dbs-flame'>{a['svg']}</div>"))
        for d in v["differences"]:
            if not shows(d["profiled_pct"], d["verdict_pct"]):
                display(Markdown(
                    f"**These profiles may not show the verdict's cause:** the profiled steps differ by "
                    f"{signed(d['profiled_pct'])} in throughput (median), the verdict by {signed(d['verdict_pct'])}; "
                    "read the differences below with that in mind."))
            display(Markdown(f"*{d['candidate']} against {v['arms'][0]['arm']}: the functions whose CPU per "
                             "transaction, with what they call, changed (µs: the share of the samples with the "
                             "function on the stack × the step's server CPU per transaction, paired round by "
                             "round; every function judged is in profiles/" + f"difference-{results.slug(d['candidate'])}-"
                             f"{v['workload']}-{v['threads']}.csv).* "
                             + cpu_profiles.said(d["judged"])))
            display(table(d["table"]))
            name = f"difference-{results.slug(d['candidate'])}-{v['workload']}-{v['threads']}"
            d["judged"].to_csv(folder / f"{name}.csv", index=False)  # every unit judged, not only those shown
            (folder / f"{name}.svg").write_text(d["svg"])
            display(HTML(f"<div class='dbs-flame'>{d['svg']}</div>"))
        if v["waits"] is not None:
            display(Markdown("*Waits inside the server during these steps (performance_schema, "
                             "where an arm turned it on): the events with the most time waited — "
                             "mutexes, rw-locks, file and table I/O, locks; idle connections and "
                             "threads asleep on a condition are left out.*"))
            display(table(v["waits"]))
        else:
            display(Markdown("*No arm ran with performance_schema on, so there are no wait events "
                             "to show: `-p settings '{\"performance_schema\": \"ON\"}'` turns it on for "
                             "every arm (MariaDB times mutex and rw-lock waits only with "
                             "`performance_schema_instrument: \"wait/synch/%=ON\"` too); its own cost "
                             "is then in every step of those arms.*"))
    cost = cpu_profiles.overhead(run, cpu_profiles.profiled(run))
    cost[cpu_profiles.CHANGE] = cost[cpu_profiles.CHANGE].map(signed)
    details("What profiling cost", table(cost), "Throughput of the profiled steps (their median) against "
            "the median of the same arm and cell measured without perf in this run (noise included; "
            "tests/benchmarks/profiling_overhead.py measures it in repeated pairs).")


