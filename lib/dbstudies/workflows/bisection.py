"""A bisection that stops when it can tell (`dbstudies bisect`): between a good and a bad build,
in their order, measure the midpoint against both ends in one paired run (three arms, the
series' profile and parameters: `series.Series.parameters_of`) and say which side it is on (`side`) —
or that it is in between, that the run could not tell, or that the ends do not differ — then go
on into that half until the two are neighbours: "the change is between build X and build Y:
−x % [a, b]". A noise-aware `git bisect` over builds. Each step's reason is kept in the
series' `bisect.json` (`series.save_bisect`), which the series' report shows (`history.rewrite`, after
`dbstudies bisect`: with the history's effects where the folder holds one); a run that completed
is never measured again.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from .. import stats
from ..core.errors import ParamError
from ..stats import paired_effect
from ..store import results
from . import grid, sweep
from .series import (
    QPS,
    STUDY,
    Metric,
    Series,
    builds_of,
    check,
    command,
    interval_text,
    is_series,
    save_bisect,
    save_series,
    short,
)


def side(pairs: pd.DataFrame, good: str, mid: str, bad: str, metric: Metric = QPS) -> tuple[str, str, dict]:
    """Which side of the change `mid` is on, from one paired run of the three (`pairs`: its
    measured steps; with several cells, their pairs taken together), by the series' `metric`
    (QPS, or instructions per transaction): bad against good must have changed (its 95 % interval excludes
    0; else "no change" when the whole interval lies within ±`metric.same`, and "undecided" when it is
    wider: the ends could still differ); mid is "good" when mid against good is within its interval and mid
    against bad is not, "bad" the other way round, "between" when it differs from both, else
    "undecided". Returns (side, the reason in words, the three effects)."""
    def eff(base: str, cand: str) -> dict:
        d = stats.pair_up(pairs, by=metric.by, factor="arm", baseline=base, candidate=cand, value=metric.column, pair="pair")["d"]
        x = paired_effect(d)
        return {**x, "moved": bool(x["lo"] > 0 or x["hi"] < 0)}  # NaN below two pairs: never moved
    e = {"bad vs good": eff(good, bad), "mid vs good": eff(good, mid), "mid vs bad": eff(bad, mid)}

    def said(k: str) -> str:
        x = e[k]
        return f"{mid if k.startswith('mid') else bad} against {good if k.endswith('good') else bad} " \
               f"{interval_text(x['pct'], x['lo'], x['hi'], metric.digits)}"
    same = metric.same
    if not e["bad vs good"]["moved"]:
        x = e["bad vs good"]
        if max(abs(x["lo"]), abs(x["hi"])) <= same * 100:  # NaN (too few pairs): not the same
            return "no change", f"{said('bad vs good')}: the ends are the same within ±{same:.0%}", e
        return "undecided", (f"{said('bad vs good')}: the ends may differ by as much as the interval "
                             f"allows — too wide to call them the same (±{same:.0%}); measure them with more pairs"), e
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
        verdict, why, e = side(steps, short(g), short(m), short(b), s.metric)
        path.append({"good": short(g), "mid": short(m), "bad": short(b), "side": verdict, "why": why, "effects": e,
                     "run": steps.attrs.get("run"), "at": (lo, mid, hi)})
        say(f"  {verdict}: {why}")
        save_bisect(s, {"path": path, "end": None})
        last = (steps, short(g), short(m), short(b), verdict)
        if verdict == "good":
            lo = mid
        elif verdict == "bad":
            hi = mid
        else:
            break
    end = _end(path, last, short(order[lo]), short(order[hi]), s.metric)
    done = {"path": path, "end": end, "measured": [short(order[i]) for i in sorted({i for p in path for i in p["at"]})]}
    save_bisect(s, done)
    return done


def _end(path: list[dict], last: Any, lo: str, hi: str, metric: Metric = QPS) -> str:
    if not path:
        return f"{lo} and {hi} are neighbours: nothing to bisect"
    verdict = path[-1]["side"]
    if verdict in ("no change", "between", "undecided"):
        return f"stopped at {path[-1]['mid']}: {verdict} — {path[-1]['why']}"
    steps, g, m, b, _ = last
    x, y = (m, b) if verdict == "good" else (g, m)
    e = side(steps, x, y, y, metric)[2]["bad vs good"]  # the neighbours' own step, from the last run
    return f"the change is between build {x} and build {y}: {interval_text(e['pct'], e['lo'], e['hi'], metric.digits)}"


def _three(s: Series, good: str, mid: str, bad: str, say: Callable[[str], None]) -> pd.DataFrame:
    runs_dir = s.folder / "runs"
    job = grid.Job(STUDY, s.profile, s.parameters_of(good, mid, bad))
    done = sweep.completed(runs_dir, STUDY)
    if job.key in done:
        run = results.Run(done[job.key])
    else:
        record = sweep.execute(job, runs_dir, sweep=f"bisect-{s.name}")
        if record.get("status") != "complete":
            raise RuntimeError(f"bisect {good}/{mid}/{bad}: its run ended {record.get('status')}")
        run = results.Run(record["run_dir"])
    steps = results.measured(run)
    labels = {a.label: short(a.flavour or a.label) for a in run.record.arms}
    steps = steps.assign(arm=steps["arm"].map(lambda a: labels.get(a, a)))
    steps.attrs["run"] = str(run.path)
    return steps


def main(name: str, profile: str, parameters: Mapping[str, Any], good: str, bad: str, *,
         builds: Sequence[str] | None = None, order: str | Path | None = None, folder: Path | None = None) -> int:
    """`dbstudies bisect`: the builds in order (`series.builds_of`; the ends named as given or
    as the report names them), both ends and the builds between checked, bisect (the command line
then writes the report: `history.rewrite`)."""
    with builds_of(name, folder, order, builds) as builds:
        named = {**{short(b): b for b in builds}, **{b: b for b in builds}}
        missing = [x for x in (good, bad) if x not in named]
        if missing:
            raise ParamError([f"bisect: {x} is not among the builds in order" for x in missing])
        good, bad = named[good], named[bad]
        inner = list(builds)[list(builds).index(good):list(builds).index(bad) + 1]
        if len(inner) < 2:
            raise ParamError([f"bisect: {short(good)} must come before {short(bad)} in the order"])
        check(good, inner[1:], profile, parameters, least=1, what="a bisection")
    s = Series(name, good, tuple(inner), profile, dict(parameters))
    if not is_series(s.folder):  # a history's folder keeps its own record; the bisection has bisect.json
        save_series(s, {})
    save_bisect(s, {"path": [], "end": None, "measured": [], "builds": [short(b) for b in inner],
                    "argv": command("bisect", s, good=short(good), bad=short(bad), folder=folder, order=order)},
                fresh=True)
    done = bisect(s, good, bad, say=lambda m: print(m, flush=True))
    print(done["end"])
    print(f"{len(done['measured'])} of {len(inner)} builds measured")
    return 0
