"""A series of server builds, ordered, and one reference build: what `dbstudies history` and
`dbstudies bisect` share — the builds checked before anything starts (`check`), the run that
measures some of them (`Series.parameters_of`: an ordinary paired run of the versions study at the
history profile's precision, a sweep job whose key finds it again), the series' record
(`series.json`); its statistic is `stats.paired_effect`, its page `report.render.page`.
"""
from __future__ import annotations

import contextlib
import html
import json
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import pandas as pd

from ..core import paths
from ..core.comparisons import SYSBENCH, Comparison, by_key, primary
from ..core.errors import ConfigError, ParamError
from ..kit.study import load
from ..measure import checks
from ..report.render import inline_html
from ..servers import Flavour, dir_flavour, dir_flavour_text, load_flavour
from ..stats import THRESHOLD
from ..store import params as P

STUDY = "versions"
SERIES_DIR = paths.DATA_DIR / "series"
SERIES_FILE = "series.json"   # in a series' folder: its builds, reference, parameters and runs
BISECT_FILE = "bisect.json"   # … and a bisection's builds, path, end and command
# the history's profiles: an overlay of the versions study's own (its `Params` fields: a test holds
# it), what each changes there (its cells, steps, target; the
# servers restarted every 10 rounds, not every round: each pair is measured back to back, so
# drift cancels without a restart, and a round takes 2 steps, not 2 starts and warm-ups). A
# target is an MDE (80 % power): quick's 4 % is a standard error of 1.4 % per build (±2.8 %),
# which finds a 5 % step between two builds in ≥ 80 % of series (tests/test_changepoints.py);
# at this host's paired spread of 0.10–0.15 that is 53–105 pairs of ≈ 7.5 s. The first 48
# pairs are always measured (≈ 6 min): a cell the rest of the budget cannot take to its target
# gets no more rounds (`precision.fund`), and on a noisy day (spread 0.17–0.2, measured here)
# a build that stopped after 13 first pairs said nothing; 48 are what the live series used
# "count": by the server's instructions per transaction (the versions study's own count
# profile, 1 client thread, windows of 3,000 transactions under callgrind): its windows differ
# by 0.02–0.03 % (SD) here, so 4 rounds a build give an interval of about ±0.05 %, and a build
# takes ≈ 1 min — a series of 8 in ≈ 10 (no A/A arm: the series' spread between runs is its own)
PROFILES: dict[str, dict[str, Any]] = {
    "smoke": {"workloads": ["oltp_point_select"], "threads": [4], "repeats": 3, "duration": 1, "warmup": 0},
    "count": {"repeats": 4, "aa_control": False},
    "quick": {"workloads": ["oltp_point_select"], "threads": [16], "repeats": 48, "duration": 3,
              "target": {"qps": 0.04}, "budget": 15, "restart_every": 10},
    "full": {"workloads": ["oltp_point_select", "oltp_read_only"], "threads": [16], "repeats": 48,
             "duration": 3, "target": {"qps": 0.03}, "budget": 60, "restart_every": 10},
}


@dataclass(frozen=True)
class Metric:
    """What a series compares its builds by: the versions study's primary comparison at the
    series' parameters (a `Comparison`: QPS; a count's instructions per transaction) — its
    column, name and cells —, and the ± band inside which a bisection calls its ends the same
    (the parameters' draw threshold: a band under 1 % gives its effects two decimals)."""
    comparison: Comparison
    same: float

    @property
    def column(self) -> str:
        return self.comparison.column

    @property
    def name(self) -> str:
        return self.comparison.short

    @property
    def by(self) -> list[str]:
        return list(self.comparison.by)

    @property
    def digits(self) -> int:
        return 2 if self.same < 0.01 else 1


QPS = Metric(by_key(SYSBENCH, "qps"), THRESHOLD)  # a series' default: the versions study's throughput


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

    def parameters_of(self, *flavours: str) -> dict[str, Any]:
        """The versions-study parameters of the run that measures `flavours` (the first the
        baseline) at the series' profile and parameters — a `grid.Job`'s, whose key finds
        the run again."""
        return {**PROFILES[self.profile], **self.parameters, "flavour": flavours[0], "flavours": list(flavours)}

    @property
    def params(self) -> Any:
        """The versions study's parameters of its runs, typed: the study's profile of that name
        (else quick) under the history's overlay (`PROFILES`) and the series' parameters — read,
        not checked (`check` checks each build's run before anything starts)."""
        study = load(STUDY)
        base = self.profile if self.profile in study.PROFILES else "quick"
        return P.recorded(study.Params, study.PROFILES, {"profile": base, **PROFILES.get(self.profile, {}),
                                                         **self.parameters})

    @property
    def metric(self) -> Metric:
        """Its runs' primary comparison (instructions per transaction where they count: the
        count profile, or `-p count N`; else QPS) and their draw threshold."""
        p = self.params
        return Metric(primary(p.COMPARISONS), p.draw_threshold)


def short(build: str) -> str:
    """A build as a report names it: a flavour file by its stem.

    >>> short("/tmp/series/b5.toml"), short("mariadb-11.8")
    ('b5', 'mariadb-11.8')
    """
    return Path(build).stem if str(build).endswith(".toml") else str(build)


def read_order(builds: Sequence[str] | None, order: str | Path | None) -> list[str]:
    """The builds in order: as given, or one a line from the file `order` (blank lines and
    # comments skipped)."""
    if str(order) in ORDERS:
        raise ParamError([f"--order {order} sorts the builds of a folder: give it with --from-dir"])
    if order is not None:
        try:
            lines = Path(order).read_text().splitlines()
        except OSError as e:
            raise ParamError([f"--order {order}: {e.strerror or e}"]) from None
        return [x.split("#")[0].strip() for x in lines if x.split("#")[0].strip()]
    return list(builds or [])


# how a folder of builds is ordered without an order file: by the version each binary prints
# (then by name), or by name alone, digits as numbers (b2 before b10)
ORDERS = ("version", "name")


def _natural(name: str) -> list:
    """A name's sort key, its digits as a number.

    >>> sorted(["b10", "b2", "a"], key=_natural)
    ['a', 'b2', 'b10']
    """
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def detect_folder(folder: Path, order: str | Path, also: Sequence[str] = ()) -> dict[str, Flavour]:
    """A folder of build prefixes (each subfolder a server directory: release tarball,
    install prefix or build tree) as flavours named by their subfolders, in `order`: "version",
    "name", or a file naming the subfolders one a line (then only those, and the subfolders
    `also` names, are builds). Everything is detected in memory; every problem is one line
    (ParamError): no such folder, an order file naming a missing subfolder, a subfolder that
    is no runnable server or whose name cannot be a flavour's."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ParamError([f"--from-dir {folder}: no such folder"])
    subs = sorted((d.name for d in folder.iterdir() if d.is_dir() and not d.name.startswith(".")), key=_natural)
    problems: list[str] = []
    if str(order) in ORDERS:
        names = subs
    else:
        names = read_order(None, order)
        problems += [f"--order {order} names {n}, which is no subfolder of {folder}" for n in names if n not in subs]
        names = [n for n in dict.fromkeys([*names, *(a for a in also if a in subs)]) if n in subs]
    found = {}
    for n in names:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", n):
            problems.append(f"{folder / n}: a build's name (its subfolder's) takes letters, digits, '.', '_' and '-' only")
            continue
        try:
            found[n] = dir_flavour(n, folder / n)
        except ConfigError as e:
            problems.append(f"{folder / n}: {e}")
    if not names:
        problems.append(f"--from-dir {folder}: no subfolders to measure")
    if problems:
        raise ParamError(problems)
    if str(order) == "version":
        return dict(sorted(found.items(), key=lambda kv: (kv[1].detected.version, _natural(kv[0]))))
    return found


@contextlib.contextmanager
def builds_of(name: str, folder: Path | None, order: str | Path | None, builds: Sequence[str] | None,
              also: Sequence[str] = ()) -> Iterator[list[str]]:
    """The series' builds in order: as given, from an order file, or a folder's subfolders
    (`detect_folder`) written as flavour files under data/series/NAME/builds/. When the block
    raises (a check that fails), the files and folders it wrote are removed: nothing
    half-written."""
    if builds and (folder is not None or (order is not None and str(order) not in ORDERS)):
        raise ParamError([f"--builds and {'--from-dir' if folder is not None else '--order'}: "
                          "name the builds one way"])
    if folder is None:
        yield read_order(builds, order)
        return
    found = detect_folder(folder, order or "version", also)
    where = SERIES_DIR / name / "builds"
    made = [d for d in (where.parent, where) if not d.exists()]
    where.mkdir(parents=True, exist_ok=True)
    files = {n: where / f"{n}.toml" for n in found}
    new = [f for f in files.values() if not f.exists()]
    for n, f in found.items():
        files[n].write_text(dir_flavour_text(f, f"dbstudies history --from-dir {folder}"))
    try:
        yield [str(p) for p in files.values()]
    except BaseException:
        for f in new:
            f.unlink(missing_ok=True)
        for d in reversed(made):
            shutil.rmtree(d, ignore_errors=True)
        raise


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
        except Exception as e:  # noqa: BLE001 — a ConfigError, said in one line (naming its file once)
            problems.append(str(e) if str(e).startswith(str(name)) else f"{name}: {e}")
            continue
        if f.source in ("system", "dir") and f.host_binary.exists() and f.detected is None:
            problems.append(f"{short(name)}: its server does not run: `{f.server} --version` names no "
                            "MariaDB or MySQL version")
    if problems:
        raise ParamError(problems)
    study, seen = load(STUDY), set()
    for build in builds:
        asked = Series("", reference, tuple(builds), profile, parameters).parameters_of(reference, build)
        try:
            checks.resolve(study, profile if profile in study.PROFILES else "quick", **asked)
        except ParamError as e:
            problems += [m for m in e.problems if m not in seen and not seen.add(m)]
    if problems:
        raise ParamError(problems)


def is_series(path: Path) -> bool:
    """Whether `path` is a series' folder (it holds series.json)."""
    return (Path(path) / SERIES_FILE).is_file()


def save_series(s: Series, runs: Mapping[str, str], argv: str | None = None) -> None:
    """Keep the series' record: its builds, reference, parameters, the runs so far (merged
    into those recorded) and the command that measures it (`command`)."""
    s.folder.mkdir(parents=True, exist_ok=True)
    path = s.folder / SERIES_FILE
    old = json.loads(path.read_text()) if path.exists() else {}
    doc = {**old, "name": s.name, "reference": s.reference, "builds": list(s.builds), "profile": s.profile,
           "parameters": dict(s.parameters), "runs": {**old.get("runs", {}), **runs}}
    if argv:
        doc["argv"] = argv
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


def read_series(folder: Path) -> tuple[Series, dict[str, Path]]:
    """A series' record (`save_series`) again: the series and its runs so far, build → run."""
    doc = json.loads((Path(folder) / SERIES_FILE).read_text())
    s = Series(doc["name"], doc["reference"], tuple(doc["builds"]), doc["profile"], doc.get("parameters") or {})
    return s, {b: Path(r) for b, r in (doc.get("runs") or {}).items()}


def save_bisect(s: Series, record: Mapping[str, Any], *, fresh: bool = False) -> None:
    """Keep a bisection's record in the series' folder: its builds, path, end, the builds it
    measured, its command — merged into what is there, unless `fresh` (a new bisection)."""
    s.folder.mkdir(parents=True, exist_ok=True)
    path = s.folder / BISECT_FILE
    old = {} if fresh or not path.exists() else json.loads(path.read_text())
    path.write_text(json.dumps({**old, **record}, indent=1, default=str) + "\n")


def bisect_parts(folder: Path) -> list[str]:
    """The bisection kept in `folder` (none: []) as report parts: its end, how many builds it
    measured, every step with why it went that way, and its command."""
    path = Path(folder) / BISECT_FILE
    if not path.exists():
        return []
    b = json.loads(path.read_text())
    rows = [{"good": p["good"], "midpoint": p["mid"], "bad": p["bad"], "side": p["side"], "why": p["why"],
             "run": Path(p["run"]).name if p.get("run") else "–"} for p in b.get("path", [])]
    return ["<h2>Bisection</h2>", f"<p>{inline_html(bisect_words(folder))}</p>",
            pd.DataFrame(rows).to_html(classes="dbs-table", index=False) if rows else "",
            "<pre style='white-space: pre-wrap'>" + html.escape(b.get("argv") or "") + "</pre>" if b.get("argv") else ""]


def bisect_words(folder: Path) -> str | None:
    """A bisection's end in one line, with how many builds it measured (None: no bisection)."""
    path = Path(folder) / BISECT_FILE
    if not path.exists():
        return None
    b = json.loads(path.read_text())
    steps = len(b.get("path") or [])
    end = b.get("end") or f"not finished: {steps} step{'s' if steps != 1 else ''} so far"
    return f"**Bisection: {end}** — {len(b.get('measured') or [])} of {len(b.get('builds') or [])} builds measured."


def command(kind: str, s: Series, *, folder: Path | None = None, order: str | Path | None = None, **flags: str) -> str:
    """The command line that measures `s` again (`kind`: history or bisect; `flags`:
    --reference, --good, --bad …), its builds as given: a folder and its order, or in order."""
    quote = shlex.quote
    argv = [f"dbstudies {kind}", "--name", quote(s.name), *[x for k, v in flags.items() for x in (f"--{k}", quote(v))],
            "--profile", s.profile,
            *[x for k, v in s.parameters.items() for x in ("-p", k, quote(v if isinstance(v, str) else json.dumps(v)))]]
    if folder is not None:
        argv += ["--from-dir", quote(str(folder))] + (["--order", quote(str(order))] if order else [])
    elif order is not None:
        argv += ["--order", quote(str(order))]
    else:
        argv += ["--builds", *map(quote, s.builds)]
    return " ".join(argv)


def interval_text(pct: float, lo: float, hi: float, digits: int = 1) -> str:
    """An effect and its interval in %, with minus signs (`digits` decimals: a `Metric`'s).

    >>> interval_text(-31.46, -35.4, -27.4), interval_text(1.004, 0.951, 1.057, 2)
    ('−31.5 % [−35.4, −27.4]', '+1.00 % [+0.95, +1.06]')
    """
    return f"{pct:+.{digits}f} % [{lo:+.{digits}f}, {hi:+.{digits}f}]".replace("-", "−")


