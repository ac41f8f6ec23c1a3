"""A sweep's grid: the runs it asks for (`Job`: a study, a profile and parameters, named by a key
that finds its run again), expanded from a grid of parameter values (`expand`, `load_grid`)
and checked whole before any runs.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..core.errors import ParamError
from ..kit.study import is_folder, load
from ..measure import checks


@dataclass(frozen=True)
class Job:
    """One run of a sweep: study (a built-in's name, or a study's folder, absolute), profile
    and the parameters given on top of the profile."""
    study: str
    profile: str
    parameters: Mapping[str, Any]

    @property
    def name(self) -> str:
        """The study's name: where its runs land under the runs directory."""
        return Path(self.study).name

    @property
    def key(self) -> str:
        """Stable across sweeps: a hash of study, profile and parameters."""
        text = json.dumps([self.study, self.profile, dict(self.parameters)], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    @property
    def label(self) -> str:
        said = ", ".join(f"{k}={json.dumps(v)}" for k, v in self.parameters.items())
        return f"{self.name} ({self.profile}){': ' + said if said else ''}"

    def argv(self, runs_dir: Path) -> list[str]:
        """`dbstudies run` for this job (parameters as JSON, each parsed for its type)."""
        pairs = [a for k, v in self.parameters.items()
                 for a in ("-p", k, v if isinstance(v, str) else json.dumps(v))]
        return [sys.executable, "-m", "dbstudies", "run", self.study, "--profile", self.profile,
                *pairs, "--runs-dir", str(runs_dir)]


def expand(study: str, grid: Mapping[str, Any]) -> list[Job]:
    """Every run of a grid document (see the module's doc), validated: ParamError with every
    problem of every run before anything starts.

    >>> [j.parameters for j in expand("thread_pool", {"profile": "smoke", "parameters": {"duration": 2},
    ...     "grid": {"threads": [[1], [4]]}})]
    [{'duration': 2, 'threads': [1]}, {'duration': 2, 'threads': [4]}]
    """
    if is_folder(study):  # its jobs name it by its absolute path (a Dask worker: the same path there)
        study = str(Path(study).expanduser().resolve())
    unknown = sorted(set(grid) - {"profile", "parameters", "grid"})
    if unknown:
        raise ParamError([f"grid file: unknown keys {unknown} (profile, parameters, grid)"])
    axes = dict(grid.get("grid") or {})
    bad = [k for k, v in axes.items() if not isinstance(v, list) or not v]
    if bad:
        raise ParamError([f"grid: {k} needs a list of values" for k in bad])
    profiles = axes.pop("profile", None) or [grid.get("profile", "quick")]
    fixed = dict(grid.get("parameters") or {})
    s = load(study)
    jobs, problems = [], []
    for profile in profiles:
        for values in itertools.product(*axes.values()):
            job = Job(study, profile, {**fixed, **dict(zip(axes, values))})
            try:
                checks.resolve(s, profile, **job.parameters)
            except ParamError as e:
                problems += [f"{job.label}: {m}" for m in e.problems]
            jobs.append(job)
    if problems:
        raise ParamError(problems)
    if len({j.key for j in jobs}) != len(jobs):
        raise ParamError(["grid: the same run is listed more than once"])
    return jobs


def load_grid(path: Path) -> dict[str, Any]:
    import yaml
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as e:
        raise ParamError([f"grid file {path}: {e}"]) from None
    if not isinstance(doc, dict):
        raise ParamError([f"grid file {path}: needs a mapping with profile, parameters, grid"])
    return doc
