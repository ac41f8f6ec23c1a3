"""Which build changed it: a series of server builds, each measured against one reference build
in the paired design, and its change points (`dbstudies history`; the bisection that stops
when it can tell, `dbstudies bisect`, is `bisection`'s).

**A series** is an ordered list of builds (flavours: `env/servers/*.toml`, a flavour file, or a
build directory made one with `servers add`) and a reference build. Every build is one
ordinary run of the versions study with `flavours = [reference, build]` — paired rounds, the
history profile's precision target (`PROFILES`), the user's `-p` on top — so host drift
between days cancels in each build's effect. The runs are sweep jobs (`sweep.Job`): a run
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

from . import cluster, results, stats, sweep
from .series import (
    BY,
    SERIES_FILE,
    STUDY,
    Series,
    bisect_parts,
    bisect_words,
    builds_of,
    check,
    command,
    interval_text,
    is_series,
    md,
    page,
    paired_effect,
    read_series,
    save_series,
    short,
)
from .stats import changepoints


def measure(s: Series, say: Callable[[str], None] = print,
            run_job: Callable[[sweep.Job, Path], dict] | None = None,
            scheduler: cluster.Access | None = None) -> dict[str, Path]:
    """Measure every build of `s` not yet measured (a completed run of its job under the
    series' runs folder): here one after another, or with `scheduler` as one Dask sweep over
    its benchmark hosts (`sweep.Sweep.run_on`: each build's run on one host, back here
    packed); the series' record is written after each. Returns build → run directory."""
    runs_dir = s.folder / "runs"
    jobs = {b: sweep.Job(STUDY, s.profile, s.parameters_of(s.reference, b)) for b in s.builds}
    done = sweep.completed(runs_dir, STUDY)
    out = {b: done[j.key] for b, j in jobs.items() if j.key in done}
    for i, b in enumerate(s.builds, 1):
        if b in out:
            say(f"build {i} of {len(s.builds)}: {b} — measured already ({out[b].name})")
    todo = [b for b in s.builds if b not in out]
    if scheduler and todo:
        swept = sweep.Sweep(STUDY, [jobs[b] for b in todo], runs_dir, s.folder / "sweeps", say=say)
        swept.run_on(scheduler)
        records = {r["key"]: r for r in swept.records}
        run_job = lambda job, where: records.get(job.key, {"status": "not run"})  # noqa: E731
    execute = run_job or (lambda job, where: sweep.execute(job, where, sweep=f"history-{s.name}"))
    failed = []
    for b in todo:
        if not scheduler:
            say(f"build {s.builds.index(b) + 1} of {len(s.builds)}: {b} against {s.reference} …")
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
        say(f"  {b}: {effect_words(effects_of(results.Run(out[b]), s.reference, b))}")
    save_series(s, {k: str(p) for k, p in out.items()})
    if failed:
        raise RuntimeError("; ".join(failed))
    return {b: out[b] for b in s.builds if b in out}


# ---------------------------------------------------------------- effects

def effects_of(run: results.Run, baseline: str, candidate: str) -> pd.DataFrame:
    """Per cell of one paired run: `candidate` against `baseline` — the mean log ratio of QPS
    over its pairs, its standard error, the pairs, and in % the effect and its 95 % interval."""
    steps = results.measured(run)
    labels = {a["flavour"]: a["label"] for a in run.metadata.get("arms", []) if a.get("flavour")}
    pairs = stats.pair_up(steps, by=BY, factor="arm", baseline=labels.get(baseline, baseline),
                          candidate=labels.get(candidate, candidate), value="qps", pair="pair")
    rows = [{"workload": cell[0], "threads": int(cell[1]), **paired_effect(g["d"])} for cell, g in pairs.groupby(BY)]
    return pd.DataFrame(rows, columns=[*BY, "log", "se", "pairs", "pct", "lo", "hi"])


def effect_words(e: pd.DataFrame) -> str:
    return "; ".join(f"{r.workload}@{r.threads} {interval_text(r.pct, r.lo, r.hi)} ({r.pairs} pairs)"
                     for r in e.itertuples()) or "no pairs"


def series_effects(s: Series, runs: Mapping[str, Path]) -> pd.DataFrame:
    """Every build's effects against the reference, in the series' order."""
    parts = [effects_of(results.Run(runs[b]), s.reference, b).assign(build=short(b), order=i)
             for i, b in enumerate(s.builds) if b in runs]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def changes(effects: pd.DataFrame, builds: Sequence[str]) -> dict:
    """`stats.changepoints.find` on the series' effects (builds × cells)."""
    cells = [f"{w}@{t}" for w, t in effects[BY].drop_duplicates().itertuples(index=False)]
    key = effects["workload"] + "@" + effects["threads"].astype(str)
    y = effects.assign(cell=key).pivot(index="build", columns="cell", values="log").loc[list(builds), cells]
    se = effects.assign(cell=key).pivot(index="build", columns="cell", values="se").loc[list(builds), cells]
    return changepoints.find(y.to_numpy(), se.to_numpy(), list(builds), cells)


def change_words(found: dict) -> list[str]:
    """The change points in words, kept ones first."""
    out = []
    for c in found["changes"]:
        sizes = "; ".join(f"{st['cell']} {interval_text(st['pct'], st['lo'], st['hi'])}" for st in c["steps"])
        if c["kept"]:
            out.append(f"**Between {c['after']} and {c['before']}**: {sizes} ({c['together']} "
                       f"cell{'s' if c['together'] != 1 else ''} moved together).")
        else:
            out.append(f"Between {c['after']} and {c['before']}: {sizes} — one cell alone moved beyond its "
                       "interval; not counted (a change must move two cells the same way).")
    if not any(c["kept"] for c in found["changes"]):
        out.insert(0, "**No change point**: no step between two builds stands out of the noise.")
    return out


# ---------------------------------------------------------------- report

def figure(effects: pd.DataFrame, found: dict, builds: Sequence[str]):
    """Every build's effect against the reference with its 95 % interval, a line per cell,
    the change points kept as dashed lines with their size."""
    from . import plots
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
                    color=colours[f"{w}@{t}"], label=f"{w}, {t} threads")
    ax.axhline(0, color="0.5", lw=0.8)
    for c in found["changes"]:
        if c["kept"]:
            ax.axvline(c["index"] - 0.5, color="0.2", ls="--", lw=1)
            st = c["steps"][0]
            ax.annotate(interval_text(st["pct"], st["lo"], st["hi"]), (c["index"] - 0.45, ax.get_ylim()[1]),
                        va="top", fontsize=9)
    ax.set_xticks(range(len(builds)), list(builds), rotation=30, ha="right")
    ax.set_ylabel("QPS against the reference, %")
    ax.set_title("Each build against the reference (95 % intervals); dashed: a change point")
    ax.legend(loc="lower left", fontsize=9)
    fig.dbstudies_alt = "effect of every build against the reference along the series, change points marked"
    return fig


def report(s: Series, runs: Mapping[str, Path]) -> Path:
    """The series' report: its figure, the effects of every build, the change points with their
    sizes, what could be seen where nothing changed, and how to reproduce it; with
    `effects.csv` beside it."""
    from . import plots
    effects = series_effects(s, runs)
    builds = [short(b) for b in s.builds if b in runs]
    s.folder.mkdir(parents=True, exist_ok=True)
    effects.to_csv(s.folder / "effects.csv", index=False)
    found = changes(effects, builds) if len(builds) >= 2 else {"changes": [], "quiet": [], "tau2": {}}
    fig = figure(effects, found, builds)
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110, bbox_inches="tight")
    plots.save(fig, s.folder / "figures", "effects")
    plots.plt.close(fig)
    table = effects.assign(cell=effects["workload"] + "@" + effects["threads"].astype(str),
                           effect=[f"{interval_text(p, a, b)} ({n})" for p, a, b, n in
                                   zip(effects["pct"], effects["lo"], effects["hi"], effects["pairs"])])
    wide = table.pivot(index="build", columns="cell", values="effect").loc[builds]
    quiet = pd.DataFrame([{"between": f"{q['after']} → {q['before']}",
                           **{c: f"no change detectable above {v:.1f} %" for c, v in q["mde_pct"].items()}}
                          for q in found["quiet"]])
    lines = change_words(found) + [x for x in [bisect_words(s.folder)] if x]
    parts = [f"<h1>History: {html.escape(s.name)}</h1>",
             f"<p>{len(builds)} builds against {html.escape(short(s.reference))} ({s.profile} profile; QPS, paired rounds; "
             "each cell: effect [95 % interval] (pairs)).</p>",
             "<ul>" + "".join(f"<li>{md(x)}</li>" for x in lines) + "</ul>",
             f"<img alt='{html.escape(fig.dbstudies_alt)}' src='data:image/png;base64,"
             f"{base64.b64encode(png.getvalue()).decode()}'/>",
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
    return page(s, parts)


def rewrite(folder: Path) -> Path:
    """The report of the series kept in `folder` written again: its history's effects and
    change points where it has measured runs, and its bisection where it has one."""
    s, runs = read_series(folder)
    return report(s, runs) if runs else page(s, [f"<h1>Bisection: {html.escape(s.name)}</h1>", *bisect_parts(folder)])


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
    runs = measure(s, say=lambda m: print(m, flush=True), scheduler=scheduler)
    found = changes(series_effects(s, runs), [short(b) for b in s.builds])
    for line in change_words(found):
        print(line.replace("**", ""))
    print(f"report: {report(s, runs)}")
    return 0
