"""Runs of one study compared on their effects: a replication (`replication`: did the
original's answer hold in the replica?) and a pool of runs (`pooled`: several nights, or the
hosts of a sweep, as one estimate with its between-run spread) — `stats.replication` on the
comparison tables of each run.

A run's tables here are its study's judged comparisons (`study.paired_tables`: what `dbstudies plan` predicts and a
precision `target` names: QPS, p95, p99 and the tail ratio for the sysbench studies), every
compared arm against the baseline in the design the run was measured in, with the run's own
draw threshold — the verdicts its report gave. Absolute values never enter: the same profile
on the same host a few days apart moved the baseline's medians by 21–30 % while effects,
measured inside each run, cancel what moves both arms.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from .. import stats
from ..core.comparisons import by_key
from ..core.errors import StoreError
from ..kit.contract import Study
from ..kit.study import paired_tables
from ..store.results import Run
from ..store.settings import between_runs, knobs
from .tables import design_table, tail_rests, threshold, to_target
from .words import word_of

KEYS = ["metric", "candidate"]  # with each table's cell columns: one row of a replication table


def higher_is_better(study: Study, metric: str) -> bool:
    """Whether more is better in a study's comparison `metric` (its record says)."""
    return by_key(study.Params.COMPARISONS, metric).higher_is_better


def compared(run: Run) -> tuple[str, list[str]]:
    """The run's baseline and every other arm — its controls too: an A/A twin's effect
    should replicate as none, a paused twin's as the harm its pauses did."""
    labels = run.record.labels
    if not labels:
        raise StoreError(f"run {run.path.name} records no arms: no effects to compare")
    return labels[0], labels[1:]


def effects(study: Study, run: Run) -> dict[str, tuple[str, list[str], pd.DataFrame]]:
    """A run's comparison tables: {metric: (words, cell columns, table)} — every arm against
    the baseline per cell (`compared`), as the run's report judged them: the compared arms in
    one Holm family, the twins (the A/A and positive controls) in another, a tail cell resting
    on too few transactions not judged (`tail_rests`: left out here), by the draw threshold and
    targets the report used (empty tables left out)."""
    rule = run.params(study)  # its draw threshold and targets
    baseline, candidates = compared(run)
    twins = run.record.twins
    listed = getattr(rule, "COMPARISONS", study.Params.COMPARISONS)
    out = {}
    for metric, (words, frame, by, value) in paired_tables(study, run, rule).items():
        if frame.empty or value not in frame:
            continue
        kept, _ = tail_rests(frame, by_key(listed, metric))
        parts = [to_target(t, rule, metric) for family in ([c for c in candidates if c not in twins],
                                                           [c for c in candidates if c in twins]) if family
                 for t in [design_table(kept, by=by, factor="arm", baseline=baseline, candidates=family,
                                        value=value, higher_is_better=higher_is_better(study, metric),
                                        threshold=threshold(rule, metric))] if not t.empty]
        if parts:
            out[metric] = (words, list(by), pd.concat(parts, ignore_index=True))
    return out


def same_comparisons(runs: Sequence[Run]) -> None:
    """A clear error unless the runs are of one study and compare the same arms with the same
    baseline."""
    studies = {r.study for r in runs}
    if len(studies) > 1:
        raise StoreError("runs of different studies cannot be compared on their effects: "
                         + ", ".join(f"{r.path.name} is {r.study}" for r in runs))
    arms = [compared(r) for r in runs]
    if any(a[0] != arms[0][0] for a in arms):
        raise StoreError("the runs compare against different baselines: "
                         + ", ".join(f"{r.path.name}: {a[0]}" for r, a in zip(runs, arms)))
    if not set(arms[0][1]).intersection(*(set(a[1]) for a in arms[1:])):
        raise StoreError("the runs have no compared arm in common: "
                         + "; ".join(f"{r.path.name}: {', '.join(a[1])}" for r, a in zip(runs, arms)))


def replication(study: Study, original: Run, replica: Run) -> dict[str, pd.DataFrame]:
    """Per table the two runs share: `stats.replication_table` of the replica's effects
    against the original's, per compared arm × cell both measured (one Holm family per
    table); `attrs`: words, the cell columns, the cells only one run has."""
    same_comparisons([original, replica])
    a, b = effects(study, original), effects(study, replica)
    rule, out = original.params(study), {}
    for metric in [m for m in a if m in b]:
        words, by, ta = a[metric]
        tb = b[metric][2]
        keys = ["candidate", *by]
        t = stats.replication_table(ta, tb, keys)
        if t.empty:
            continue
        t = t.merge(_said(ta, keys, "original"), on=keys, how="left").merge(_said(tb, keys, "replica"), on=keys, how="left")
        t.attrs.update(words=words, by=by, metric=metric, digits=stats.decimals(threshold(rule, metric)),
                       only_original=sorted(_cells(ta, keys) - _cells(tb, keys)),
                       only_replica=sorted(_cells(tb, keys) - _cells(ta, keys)))
        out[metric] = t
    if not out:
        raise StoreError(f"runs {original.path.name} and {replica.path.name} have no comparison × cell in common")
    return out


def _said(t: pd.DataFrame, keys: list[str], side: str) -> pd.DataFrame:
    """A run's word per cell as its report says it (`word_of`: a draw measured to a
    target keeps its reading), to show beside the verdicts the replication rule reads."""
    return t[keys].assign(**{f"said_{side}": [word_of(r) for r in t.itertuples(index=False)]})


def _cells(t: pd.DataFrame, keys: list[str]) -> set[tuple[str, ...]]:
    return set(map(tuple, t[keys].astype(str).to_numpy().tolist()))


def pooled(study: Study, runs: Sequence[Run]) -> dict[str, pd.DataFrame]:
    """Per table: `stats.pooled_table` over the runs' effects (each row: a compared arm × cell
    at least two runs measured), with each run's own word for the cell (`said_runs`, in the
    runs' order, as their reports say it)."""
    named: dict[str, list[str]] = {}
    for r in runs:  # a packed run's copy, or the copy a replication measured from, is the run itself
        named.setdefault(r.record.run_id or r.path.name, []).append(str(r.path))
    twice = {k: v for k, v in named.items() if len(v) > 1}
    if twice:
        raise StoreError("pool: each run counts once; " + "; ".join(
            f"run {k} is named {len(v)} times ({', '.join(v)})" for k, v in twice.items()))
    if len(runs) < 2:
        raise StoreError("pool: name at least two runs of one study")
    same_comparisons(runs)
    per_run = [effects(study, r) for r in runs]
    out = {}
    rule = runs[0].params(study)  # the first run's draw threshold and targets judge the pooled effects
    for metric in [m for m in per_run[0] if all(m in e for e in per_run)]:
        words, by, _ = per_run[0][metric]
        keys = ["candidate", *by]
        t = stats.pooled_table([e[metric][2] for e in per_run], keys,
                               threshold=threshold(rule, metric), higher_is_better=higher_is_better(study, metric))
        if not t.empty:
            said = [_said(e[metric][2], keys, str(i)).set_index(keys)[f"said_{i}"] for i, e in enumerate(per_run)]
            each = pd.concat(said, axis=1).fillna("–").astype(str).agg(" · ".join, axis=1).rename("said_runs")
            t = t.merge(each.reset_index(), on=keys, how="left")  # each run's word, as its report says it
            t.attrs.update(words=words, by=by, metric=metric, digits=stats.decimals(threshold(rule, metric)))
            out[metric] = t
    return out


# ---------------------------------------------------------------- in words

def verdict_counts(t: pd.DataFrame) -> str:
    """A table's verdicts counted in the order every view says them: '2 better, 6 draw'.

    >>> verdict_counts(pd.DataFrame({"verdict": ["draw", "worse", "draw"]}))
    '1 worse, 2 draw'
    """
    counts = t["verdict"].astype(str).value_counts()
    order = [*stats.VERDICTS, *(v for v in counts.index if v not in stats.VERDICTS)]
    return ", ".join(f"{counts[v]} {v}" for v in order if v in counts)


def cell_name(row: Any, by: Sequence[str]) -> str:
    """'pool-of-threads at oltp_read_only @16' (threads after an @, other cell columns as they are)."""
    parts = [f"@{getattr(row, c)}" if c == "threads" else str(getattr(row, c)) for c in by]
    return f"{row.candidate} at {' '.join(parts)}"


def signed(x: float, digits: int = 1) -> str:
    """'+4.1' / '−19.0' (a true minus sign; `digits`: a table's, `stats.decimals`)."""
    return f"{x:+.{digits}f}".replace("-", "−")


def effect_text(delta_pct: float, low: float, high: float, digits: int = 1) -> str:
    """'−19.0 % [−24.1, −14.2]' (a ratio's CI given as ratios)."""
    return f"{signed(delta_pct, digits)} % [{signed((low - 1) * 100, digits)}, {signed((high - 1) * 100, digits)}]"


def _more(n: int) -> list[str]:
    return [f"and {n} more"] if n > 0 else []


def replication_lines(tables: dict[str, pd.DataFrame], named: int = 3) -> list[str]:
    """The Answer in words of a replication, one line per table: how many of the original's
    decisive cells (better or worse) replicated, with up to `named` cells of each kind named
    with both effects."""
    lines = []
    for t in tables.values():
        words, by, d = t.attrs["words"], t.attrs["by"], t.attrs.get("digits", 1)
        decisive = t[t["verdict_original"].isin(stats.replication.DECISIVE)]
        held = decisive[decisive["word"].isin([stats.REPLICATED, stats.RESIZED])]  # the direction held
        failed = t[t["word"] == stats.NOT_REPLICATED]
        head = (f"**{words}**: {len(held)} of {len(decisive)} decisive cell{'s' if len(decisive) != 1 else ''} "
                f"of the original replicated" if len(decisive) else f"**{words}**: the original decided no cell")
        said = [f"{cell_name(r, by)}'s {signed(r.delta_pct_original, d)} % replicated "
                f"({effect_text(r.delta_pct_replica, r.ci_low_replica, r.ci_high_replica, d)} here"
                + (f"; the size differs: ratio of the effects {r.ratio_of_ratios:.2f} [{r.rr_holm_low:.2f}, "
                   f"{r.rr_holm_high:.2f}], Holm-adjusted" if r.word == stats.RESIZED else "") + ")"
                for r in held.head(named).itertuples()] + _more(len(held) - named)
        said += [f"{cell_name(r, by)}'s {signed(r.delta_pct_original, d)} % did not "
                 f"({effect_text(r.delta_pct_replica, r.ci_low_replica, r.ci_high_replica, d)} here; ratio of the "
                 f"effects {r.ratio_of_ratios:.2f} [{r.rr_holm_low:.2f}, {r.rr_holm_high:.2f}], Holm-adjusted)"
                 for r in failed.head(named).itertuples()] + _more(len(failed) - named)
        rest = len(t) - len(held.head(named)) - len(failed.head(named))
        mde = t["mde_pct"].median()
        lines.append(head + (": " + "; ".join(said) if said else "") + "." +
                     (f" {len(failed)} not replicated in all, {(t['word'] == stats.CONSISTENT).sum()} "
                      f"consistent but not decisive (of {len(t)} cell{'s' if len(t) != 1 else ''})." if rest > 0 else "") +
                     (f" A change of the effect of {stats.mde_text(mde)} could be seen in the median cell." if mde <= 1000
                      else " Only a change of the effect of more than 1,000 % could be seen in the median cell."))
    return lines


def pooled_lines(tables: dict[str, pd.DataFrame], k: int) -> list[str]:
    """The Answer in words of a pool of `k` runs, one line per table: the verdicts on the
    pooled effects, the median cell's MDE pooled against one run's, and the cells whose runs
    disagree more than their own noise explains (Q test, Holm)."""
    lines = []
    for t in tables.values():
        words, by = t.attrs["words"], t.attrs["by"]
        verdicts = verdict_counts(t)
        ratio = (t["mde_pct"] / t["mde_runs_pct"]).median()
        het = t[t["p_het_holm"] < stats.ALPHA]
        line = (f"**{words}** over {k} runs: {verdicts}; MDE in the median cell {stats.mde_text(t['mde_pct'].median())} "
                f"pooled against {stats.mde_text(t['mde_runs_pct'].median())} for one run (× {ratio:.2f}; 1/√{k} = "
                f"{k ** -0.5:.2f} when the runs agree)")
        if het.empty:
            line += "; no cell's runs disagree more than their own noise explains."
        else:
            line += (f"; the runs disagree beyond their own noise in {len(het)} cell{'s' if len(het) != 1 else ''}: "
                     + "; ".join(f"{cell_name(r, by)} (τ {r.tau_pct:.0f} %, I² {r.i2:.0%})" for r in het.head(4).itertuples())
                     + " — there the pooled interval carries the between-run spread.")
        lines.append(line)
    return lines


def setups(runs: dict[str, Run]) -> pd.DataFrame:
    """The runs' headers side by side (one column per run, labelled by the keys of `runs`):
    host, CPUs, kernel, when, the dbstudies commit, and every server's version and SHA-256."""
    rows: dict[str, dict[str, str]] = {}
    for label, run in runs.items():
        r = run.record
        h, git = r.host, r.dbstudies
        col = {"run": run.path.name, "host": f"{h.hostname} ({h.cpu_model}, {h.cpus} CPUs)",
               "kernel": str(h.kernel), "kernel settings": knobs(h.raw), "started": (r.created_at or "")[:19],
               "dbstudies commit": f"{str(git.get('commit'))[:10]}{' (dirty)' if git.get('dirty') else ''}"}
        for s in r.servers:
            if s.label.startswith("prepare "):
                continue
            col[f"server {s.label}"] = f"{s.version}, sha256 {str(s.binary_sha256)[:12]}"
        rows[label] = col
    return pd.DataFrame(rows)


def settings_diff(original: Run, replica: Run) -> pd.DataFrame:
    """Per arm, the server settings whose values differ between the two runs."""
    return pd.DataFrame(between_runs(original.record, replica.record),
                        columns=["arm", "variable", "original", "replication"])


def rerun_lines(tables: dict[str, pd.DataFrame], most: int = 3) -> list[str]:
    """What a rerun changed, in words, from a replication's tables (`replication`): how many
    verdicts changed of all the cells both runs judged, per table, and how many reversed
    (better ↔ worse); then the `most` least stable cells — the largest ratios of the two
    effects — with both effects."""
    rows = pd.concat([t.assign(table=t.attrs["words"], by=[t.attrs["by"]] * len(t), digits=t.attrs.get("digits", 1))
                      for t in tables.values()], ignore_index=True)
    changed = rows["verdict_original"] != rows["verdict_replica"]
    flipped = changed & rows["verdict_original"].isin(stats.replication.DECISIVE) \
        & rows["verdict_replica"].isin(stats.replication.DECISIVE)
    per = "; ".join(f"{w} {int(changed[rows['table'] == w].sum())} of {int((rows['table'] == w).sum())}"
                    for w in dict.fromkeys(rows["table"]))
    lines = [f"{int(changed.sum())} of {len(rows)} verdicts changed ({per}); "
             + (f"{int(flipped.sum())} reversed" if flipped.any() else "none reversed")]
    shaky = rows.assign(size=np.abs(np.log(rows["ratio_of_ratios"]))).sort_values("size", ascending=False)
    lines.append("least stable: " + "; ".join(
        f"{r.table}, {cell_name(r, r.by)}: {signed(r.delta_pct_original, r.digits)} % → {signed(r.delta_pct_replica, r.digits)} %"
        for r in shaky.head(most).itertuples()))
    return lines
