"""The studies: found (never listed by hand), loaded by name or by folder, and the notebook
each runs (the faces of one experiment share one); what is written from them into READMEs
and parameters cells is `generated`'s. What a study is — its kind's class, whose
methods are the hooks — is `contract`'s; the parts it is built from are `studykit`'s.

A study is a package — `dbstudies.studies.<name>`, or a folder of your own loaded by its
path (`load("./my_study")`, docs/writing-a-study.md) — whose `__init__` declares:

- `Params`: a frozen dataclass deriving from `studykit.StudyParams` (or `SysbenchParams`),
  with a `check()` for its own problems (the shared checks are the kit's), `MEANINGS` and
  its `COMPARISONS` (`comparisons`: each table declared once);
- `PROFILES`: every parameter's value in the smoke, quick and full profiles;
- a class of its kind (`contract.Study`; `steps.SysbenchStudy` drives sysbench) holding
  `Params` and `PROFILES` and overriding what differs — `arms(p)` and `answer(run, p)` always;
  `cells`, `prepare`, `warmup`, `step`, `pair`, `observations(run, p)`, `follow_up(run, p)`,
  `profile_cells(run, p)` … where its own — and one instance of it, `STUDY`, which `load`
  returns. The class is the catalogue of hooks: each has its one default there.

In the paired design a study's own `step` measures each arm of a pair on that arm's server;
when its `Params.SHARED_SERVER` says that its steps give their arm's settings to each session
(`ctx.session`), the arms of one flavour share one server (`schedule.server_key`).

The measurement loop — server per flavour, blocks with restart and warm-up, per-step flush,
server records, progress, the A/A arm — is the library's (`experiment`), not the study's.
This module sits below the loop (it imports neither pandas nor the loop); `load` imports a
study only when it is used, and nothing imports a study by name.

    study = load("thread_pool")
    p = checks.resolve(study, "smoke", threads=[1, 8])
    run = ownership.open_run(study, p)
    experiment.measure(study, p, run)
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from .. import workloads
from ..core import comparisons, paths
from ..store import params as P
from ..store import record
from .contract import Study, study_name

if TYPE_CHECKING:
    from ..store.results import Run
    from .studykit import StudyParams


def against_profile(meta: Mapping[str, Any]) -> list[tuple[str, Any, Any]] | None:
    """A run's parameters beside its profile's values: [(name, value, profile value)];
    None when the run's study or profile is unknown here."""
    params = P.written(meta)
    try:
        study = load(reference(meta))
        profile = P.profile_values(study.Params, study.PROFILES, params["profile"])
    except (P.ParamError, KeyError):
        return None
    return [(k, v, v if k == "profile" else profile.get(k, v)) for k, v in params.items()]


def unused_parameters(params: Mapping[str, Any]) -> list[str]:
    """Parameters a run's workloads never read: the TPC-C scale without `tpcc`, LinkBench's
    without `linkbench`, sysbench's OLTP tables without an OLTP workload.

    >>> unused_parameters({"workloads": ["oltp_point_select"], "warehouses": 1, "nodes": 10, "tables": 1})
    ['warehouses', 'nodes']
    """
    ran = set(params.get("workloads") or [])
    if not ran:
        return []
    used_by = {"warehouses": "tpcc", "nodes": "linkbench", "tables": "oltp", "table_size": "oltp"}
    families = {workloads.family(w) for w in ran}
    return [name for name, family in used_by.items() if name in params and family not in families]


def names() -> list[str]:
    """The built-in studies: every package in studies/ (found, never registered by hand)."""
    return sorted(p.parent.name for p in paths.STUDIES_DIR.glob("*/__init__.py"))


def is_folder(study: str | os.PathLike) -> bool:
    """Whether `study` names a study by its folder (a path) rather than a built-in's name."""
    return os.sep in str(study) or str(study).startswith(".") or Path(study).is_dir() and str(study) not in names()


def load(study: str | os.PathLike) -> Study:
    """The study called `study` — a built-in's name, or the folder of a study of your own
    (its `__init__.py`, beside its notebook) —, imported now: nothing below imports a
    study module, and nothing lists them by hand."""
    if is_folder(study):
        return _load_folder(Path(study))
    if study not in names():
        raise P.ParamError([f"study: unknown study {study!r}; known: {', '.join(names())} (or a "
                            "study's folder, e.g. ./my_study)"])
    return _the_study(importlib.import_module(f"dbstudies.studies.{study}"))


OUTSIDE = "dbstudies_outside"  # the package name a study of your own is imported under


def _load_folder(folder: Path) -> Study:
    folder = folder.expanduser().resolve()
    init = folder / "__init__.py"
    if not init.is_file():
        raise P.ParamError([f"study: {folder} is not a study's folder (no __init__.py; see "
                            "docs/writing-a-study.md)"])
    name = f"{OUTSIDE}.{folder.name}"
    if name in sys.modules and Path(sys.modules[name].__file__).resolve() == init:
        return _the_study(sys.modules[name])
    if not folder.name.isidentifier():
        raise P.ParamError([f"study: the folder's name {folder.name!r} must be a Python name "
                            "(letters, digits, _), it names the study"])
    if OUTSIDE not in sys.modules:  # a namespace for studies of your own
        sys.modules[OUTSIDE] = types.ModuleType(OUTSIDE)
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(folder)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        return _the_study(module)
    except BaseException:  # a study that failed to load is not kept half-loaded
        del sys.modules[name]
        raise


# what the loop, the planner, a sweep and the report call on a study: `Study`'s methods
HOOKS = tuple(name for name, v in vars(Study).items() if inspect.isfunction(v) and not name.startswith("_"))


def _the_study(module: types.ModuleType) -> Study:
    """The study a module declares: its `STUDY`, an instance of its kind's class (`Study`)
    with `Params`, `PROFILES`, `arms` and `answer` of its own."""
    study = getattr(module, "STUDY", None)
    where = getattr(module, "__file__", module.__name__)
    if not isinstance(study, Study):
        raise P.ParamError([f"study: {where} declares no STUDY (an instance of its kind's class, e.g. "
                            "`STUDY = MyStudy()` with `class MyStudy(SysbenchStudy)`: docs/writing-a-study.md)"])
    problems = [f"study: {where} declares no {what}" for what in ("Params", "PROFILES") if not hasattr(type(study), what)]
    problems += [f"study: {where} declares no {what}" for what in ("arms", "answer")
                 if getattr(type(study), what) is getattr(Study, what)]
    problems += [f"study: {where} defines {name}() as a module function; a hook is a method of its class "
                 f"({type(study).__name__}.{name}), else the kind's default runs" for name in HOOKS
                 if inspect.isfunction(getattr(module, name, None))
                 and getattr(module, name) is not getattr(type(study), name, None)]
    if problems:
        raise P.ParamError(problems)
    return study


def reference(meta: Mapping[str, Any] | record.Record) -> str:
    """What `load` takes to load a run's study again: the folder of a study of your own
    (recorded in the run's metadata), else the built-in's name."""
    r = record.of(meta)
    return r.study_dir or r.study


def params_of(run: Any) -> Any:
    """A recorded run's parameters, typed, as its own study declares them (`Run.params`): an
    instance of its `Params` (a `studykit.StudyParams`, whose kit this registry stands below)."""
    return run.params(load(reference(run.record)))


def notebook_of(study: Study) -> Path:
    """The study's notebook: notebooks/<name>.ipynb (the faces of one experiment share
    theirs: its `NOTEBOOK`), or <name>.ipynb in its own folder."""
    folder = paths.study_folder(study.module)
    return (folder or paths.NOTEBOOKS_DIR) / f"{study.NOTEBOOK or study_name(study)}.ipynb"


def notebook_face(study: Study) -> dict[str, str]:
    """What a notebook the faces of one experiment share is told of the one it runs for
    (its parameters cell's `face`); nothing for a notebook of its own."""
    return {"face": study_name(study)} if study.NOTEBOOK else {}


def faces(notebook: Path) -> list[str]:
    """The built-in studies whose notebook `notebook` is (one; the faces of one experiment:
    several, the first its notebook's default)."""
    return [name for name in names() if notebook_of(load(name)) == notebook]


# what a table is judged on: (its words, the measured observations, cell columns, value)
Observations = tuple[str, Any, list[str], str]  # the observations: a DataFrame


def paired_tables(study: Study, run: Run, p: StudyParams | None = None) -> dict[str, Observations]:
    """The study's judged comparisons (`comparisons.judged`) on `run`'s observations (its
    `observations(run, p)`; `p`: the run's, `Run.params`, unless given): {key: (words,
    observations, cell columns, column)}."""
    p = p if p is not None else run.params(study)
    frame = study.observations(run, p)
    listed = getattr(p, "COMPARISONS", study.Params.COMPARISONS)  # the run's own: a count's where it counts
    return {c.key: (c.words, frame, list(c.by), c.column) for c in comparisons.judged(listed)}
