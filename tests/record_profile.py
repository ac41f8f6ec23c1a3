"""Keep a profiled run's per-round function samples as a small test fixture.

    .venv/bin/python tests/record_profile.py data/runs/versions/<run> tests/fixtures/profiles/<name>.csv [MARKER]

Per profiled step of the run's first profiled cell: its step, arm, pair, samples and server
CPU µs per transaction, then one column per judged unit (`analysis.cpu_profiles.unit_samples`:
the samples with the function on the stack, or a caller's group of small callees) — what
`cpu_profiles.difference` judges, without the folded stacks (≈ 100 KB a step); <name>.json keeps
the share of samples too small to judge. With MARKER (text in a
frame's name, e.g. `Query_cache::`), it also lists the units found on a stack with such a
frame: the marked feature's functions, their callers and callees.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from dbstudies.analysis import cpu_profiles
from dbstudies.store.results import Run

META = ["step", "arm", "pair", "workload", "threads", "samples", "cpu_server_us_per_txn"]


def record(run_dir: Path, out: Path, marker: str | None = None) -> None:
    run = Run.open(run_dir)
    rows = cpu_profiles.profiled(run)
    cell = rows[(rows["workload"] == rows["workload"].iloc[0]) & (rows["threads"] == rows["threads"].iloc[0])]
    read = {r.step: cpu_profiles.stacks(run, r) for r in cell.itertuples()}
    units = cpu_profiles.unit_samples(read)
    said = {"too_small": units.attrs["too_small"]}
    if marker:
        on_path = {f for st in read.values() for stack in st if marker in stack for f in stack.split(";")}
        said.update(marker=marker, on_its_path=sorted(u for u in units.columns
                                                      if u.removesuffix(cpu_profiles.SMALL) in on_path))
    out.with_suffix(".json").write_text(json.dumps(said, indent=1, sort_keys=True) + "\n")
    table = cell[META].set_index("step").join(units.astype("int64")).reset_index()
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out, index=False)
    print(f"{out}: {len(table)} steps, {len(units.columns)} units, {units.attrs['too_small']:.1%} too small")


def load(path: Path):
    """A recorded fixture back as (the cell's steps, their unit samples with its attrs)."""
    import pandas as pd
    path = Path(path)
    t = pd.read_csv(path)
    units = t.drop(columns=[c for c in META if c != "step"]).set_index("step")
    said = json.loads(path.with_suffix(".json").read_text())
    units.attrs["too_small"] = said["too_small"]
    return t[META], units


if __name__ == "__main__":
    record(Path(sys.argv[1]), Path(sys.argv[2]), *sys.argv[3:4])
