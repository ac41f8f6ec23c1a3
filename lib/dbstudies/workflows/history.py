"""Which build changed it: a series of server builds, each measured against one reference build
in the paired design, and its change points (`dbstudies history`; the bisection that stops
when it can tell, `dbstudies bisect`, is `bisection`'s).

**A series** is an ordered list of builds (flavours: `env/servers/*.toml`, a flavour file, or a
build directory made one with `servers add`) and a reference build. Every build is one
ordinary run of the versions study with `flavours = [reference, build]` — paired rounds, the
history profile's precision target (`PROFILES`), the user's `-p` on top — so host drift
between days cancels in each build's effect. The runs are sweep jobs (`grid.Job`): a run
that completed under the series' folder is never measured again (a series run again goes on
where it stopped), and their keys are what a Dask sweep over hosts would run. Per build and
cell the effect is the mean log ratio of its pairs with its standard error; the series' change
points are `stats.changepoints.find`'s.

Everything is written under `data/series/<name>/`: `series.json` (builds, reference,
parameters, the runs), the runs, `effects.csv`, `report.html` with its figure.
"""
from __future__ import annotations

import base64
import html
import io
import json
import math
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from .. import stats
from ..core import comparisons
from ..report.render import inline_html, page
from ..stats import changepoints, paired_effect
from ..store import results
from . import cluster, grid, sweep
from .series import (
    QPS,
    SERIES_FILE,
    STUDY,
    Metric,
    Series,
    bisect_parts,
    bisect_words,
    builds_of,
    check,
    command,
    interval_text,
    is_series,
    read_series,
    save_series,
    short,
)


def _executor(s: Series, todo: list[grid.Job], runs_dir: Path, scheduler: cluster.Access | None,
              say: Callable[[str], None]) -> Callable[[grid.Job, Path], dict]:
    """How a build's job runs: here, one after another (`sweep.execute`); or, with `scheduler`,
    every job of `todo` at once as one Dask sweep, each job's record then read from it."""
    if not (scheduler and todo):
        return lambda job, where: sweep.execute(job, where, sweep=f"history-{s.name}")
    swept = sweep.Sweep(STUDY, todo, runs_dir, s.folder / "sweeps", say=say)
    swept.run_on(scheduler)
    records = {r["key"]: r for r in swept.records}
    return lambda job, where: records.get(job.key, {"status": "not run"})


def measure(s: Series, say: Callable[[str], None] = print,
            run_job: Callable[[grid.Job, Path], dict] | None = None,
            scheduler: cluster.Access | None = None) -> dict[str, Path]:
    """Measure every build of `s` not yet measured (a completed run of its job under the
    series' runs folder): here one after another, or with `scheduler` as one Dask sweep over
    its benchmark hosts (`sweep.Sweep.run_on`: each build's run on one host, back here
    packed); the series' record is written after each. Returns build → run directory."""
    runs_dir = s.folder / "runs"
    jobs = {b: grid.Job(STUDY, s.profile, s.parameters_of(s.reference, b)) for b in s.builds}
    done = sweep.completed(runs_dir, STUDY)
    out = {b: done[j.key] for b, j in jobs.items() if j.key in done}
    for i, b in enumerate(s.builds, 1):
        if b in out:
            say(f"build {i} of {len(s.builds)}: {short(b)} — measured already ({out[b].name})")
    todo = [b for b in s.builds if b not in out]
    execute = run_job or _executor(s, [jobs[b] for b in todo], runs_dir, scheduler, say)
    failed = []
    for b in todo:
        if not scheduler:
            say(f"build {s.builds.index(b) + 1} of {len(s.builds)}: {short(b)} against {short(s.reference)} …")
        record = execute(jobs[b], runs_dir)
        if record.get("interrupted"):  # Ctrl-C: the run ended as it could; no further build starts
            if record.get("status") == "complete":
                out[b] = Path(record["run_dir"])
            save_series(s, {k: str(p) for k, p in out.items()})
            raise KeyboardInterrupt
        if record.get("status") != "complete":
            error = record.get("error")
            failed.append(f"{b}: its run ended {record.get('status')}{': ' + error if error else ''} "
                          f"({record.get('run_dir') or record.get('kept_at') or 'no run directory'})")
            if not scheduler:
                break
            continue
        out[b] = Path(record["run_dir"])
        save_series(s, {k: str(p) for k, p in out.items()})
        say(f"  {short(b)}: {effect_words(effects_of(results.Run(out[b]), s.reference, b, s.metric), s.metric)}")
    save_series(s, {k: str(p) for k, p in out.items()})
    if failed:
        raise RuntimeError("; ".join(failed))
    return {b: out[b] for b in s.builds if b in out}


# ---------------------------------------------------------------- effects

BY = list(comparisons.BY)  # the cells a series' effects are shown by: workload × threads

def effects_of(run: results.Run, baseline: str, candidate: str, metric: Metric = QPS) -> pd.DataFrame:
    """Per cell of one paired run: `candidate` against `baseline` — the mean log ratio of the
    `metric` (QPS, or instructions per transaction) over its pairs, its standard error, the
    pairs, and in % the effect and its 95 % interval."""
    steps = results.measured(run)
    labels = {a.flavour: a.label for a in run.record.arms if a.flavour}
    pairs = stats.pair_up(steps, by=metric.by, factor="arm", baseline=labels.get(baseline, baseline),
                          candidate=labels.get(candidate, candidate), value=metric.column, pair="pair")
    rows = [{**dict(zip(metric.by, cell)), **paired_effect(g["d"])} for cell, g in pairs.groupby(metric.by)]
    return pd.DataFrame(rows, columns=[*metric.by, "log", "se", "pairs", "pct", "lo", "hi"])


def effect_words(e: pd.DataFrame, metric: Metric = QPS) -> str:
    return "; ".join(f"{r.workload}@{r.threads} {interval_text(r.pct, r.lo, r.hi, metric.digits)} ({r.pairs} pairs)"
                     for r in e.itertuples()) or "no pairs"


def series_effects(s: Series, runs: Mapping[str, Path]) -> pd.DataFrame:
    """Every build's effects against the reference, in the series' order."""
    parts = [effects_of(results.Run(runs[b]), s.reference, b, s.metric).assign(build=short(b), order=i)
             for i, b in enumerate(s.builds) if b in runs]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def changes(effects: pd.DataFrame, builds: Sequence[str]) -> dict:
    """`stats.changepoints.find` on the series' effects (builds × cells)."""
    cells = [f"{w}@{t}" for w, t in effects[BY].drop_duplicates().itertuples(index=False)]
    key = effects["workload"] + "@" + effects["threads"].astype(str)
    y = effects.assign(cell=key).pivot(index="build", columns="cell", values="log").loc[list(builds), cells]
    se = effects.assign(cell=key).pivot(index="build", columns="cell", values="se").loc[list(builds), cells]
    return changepoints.find(y.to_numpy(), se.to_numpy(), list(builds), cells)


# ---------------------------------------------------------------- confirmation

def neighbours(s: Series, found: dict) -> list[tuple[str, str]]:
    """The builds on either side of each change point the series' effects found (kept): the
    pairs whose paired run confirms it (`confirm`), as the series names its builds."""
    full = {short(b): b for b in s.builds}
    return [(full[c["after"]], full[c["before"]]) for c in found["changes"] if c["kept"]]


def confirmation_job(s: Series, after: str, before: str) -> grid.Job:
    """The run that measures two neighbouring builds against each other (`after` the baseline)."""
    return grid.Job(STUDY, s.profile, s.parameters_of(after, before))


def confirm(s: Series, found: dict, say: Callable[[str], None] = print,
            run_job: Callable[[grid.Job, Path], dict] | None = None) -> dict[tuple[str, str], Path]:
    """Measure the two builds on either side of each change point against each other in one
    paired run (a sweep job as a build's is; one that completed is not measured again). Each
    build's effect comes from its own run against the reference, so what moves between runs
    (the host, a count's server start) can look like a step; the neighbours' own run has no such
    term. Returns (after, before) → run directory."""
    runs_dir = s.folder / "runs"
    execute = run_job or (lambda job, where: sweep.execute(job, where, sweep=f"history-{s.name}"))
    out, done = {}, sweep.completed(runs_dir, STUDY)  # read once: each run's marker is a file
    for after, before in neighbours(s, found):
        job = confirmation_job(s, after, before)
        if job.key not in done:
            say(f"confirming the change between {short(after)} and {short(before)}: the two in one paired run …")
            record = execute(job, runs_dir)
            if record.get("status") != "complete":
                say(f"  its run ended {record.get('status')}: the change stays unconfirmed")
                continue
            done[job.key] = Path(record["run_dir"])
        out[(after, before)] = done[job.key]
    return out


def confirmed(s: Series, found: dict, runs: Mapping[tuple[str, str], Path] | None = None) -> dict:
    """`found` with each kept change point's confirmation (`confirm`'s runs; None: the completed
    runs under the series' folder): `check`, the later build against the earlier in their own
    run, per cell; `confirmed` — True where every cell the step moved moved the same way there
    (its interval excludes 0), False where not, None where it was not measured."""
    if runs is None:
        done = sweep.completed(s.folder / "runs", STUDY)
        runs = {(a, b): done[k] for a, b in neighbours(s, found)
                if (k := confirmation_job(s, a, b).key) in done}
    full = {short(b): b for b in s.builds}
    for c in found["changes"]:
        c["confirmed"], c["check"] = None, None
        where = runs.get((full.get(c["after"]), full.get(c["before"]))) if c["kept"] else None
        if where is None:
            continue
        e = effects_of(results.Run(where), full[c["after"]], full[c["before"]], s.metric)
        e = e.assign(cell=e["workload"] + "@" + e["threads"].astype(str)).set_index("cell")
        moved = {st["cell"]: st["moved"] for st in c["steps"] if st["moved"]}
        c["check"] = {cell: {k: float(e.loc[cell, k]) for k in ("pct", "lo", "hi", "pairs")}
                      for cell in e.index}
        c["confirmed"] = bool(moved) and all(
            cell in e.index and (e.loc[cell, "lo"] > 0 if way > 0 else e.loc[cell, "hi"] < 0)
            for cell, way in moved.items())
    return found


def reported(found: dict) -> list[dict]:
    """The change points a series reports: kept and confirmed by their neighbours' run."""
    return [c for c in found["changes"] if c["kept"] and c.get("confirmed")]


def change_words(found: dict, metric: Metric = QPS) -> list[str]:
    """The change points in words: confirmed ones first, then those their neighbours' run did
    not confirm or has not measured, then a cell that moved alone."""
    out = []
    for c in found["changes"]:
        sizes = "; ".join(f"{st['cell']} {interval_text(st['pct'], st['lo'], st['hi'], metric.digits)}"
                          for st in c["steps"])
        check = "; ".join(f"{cell} {interval_text(x['pct'], x['lo'], x['hi'], metric.digits)}"
                          for cell, x in (c.get("check") or {}).items())
        where = f"Between {c['after']} and {c['before']}"
        if c["kept"] and c.get("confirmed"):
            out.insert(sum(1 for x in out if x.startswith("**Between")),
                       f"**{where}**: {sizes} ({c['together']} cell{'s' if c['together'] != 1 else ''} moved "
                       f"together); confirmed: {c['before']} against {c['after']} in one paired run {check}.")
        elif c["kept"] and c.get("confirmed") is False:
            out.append(f"{where}: {sizes} against the reference — not confirmed: {c['before']} against "
                       f"{c['after']} in one paired run {check}; not counted (the runs moved, not the builds).")
        elif c["kept"]:
            out.append(f"{where}: {sizes} against the reference — not confirmed yet: its neighbours' paired run "
                       "has not been measured (`dbstudies history` again measures it); not counted.")
        else:
            out.append(f"{where}: {sizes} — one cell alone moved beyond its "
                       "interval; not counted (a change must move two cells the same way).")
    if not reported(found):
        out.insert(0, "**No change point**: no step between two builds stands out of the noise"
                   + (" and is confirmed by its neighbours' paired run." if any(c["kept"] for c in found["changes"])
                      else "."))
    return out


# ---------------------------------------------------------------- report

def figure(effects: pd.DataFrame, found: dict, builds: Sequence[str], metric: Metric = QPS):
    """Every build's effect against the reference with its 95 % interval, a line per cell,
    the change points kept as dashed lines with their size."""
    from .. import plots
    fig, ax = plots.plt.subplots(figsize=(min(plots.MAX_W, 1.1 * len(builds) + 3), 4.2))
    cells = effects[BY].drop_duplicates().itertuples(index=False)
    # the cells' own colours: the report-wide palette is the configurations' (a label seen here
    # would shift every later figure's colours in this process)
    import seaborn as sns
    deep = sns.color_palette("deep")
    colours = {f"{w}@{t}": deep[i % len(deep)]
               for i, (w, t) in enumerate(effects[BY].drop_duplicates().itertuples(index=False))}
    for k, (w, t) in enumerate(cells):
        e = effects[(effects["workload"] == w) & (effects["threads"] == t)].sort_values("order")
        x = e["order"] + (k - 0.5) * 0.08
        ax.errorbar(x, e["pct"], yerr=[e["pct"] - e["lo"], e["hi"] - e["pct"]], fmt="o-", capsize=3,
                    color=colours[f"{w}@{t}"], label=f"{w}, {t} client thread{'s' if t != 1 else ''}")
    ax.axhline(0, color="0.5", lw=0.8)
    for c in reported(found):
        ax.axvline(c["index"] - 0.5, color="0.2", ls="--", lw=1)
        st = c["steps"][0]
        ax.annotate(interval_text(st["pct"], st["lo"], st["hi"], metric.digits), (c["index"] - 0.45, ax.get_ylim()[1]),
                    va="top", fontsize=9)
    ax.set_xticks(range(len(builds)), list(builds), rotation=30, ha="right")
    ax.set_ylabel(f"{metric.name} against the reference, %")
    ax.set_title("Each build against the reference (95 % intervals); dashed: a change point")
    ax.legend(loc="best", fontsize=9)  # a step up or down: the empty corner
    fig.dbstudies_alt = "effect of every build against the reference along the series, change points marked"
    return fig


def _figure_html(fig: Any, folder: Path) -> str:
    """The figure saved with the series' figures and embedded in its page (with its alt text)."""
    from .. import plots
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110, bbox_inches="tight")
    plots.save(fig, folder, "effects")
    plots.plt.close(fig)
    return (f"<img alt='{html.escape(fig.dbstudies_alt)}' src='data:image/png;base64,"
            f"{base64.b64encode(png.getvalue()).decode()}'/>")


def report(s: Series, runs: Mapping[str, Path]) -> Path:
    """The series' report: its figure, the effects of every build, the change points with their
    sizes, what could be seen where nothing changed, and how to reproduce it; with
    `effects.csv` beside it."""
    effects = series_effects(s, runs)
    builds = [short(b) for b in s.builds if b in runs]
    s.folder.mkdir(parents=True, exist_ok=True)
    effects.to_csv(s.folder / "effects.csv", index=False)
    found = confirmed(s, changes(effects, builds)) if len(builds) >= 2 else {"changes": [], "quiet": [], "tau2": {}}
    table = effects.assign(cell=effects["workload"] + "@" + effects["threads"].astype(str),
                           effect=[f"{interval_text(p, a, b, s.metric.digits)} ({n})" for p, a, b, n in
                                   zip(effects["pct"], effects["lo"], effects["hi"], effects["pairs"])])
    wide = table.pivot(index="build", columns="cell", values="effect").loc[builds]
    quiet = pd.DataFrame([{"between": f"{q['after']} → {q['before']}",
                           **{c: f"no change detectable above {v:.{s.metric.digits}f} %" for c, v in q["mde_pct"].items()}}
                          for q in found["quiet"]])
    lines = change_words(found, s.metric) + [x for x in [bisect_words(s.folder)] if x]
    parts = [f"<h1>History: {html.escape(s.name)}</h1>",
             f"<p>{len(builds)} builds against {html.escape(short(s.reference))} ({s.profile} profile; {s.metric.name}, paired rounds; "
             "each cell: effect [95 % interval] (pairs)).</p>",
             "<ul>" + "".join(f"<li>{inline_html(x)}</li>" for x in lines) + "</ul>",
             _figure_html(figure(effects, found, builds, s.metric), s.folder / "figures"),
             "<h2>Every build against the reference</h2>", wide.to_html(classes="dbs-table"),
             "<h2>Where nothing changed</h2>",
             "<p>The smallest step each place between two builds would have shown (80 % power, the series' "
             "false-alarm rate held at 5 %).</p>" + (quiet.to_html(classes="dbs-table", index=False) if len(quiet) else ""),
             f"<p>Spread between runs beyond their own intervals (τ, log): "
             f"{', '.join(f'{c} {math.sqrt(v):.3f}' for c, v in found['tau2'].items())}.</p>"]
    argv = (json.loads((s.folder / SERIES_FILE).read_text()).get("argv") if is_series(s.folder) else None) \
        or command("history", s, reference=s.reference)
    parts += bisect_parts(s.folder)
    parts += ["<h2>To reproduce</h2><p>Measure it again (a run that completed is not measured again), or share "
              "it as one file — every run, the builds' flavour files, this report:</p><pre style='white-space: "
              f"pre-wrap'>{html.escape(argv)}\ndbstudies pack {html.escape(str(s.folder))}</pre>"]
    return page(s.folder / "report.html", f"History {s.name}", parts)


def rewrite(folder: Path) -> Path:
    """The report of the series kept in `folder` written again: its history's effects and
    change points where it has measured runs, and its bisection where it has one."""
    s, runs = read_series(folder)
    return report(s, runs) if runs else page(s.folder / "report.html", f"History {s.name}",
                                             [f"<h1>Bisection: {html.escape(s.name)}</h1>", *bisect_parts(folder)])


def main(name: str, reference: str, profile: str, parameters: Mapping[str, Any], *,
         builds: Sequence[str] | None = None, order: str | Path | None = None, folder: Path | None = None,
         scheduler: cluster.Access | None = None) -> int:
    """`dbstudies history`: the builds in order (`series.builds_of`; a folder's subfolder may be
    the reference), everything checked, then measure, find the change points, write the report."""
    with builds_of(name, folder, order, builds, also=[reference]) as given:
        reference = next((b for b in given if folder is not None and short(b) == reference), reference)
        builds = [b for b in given if b != reference]
        check(reference, builds, profile, parameters)
    s = Series(name, reference, tuple(builds), profile, dict(parameters))
    save_series(s, {}, argv=command("history", s, reference=short(reference) if folder else reference,
                                    folder=folder, order=order))
    say = lambda m: print(m, flush=True)  # noqa: E731
    runs = measure(s, say=say, scheduler=scheduler)
    found = changes(series_effects(s, runs), [short(b) for b in s.builds])
    found = confirmed(s, found, confirm(s, found, say=say))
    for line in change_words(found, s.metric):
        print(line.replace("**", ""))
    print(f"report: {report(s, runs)}")
    return 0
