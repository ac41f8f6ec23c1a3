"""A replication's section of a report: whether the answer of the run it replicates held here,
cell by cell and in words, the two set-ups side by side (hosts, versions, server binaries,
the dbstudies commits) with the server settings that differ between them, and a figure of
effect against effect. The numbers are `analysis.replication`'s.
"""
from __future__ import annotations

from ..analysis import replication as replication_of
from ..core.errors import DbStudiesError
from ..kit.study import load, params_of, reference
from ..store import archive
from ..store.results import Run
from .shown import conclusion, note, skip, table

REPLICATION_COLUMNS = ["candidate", "said_original", "delta_pct_original", "said_replica",
                       "delta_pct_replica", "ratio_of_ratios", "rr_holm_low", "rr_holm_high", "p_holm", "mde_pct", "word"]


def original_of(run: Run) -> Run | None:
    """The run a replication replicates (None for a run that is no replication)."""
    given = params_of(run).replicate
    return archive.open_run(given) if given else None


def binaries_line(original: Run, run: Run) -> str:
    """Whether each server flavour ran the same build in both runs (by the binaries' SHA-256)."""
    a, b = original.record.flavours, run.record.flavours
    other = [f for f in a if f in b and a[f] != b[f]]
    if not other:
        return "Every server flavour ran the same build in both runs (the same SHA-256)."
    return ("**Another build** of " + ", ".join(f"{f} (sha256 {a[f][:12]} in the original, {b[f][:12]} here)"
                                                 for f in other)
            + ": the comparison of effects includes what the builds change.")


def section(run: Run) -> None:
    """A replication's section of the Answer (nothing for a run that is no replication): whether
    the original's answer held, cell by cell and in words, the two set-ups side by side (hosts,
    versions, server binaries, the dbstudies commits) with the server settings that differ
    between them, and a figure of effect against effect."""
    from IPython.display import Markdown, display
    try:
        original = original_of(run)
    except DbStudiesError as e:
        skip(f"The original run cannot be read here: {e}")
        return
    if original is None:
        return
    study = load(reference(run.record))
    tables = replication_of.replication(study, original, run)
    display(Markdown(f"### Did the answer of run {original.path.name} replicate?\n\nEach cell's *effect* — "
                     "the candidate against the baseline, measured inside each run — in the original and "
                     "here, and the ratio of the two effects with its 95 % interval (Holm across each "
                     "table): *replicated* — the same verdict, effects not shown to differ; *consistent, "
                     "not decisive* — a draw in one run or both, effects not shown to differ; *not "
                     "replicated* — effects that differ beyond both runs' noise, or opposite verdicts. "
                     "Absolute values are not compared: they move between days and hosts, both arms alike."))
    conclusion("**Replication of run " + original.path.name + "**\n\n" + "\n".join(
        f"- {line}" for line in replication_of.replication_lines(tables)))
    setups(original, run)
    from .. import plots  # here, not at the top: a command that renders a report draws no figure
    threshold = params_of(run).draw_threshold
    plots.publish(plots.replication(tables, threshold), run, "replication",
                  alt="Each cell's effect in the original run (x) against the replication's (y), 95 % intervals "
                      "both ways, coloured by whether it replicated; the diagonal is the same effect.")
    for t in tables.values():
        by = t.attrs["by"]
        display(Markdown(f"**{t.attrs['words']}**"))
        display(table(t, [REPLICATION_COLUMNS[0], *by, *REPLICATION_COLUMNS[1:]]))
        for side, cells in (("the original", t.attrs["only_original"]), ("this run", t.attrs["only_replica"])):
            if cells:
                note(f"Measured only in {side} (not compared): " + "; ".join(" ".join(c) for c in cells) + ".")


def setups(original: Run, run: Run) -> None:
    """The two runs' set-ups side by side (hosts, versions, the dbstudies commits), whether
    their servers ran the same builds, and the server settings that differ between them."""
    from IPython.display import display
    display(table(replication_of.setups({"original": original, "replication": run}).reset_index(names="")))
    note(binaries_line(original, run))
    diff = replication_of.settings_diff(original, run)
    note("No server setting differs between the two runs' servers (machine paths, ports and identities "
         "aside)." if diff.empty else f"{len(diff)} server setting(s) differ between the two runs:")
    if not diff.empty:
        display(table(diff))
