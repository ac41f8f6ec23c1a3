"""Which build changed it: a series of server builds, each measured against one reference build
in the paired design, its change points, and a bisection that stops when it can tell
(`dbstudies history`, `dbstudies bisect`).

**A series** is an ordered list of builds (flavours: `env/servers/*.toml`, a flavour file, or a
build directory made one with `servers add`) and a reference build. Every build is one
ordinary run of the versions study with `flavours = [reference, build]` — paired rounds, the
history profile's precision target (`PROFILES`), the user's `-p` on top — so host drift
between days cancels in each build's effect. The runs are sweep jobs (`sweep.Job`): a run
that completed under the series' folder is never measured again (a series run again goes on
where it stopped), and their keys are what a Dask sweep over hosts would run. Per build and
cell the effect is the mean log ratio of its pairs with its standard error; the series' change
points are `stats.changepoints.find`'s.

**A bisection** takes a good build, a bad one and the builds between (in order): it measures
the midpoint against both ends in one paired run (three arms) until the precision target is
reached, says which side the midpoint is on (`side`) — or that it is in between, or that the
run could not tell — and goes on into that half. Each step's reason is kept in the series'
`bisect.json`; the end says "the change is between build X and build Y: −x % [a, b]".

Everything is written under `data/series/<name>/`: `series.json` (builds, reference,
parameters, the runs), the runs, `effects.csv`, `report.html` with its figure.
"""
from __future__ import annotations

import base64
import html
import io
import json
import math
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pandas as pd
import scipy.stats as sps

from . import checks, css, paths, results, stats, sweep
from .errors import ParamError
from .servers import load_flavour
from .stats import changepoints
from .study import load

STUDY = "versions"
SERIES_DIR = paths.DATA_DIR / "series"
BY = ["workload", "threads"]
# what the history's profiles change in the versions study's own (its cells, steps, target; the
# servers restarted every 10 rounds, not every round: each pair is measured back to back, so
# drift cancels without a restart, and a round takes 2 steps, not 2 starts and warm-ups):
# quick reaches QPS ±3 % per build, which finds a 5 % step between two builds in ≥ 80 % of
# series at this host's noise (tests/test_changepoints.py): ≈ 55 pairs of ≈ 10 s, so a budget
# of 12 min a build (a cell the time left cannot take to its target gets no more rounds at all)
PROFILES: dict[str, dict[str, Any]] = {
    "smoke": {"workloads": ["oltp_point_select"], "threads": [4], "repeats": 3, "duration": 1, "warmup": 0},
    "quick": {"workloads": ["oltp_point_select"], "threads": [16], "repeats": 6, "duration": 3,
              "target": {"qps": 0.03}, "budget": 12, "restart_every": 10},
    "full": {"workloads": ["oltp_point_select", "oltp_read_only"], "threads": [16, 64], "repeats": 8,
             "duration": 10, "target": {"qps": 0.015}, "budget": 40, "restart_every": 10},
}


@dataclass(frozen=True)
class Series:
    """A series as `series.json` keeps it."""
    name: str
    reference: str
    builds: tuple[str, ...]
    profile: str
    parameters: Mapping[str, Any]

    @property
    def folder(self) -> Path:
        return SERIES_DIR / self.name

    def job(self, *flavours: str) -> sweep.Job:
        """The run that measures `flavours` (the first the baseline) at the series' parameters."""
        return sweep.Job(STUDY, self.profile, {**PROFILES[self.profile], **self.parameters,
                                               "flavour": flavours[0], "flavours": list(flavours)})


def short(build: str) -> str:
    """A build as a report names it: a flavour file by its stem.

    >>> short("/tmp/series/b5.toml"), short("mariadb-11.8")
    ('b5', 'mariadb-11.8')
    """
    return Path(build).stem if str(build).endswith(".toml") else str(build)


def read_order(builds: Sequence[str] | None, order: Path | None) -> list[str]:
    """The builds in order: as given, or one a line from `order` (blank lines and # comments
    skipped)."""
    if order is not None:
        try:
            lines = Path(order).read_text().splitlines()
        except OSError as e:
            raise ParamError([f"--order {order}: {e.strerror or e}"]) from None
        return [x.split("#")[0].strip() for x in lines if x.split("#")[0].strip()]
    return list(builds or [])


def check(reference: str, builds: Sequence[str], profile: str, parameters: Mapping[str, Any],
          *, least: int = 2, what: str = "a series") -> None:
    """Every problem of a series before anything starts, one line each (ParamError): fewer
    than `least` builds, a build named twice or the reference among them, a build that is no
    flavour, whose server does not run (`--version`) or refuses its settings
    (`servers.bad_values` through the study's own checks), parameters the study refuses."""
    problems = []
    if profile not in PROFILES:
        problems.append(f"profile: {profile!r} is none of {', '.join(PROFILES)}")
    if len(builds) < least:
        problems.append(f"{what} needs at least {least} builds (got {len(builds)}: {', '.join(builds) or 'none'})")
    twice = sorted({b for b in builds if list(builds).count(b) > 1})
    if twice:
        problems.append(f"builds named more than once: {', '.join(twice)}")
    if reference in builds:
        problems.append(f"the reference {reference} is also a build of the series: name it once, as the reference")
    for name in dict.fromkeys([reference, *builds]):
        try:
            f = load_flavour(name)
        except Exception as e:  # noqa: BLE001 — a ConfigError, said in one line
            problems.append(f"{name}: {e}")
            continue
        if f.source in ("system", "dir") and f.host_binary.exists() and f.detected is None:
            problems.append(f"{short(name)}: its server does not run: `{f.server} --version` names no "
                            "MariaDB or MySQL version")
    if problems:
        raise ParamError(problems)
    study, seen = load(STUDY), set()
    for build in builds:
        job = Series("", reference, tuple(builds), profile, parameters).job(reference, build)
        try:
            checks.resolve(study, profile if profile in study.PROFILES else "quick", **job.parameters)
        except ParamError as e:
            problems += [m for m in e.problems if m not in seen and not seen.add(m)]
    if problems:
        raise ParamError(problems)


def load_series(name: str) -> Series:
    doc = json.loads((SERIES_DIR / name / "series.json").read_text())
    return Series(doc["name"], doc["reference"], tuple(doc["builds"]), doc["profile"], doc["parameters"])


def save_series(s: Series, runs: Mapping[str, str], extra: Mapping[str, Any] | None = None) -> None:
    s.folder.mkdir(parents=True, exist_ok=True)
    path = s.folder / "series.json"
    old = json.loads(path.read_text()) if path.exists() else {}
    doc = {**old, "name": s.name, "reference": s.reference, "builds": list(s.builds), "profile": s.profile,
           "parameters": dict(s.parameters), "runs": {**old.get("runs", {}), **runs}, **(extra or {})}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


def measure(s: Series, say: Callable[[str], None] = print,
            run_job: Callable[[sweep.Job, Path], dict] | None = None) -> dict[str, Path]:
    """Measure every build of `s` not yet measured (a completed run of its job under the
    series' runs folder), one after another; the series' record is written after each. Returns
    build → run directory."""
    runs_dir = s.folder / "runs"
    done = sweep.completed(runs_dir, STUDY)
    execute = run_job or (lambda job, where: sweep.execute(job, where, sweep=f"history-{s.name}"))
    out = {}
    for i, build in enumerate(s.builds, 1):
        job = s.job(s.reference, build)
        if job.key in done:
            say(f"build {i} of {len(s.builds)}: {build} — measured already ({done[job.key].name})")
            out[build] = done[job.key]
            continue
        say(f"build {i} of {len(s.builds)}: {build} against {s.reference} …")
        record = execute(job, runs_dir)
        if record.get("status") != "complete":
            save_series(s, {b: str(p) for b, p in out.items()})
            raise RuntimeError(f"{build}: its run ended {record.get('status')}: {record.get('error') or ''} "
                               f"({record.get('run_dir') or 'no run directory'})")
        out[build] = Path(record["run_dir"])
        save_series(s, {b: str(p) for b, p in out.items()})
        say(f"  {build}: {effect_words(effects_of(results.Run(out[build]), s.reference, build))}")
    return out


# ---------------------------------------------------------------- effects

def effects_of(run: results.Run, baseline: str, candidate: str) -> pd.DataFrame:
    """Per cell of one paired run: `candidate` against `baseline` — the mean log ratio of QPS
    over its pairs, its standard error, the pairs, and in % the effect and its 95 % interval."""
    steps = results.measured(run)
    labels = {a["flavour"]: a["label"] for a in run.metadata.get("arms", []) if a.get("flavour")}
    pairs = stats.pair_up(steps, by=BY, factor="arm", baseline=labels.get(baseline, baseline),
                          candidate=labels.get(candidate, candidate), value="qps", pair="pair")
    rows = []
    for cell, g in pairs.groupby(BY):
        n, d = len(g), g["d"].to_numpy()
        se = d.std(ddof=1) / math.sqrt(n) if n > 1 else math.nan
        t = sps.t.ppf(0.975, n - 1) if n > 1 else math.nan
        rows.append({"workload": cell[0], "threads": int(cell[1]), "log": d.mean(), "se": se, "pairs": n,
                     "pct": math.expm1(d.mean()) * 100, "lo": math.expm1(d.mean() - t * se) * 100,
                     "hi": math.expm1(d.mean() + t * se) * 100})
    return pd.DataFrame(rows, columns=[*BY, "log", "se", "pairs", "pct", "lo", "hi"])


def _interval(pct: float, lo: float, hi: float) -> str:
    """An effect and its interval in %, with minus signs.

    >>> _interval(-31.46, -35.4, -27.4)
    '−31.5 % [−35.4, −27.4]'
    """
    return f"{pct:+.1f} % [{lo:+.1f}, {hi:+.1f}]".replace("-", "−")


def effect_words(e: pd.DataFrame) -> str:
    return "; ".join(f"{r.workload}@{r.threads} {_interval(r.pct, r.lo, r.hi)} ({r.pairs} pairs)"
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
        sizes = "; ".join(f"{st['cell']} {_interval(st['pct'], st['lo'], st['hi'])}" for st in c["steps"])
        if c["kept"]:
            out.append(f"**Between {c['after']} and {c['before']}**: {sizes} ({c['together']} "
                       f"cell{'s' if c['together'] != 1 else ''} moved together).")
        else:
            out.append(f"Between {c['after']} and {c['before']}: {sizes} — one cell alone moved beyond its "
                       "interval; not counted (a change must move two cells the same way).")
    if not any(c["kept"] for c in found["changes"]):
        out.insert(0, "**No change point**: no step between two builds stands out of the noise.")
    return out


# ---------------------------------------------------------------- bisection

SIDES = ("good", "bad", "between", "undecided", "no change")


def side(pairs: pd.DataFrame, good: str, mid: str, bad: str) -> tuple[str, str, dict]:
    """Which side of the change `mid` is on, from one paired run of the three (`pairs`: its
    measured steps, one cell): bad against good must have changed (its 95 % interval excludes
    0, else "no change"); mid is "good" when mid against good is within its interval and mid
    against bad is not, "bad" the other way round, "between" when it differs from both, else
    "undecided". Returns (side, the reason in words, the three effects)."""
    def eff(base: str, cand: str) -> dict:
        p = stats.pair_up(pairs, by=BY, factor="arm", baseline=base, candidate=cand, value="qps", pair="pair")
        n, d = len(p), p["d"].to_numpy()
        if n < 2:
            return {"pct": math.nan, "lo": math.nan, "hi": math.nan, "pairs": n, "moved": False}
        se, t = d.std(ddof=1) / math.sqrt(n), sps.t.ppf(0.975, n - 1)
        lo, hi = d.mean() - t * se, d.mean() + t * se
        return {"pct": math.expm1(d.mean()) * 100, "lo": math.expm1(lo) * 100, "hi": math.expm1(hi) * 100,
                "pairs": n, "moved": bool(lo > 0 or hi < 0)}
    e = {"bad vs good": eff(good, bad), "mid vs good": eff(good, mid), "mid vs bad": eff(bad, mid)}

    def said(k: str) -> str:
        x = e[k]
        return f"{mid if k.startswith('mid') else bad} against {good if k.endswith('good') else bad} " \
               f"{_interval(x['pct'], x['lo'], x['hi'])}"
    if not e["bad vs good"]["moved"]:
        return "no change", f"{said('bad vs good')}: the ends do not differ beyond the interval", e
    mg, mb = e["mid vs good"]["moved"], e["mid vs bad"]["moved"]
    if not mg and mb:
        return "good", f"{said('mid vs good')} (no change), {said('mid vs bad')}: {mid} is like {good}", e
    if mg and not mb:
        return "bad", f"{said('mid vs bad')} (no change), {said('mid vs good')}: {mid} is like {bad}", e
    if mg and mb:
        return "between", f"{said('mid vs good')} and {said('mid vs bad')}: {mid} differs from both", e
    return "undecided", f"{said('mid vs good')}, {said('mid vs bad')}: neither interval tells", e


def bisect(s: Series, good: str, bad: str, say: Callable[[str], None] = print,
           measure_three: Callable[[str, str, str], pd.DataFrame] | None = None) -> dict:
    """Bisect the builds of `s` from `good` to `bad` (both in its order): each step measures
    the midpoint against both ends (`measure_three`: its measured steps; default a paired run
    of the three under the series' folder) and moves by `side`, until the two are neighbours —
    or a step is "between", "undecided" or finds "no change". Returns the path (each step:
    the three builds, the side, why, the run) and the end in words; kept in `bisect.json`."""
    order = list(s.builds)
    lo, hi = order.index(good), order.index(bad)
    path, last = [], None
    run_three = measure_three or (lambda g, m, b: _three(s, g, m, b, say))
    while hi - lo > 1:
        mid = (lo + hi) // 2
        g, m, b = order[lo], order[mid], order[hi]
        say(f"bisect: {short(m)} between {short(g)} and {short(b)} …")
        steps = run_three(g, m, b)  # its arms named as `short` names them
        verdict, why, e = side(steps, short(g), short(m), short(b))
        path.append({"good": short(g), "mid": short(m), "bad": short(b), "side": verdict, "why": why, "effects": e,
                     "run": steps.attrs.get("run"), "at": (lo, mid, hi)})
        say(f"  {verdict}: {why}")
        _save_bisect(s, path)
        last = (steps, short(g), short(m), short(b), verdict)
        if verdict == "good":
            lo = mid
        elif verdict == "bad":
            hi = mid
        else:
            break
    end = _end(path, last, short(order[lo]), short(order[hi]))
    _save_bisect(s, path, end)
    return {"path": path, "end": end, "measured": [short(order[i]) for i in sorted({i for p in path for i in p["at"]})]}


def _end(path: list[dict], last: Any, lo: str, hi: str) -> str:
    if not path:
        return f"{lo} and {hi} are neighbours: nothing to bisect"
    verdict = path[-1]["side"]
    if verdict in ("no change", "between", "undecided"):
        return f"stopped at {path[-1]['mid']}: {verdict} — {path[-1]['why']}"
    steps, g, m, b, _ = last
    x, y = (m, b) if verdict == "good" else (g, m)
    e = side(steps, x, y, y)[2]["bad vs good"]  # the neighbours' own step, from the last run
    return f"the change is between build {x} and build {y}: {_interval(e['pct'], e['lo'], e['hi'])}"


def _three(s: Series, good: str, mid: str, bad: str, say: Callable[[str], None]) -> pd.DataFrame:
    runs_dir = s.folder / "runs"
    job = s.job(good, mid, bad)
    done = sweep.completed(runs_dir, STUDY)
    if job.key in done:
        run = results.Run(done[job.key])
    else:
        record = sweep.execute(job, runs_dir, sweep=f"bisect-{s.name}")
        if record.get("status") != "complete":
            raise RuntimeError(f"bisect {good}/{mid}/{bad}: its run ended {record.get('status')}")
        run = results.Run(record["run_dir"])
    steps = results.measured(run)
    labels = {a["label"]: short(a.get("flavour") or a["label"]) for a in run.metadata.get("arms", [])}
    steps = steps.assign(arm=steps["arm"].map(lambda a: labels.get(a, a)))
    steps.attrs["run"] = str(run.path)
    return steps


def _save_bisect(s: Series, path: list[dict], end: str | None = None) -> None:
    s.folder.mkdir(parents=True, exist_ok=True)
    (s.folder / "bisect.json").write_text(json.dumps({"path": path, "end": end}, indent=1, default=str) + "\n")


# ---------------------------------------------------------------- report

def figure(effects: pd.DataFrame, found: dict, builds: Sequence[str]):
    """Every build's effect against the reference with its 95 % interval, a line per cell,
    the change points kept as dashed lines with their size."""
    from . import plots
    fig, ax = plots.plt.subplots(figsize=(min(plots.MAX_W, 1.1 * len(builds) + 3), 4.2))
    cells = effects[BY].drop_duplicates().itertuples(index=False)
    colours = plots.palette([f"{w}@{t}" for w, t in effects[BY].drop_duplicates().itertuples(index=False)])
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
            ax.annotate(_interval(st["pct"], st["lo"], st["hi"]), (c["index"] - 0.45, ax.get_ylim()[1]),
                        va="top", fontsize=9)
    ax.set_xticks(range(len(builds)), list(builds), rotation=30, ha="right")
    ax.set_ylabel("QPS against the reference, %")
    ax.set_title("Each build against the reference (95 % intervals); dashed: a change point")
    ax.legend(loc="lower left", fontsize=9)
    fig.dbstudies_alt = "effect of every build against the reference along the series, change points marked"
    return fig


def report(s: Series, runs: Mapping[str, Path], bisected: dict | None = None) -> Path:
    """The series' report: its figure, the effects of every build, the change points with their
    sizes, what could be seen where nothing changed, the bisection's path, and how to
    reproduce it; with `effects.csv` beside it."""
    from . import plots
    effects = series_effects(s, runs)
    builds = [short(b) for b in s.builds if b in runs]
    s.folder.mkdir(parents=True, exist_ok=True)
    if effects.empty:  # a bisection alone: its path
        return _page(s, [f"<h1>Bisection: {html.escape(s.name)}</h1>", *_bisected(s, bisected),
                         f"<p>The runs: {html.escape(str(s.folder / 'runs'))}; each step in bisect.json.</p>"])
    effects.to_csv(s.folder / "effects.csv", index=False)
    found = changes(effects, builds) if len(builds) >= 2 else {"changes": [], "quiet": [], "tau2": {}}
    fig = figure(effects, found, builds)
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110, bbox_inches="tight")
    plots.save(fig, s.folder / "figures", "effects")
    plots.plt.close(fig)
    table = effects.assign(cell=effects["workload"] + "@" + effects["threads"].astype(str),
                           effect=[f"{_interval(p, a, b)} ({n})" for p, a, b, n in
                                   zip(effects["pct"], effects["lo"], effects["hi"], effects["pairs"])])
    wide = table.pivot(index="build", columns="cell", values="effect").loc[builds]
    quiet = pd.DataFrame([{"between": f"{q['after']} → {q['before']}",
                           **{c: f"no change detectable above {v:.1f} %" for c, v in q["mde_pct"].items()}}
                          for q in found["quiet"]])
    lines = change_words(found)
    parts = [f"<h1>History: {html.escape(s.name)}</h1>",
             f"<p>{len(builds)} builds against {html.escape(short(s.reference))} ({s.profile} profile; QPS, paired rounds; "
             "each cell: effect [95 % interval] (pairs)).</p>",
             "<ul>" + "".join(f"<li>{_md(x)}</li>" for x in lines) + "</ul>",
             f"<img alt='{html.escape(fig.dbstudies_alt)}' src='data:image/png;base64,"
             f"{base64.b64encode(png.getvalue()).decode()}'/>",
             "<h2>Every build against the reference</h2>", wide.to_html(classes="dbs-table"),
             "<h2>Where nothing changed</h2>",
             "<p>The smallest step each place between two builds would have shown (80 % power, the series' "
             "false-alarm rate held at 5 %).</p>" + (quiet.to_html(classes="dbs-table", index=False) if len(quiet) else ""),
             f"<p>Spread between runs beyond their own intervals (τ, log): "
             f"{', '.join(f'{c} {math.sqrt(v):.3f}' for c, v in found['tau2'].items())}.</p>"]
    parts += _bisected(s, bisected)
    argv = " ".join(["dbstudies history", "--name", s.name, "--reference", shlex.quote(s.reference), "--profile",
                     s.profile, *[x for k, v in s.parameters.items()
                                  for x in ("-p", k, shlex.quote(v if isinstance(v, str) else json.dumps(v)))],
                     "--builds", *map(shlex.quote, s.builds)])
    parts += ["<h2>To reproduce</h2><pre style='white-space: pre-wrap'>" + html.escape(argv) + "\n" + "\n".join(
        f"dbstudies pack {html.escape(str(runs[b]))}" for b in s.builds if b in runs) + "</pre>"]
    return _page(s, parts)


def _bisected(s: Series, bisected: dict | None) -> list[str]:
    """A bisection's end and path as report parts ([] without one)."""
    if not bisected:
        return []
    rows = pd.DataFrame([{"good": p["good"], "midpoint": p["mid"], "bad": p["bad"], "side": p["side"],
                          "why": p["why"], "run": Path(p["run"]).name if p["run"] else "–"} for p in bisected["path"]])
    return ["<h2>Bisection</h2>", f"<p><b>{html.escape(bisected['end'])}</b> — {len(bisected['measured'])} of "
            f"{len(s.builds)} builds measured.</p>", rows.to_html(classes="dbs-table", index=False) if len(rows) else ""]


def _page(s: Series, parts: list[str]) -> Path:
    out = s.folder / "report.html"
    out.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>History {html.escape(s.name)}</title>"
                   f"{css.STYLE}</head><body class='dbs-header'>" + "\n".join(parts) + "</body></html>\n")
    return out


def _md(text: str) -> str:
    """**bold** as <b>, the rest escaped."""
    bits = html.escape(text).split("**")
    return "".join(f"<b>{b}</b>" if i % 2 else b for i, b in enumerate(bits))


def main(name: str, reference: str, builds: Sequence[str], profile: str, parameters: Mapping[str, Any],
         good: str | None = None, bad: str | None = None) -> int:
    """`dbstudies history` (no `good`/`bad`) or `dbstudies bisect`: check everything, then
    measure, analyse and write the report."""
    if good or bad:
        if not (good and bad):
            raise ParamError(["bisect: name both ends (--good and --bad)"])
        missing = [x for x in (good, bad) if x not in builds]
        if missing:
            raise ParamError([f"bisect: {x} is not among the builds in order" for x in missing])
        inner = list(builds)[list(builds).index(good):list(builds).index(bad) + 1]
        if len(inner) < 2:
            raise ParamError([f"bisect: {good} must come before {bad} in the order"])
        check(good, inner[1:], profile, parameters, least=1, what="a bisection")
        s = Series(name, good, tuple(inner), profile, dict(parameters))
        save_series(s, {})
        done = bisect(s, good, bad, say=lambda m: print(m, flush=True))
        print(done["end"])
        print(f"{len(done['measured'])} of {len(inner)} builds measured; report: {report(s, {}, done)}")
        return 0
    check(reference, builds, profile, parameters)
    s = Series(name, reference, tuple(builds), profile, dict(parameters))
    save_series(s, {})
    runs = measure(s, say=lambda m: print(m, flush=True))
    found = changes(series_effects(s, runs), [short(b) for b in s.builds])
    for line in change_words(found):
        print(line.replace("**", ""))
    print(f"report: {report(s, runs)}")
    return 0

