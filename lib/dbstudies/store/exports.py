"""What a run gives outside the store: its tidy tables as files (`dbstudies export`), its
figures copied to figures/<study>/ (the latest run's figures, never a smoke run's over a
larger run's).
"""
from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

from ..core import errors, paths
from .results import Run


def export_tables(run: Run, out: Path, fmt: str) -> list[Path]:
    """Every tidy table of a run as one file each (csv or parquet) in `out`."""
    if fmt not in ("csv", "parquet"):
        raise errors.StoreError(f"unknown export format {fmt!r}; use csv or parquet")
    names = run.table_names()
    if not names:
        raise errors.StoreError(f"run {run.path.name} has no tables to export")
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for name in names:
        df, f = run.table(name), out / f"{name}.{fmt}"
        df.to_csv(f, index=False) if fmt == "csv" else df.to_parquet(f, index=False)
        files.append(f)
    return files


EXPORTED = "exported-from.json"  # in figures/<study>/: the run its figures came from, and its profile


def export_figures(run: Run, dest_root: Path = paths.FIGURES_DIR) -> Path | None:
    """Copy a run's figures to figures/<study>/ (the latest run's figures live there) — unless
    the run is a smoke run and those figures are a larger run's: a few seconds of machinery
    never replace a study's measured figures. Returns where they went, or None."""
    dest = Path(dest_root) / run.study
    profile = run.record.profile
    with contextlib.suppress(OSError, ValueError):
        before = json.loads((dest / EXPORTED).read_text()).get("profile")
        if profile == "smoke" and before not in (None, "smoke"):
            return None
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(run.figures, dest)
    (dest / EXPORTED).write_text(json.dumps({"run": run.path.name, "profile": profile}) + "\n")
    return dest
