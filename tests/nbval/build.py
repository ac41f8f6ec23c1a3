"""Rebuild the notebooks `pytest --nbval-lax` re-analyses, from complete smoke runs.

    .venv/bin/python tests/nbval/build.py RUN_DIR [RUN_DIR …]

For each run (one per study; `dbstudies run <study> --profile smoke` makes one; a fixture
run given again rebuilds only its notebook, e.g. after the study notebook changed):

1. the run becomes the study's fixture, tests/fixtures/runs/<study>/<run id>/: its
   metadata (without its owner), its tables, each table's parts compacted into one
   Parquet file, and the folded stacks of profiled steps — nothing else, so that it stays
   small;
2. tests/nbval/<study>.ipynb becomes the study's notebook with the fixture's parameters
   injected after its parameters cell (as papermill injects them, `run_dir` included), executed
   here on the fixture (it measures nothing: the run has ended), its outputs stored (but the
   figures' images, which nbval does not compare), and
   its cells whose output follows from the data alone — tables, comparisons, the
   conclusion, the plan — tagged `nbval-check-output`;
3. a study new to tests/fixtures/notebook_outputs.json gets its `# CHECK_OUTPUT` cells'
   printed lines recorded there (what the suite's smoke run of it must print; a study
   already recorded keeps its lines: they are the suite's smoke run's, not the fixture's).

The suite then executes each of these notebooks again (`--nbval-lax`, no server started) and
compares the tagged cells with the stored outputs: a change to the analysis shows as a
diff of the report's numbers. Re-run this script when such a change is intended, and
read the diff of tests/nbval/*.ipynb before committing it.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import nbformat
import pyarrow as pa
import pyarrow.parquet as pq
from nbclient import NotebookClient

from dbstudies import paths

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures" / "runs"
CHECKED = ("report.table(", "report.comparison(", "report.conclusion(", "report.answer(", "report.setup(",
           "report.details(", "report.cpu_profiles(", "report.full_comparison(", "report.scaling_summary(",
           "report.positive_control(", "# CHECK_OUTPUT")
INJECTED = "injected-parameters"
OUTPUTS = HERE.parent / "fixtures" / "notebook_outputs.json"


def compact(src: Path, dest: Path) -> None:
    """Every table of run `src` as one Parquet part in run `dest`, with its schema metadata."""
    for folder in sorted(p for p in (src / "tables").iterdir() if p.is_dir()):
        parts = sorted(folder.glob("part-*.parquet"))
        if not parts:
            continue
        tables = [pq.read_table(p) for p in parts]
        merged = pa.concat_tables(tables, promote_options="default")
        merged = merged.replace_schema_metadata(tables[0].schema.metadata)
        out = dest / "tables" / folder.name
        out.mkdir(parents=True)
        pq.write_table(merged, out / "part-00000.parquet", compression="zstd")


def fixture(run: Path) -> Path:
    meta = json.loads((run / "metadata.json").read_text())
    if meta.get("status") != "complete":
        sys.exit(f"{run}: status {meta.get('status')}, not complete")
    study_dir = FIXTURES / meta["study"]
    shutil.rmtree(study_dir, ignore_errors=True)
    dest = study_dir / meta["run_id"]
    dest.mkdir(parents=True)
    meta.pop("owner", None)  # nobody owns a fixture: analysing it never changes its status
    (dest / "metadata.json").write_text(json.dumps(meta, indent=1, sort_keys=False) + "\n")
    compact(run, dest)
    if (run / "profiles").is_dir():  # the profiled steps' stacks (cpu_profile), not their SVGs
        (dest / "profiles").mkdir()
        for f in (run / "profiles").glob("*.folded"):
            shutil.copy2(f, dest / "profiles" / f.name)
    return dest


def notebook(study: str, run: Path, parameters: dict) -> Path:
    nb = nbformat.read(paths.NOTEBOOKS_DIR / f"{study}.ipynb", as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    values = {**parameters, "run_dir": os.path.relpath(run, HERE)}
    source = "# Parameters of the fixture run (tests/nbval/build.py)\n" + "".join(
        f"{k} = {v!r}\n" for k, v in values.items())
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell(source, metadata={"tags": [INJECTED]}))
    for cell in nb.cells:
        if cell.cell_type == "code" and any(m in cell.source for m in CHECKED):
            cell.metadata.setdefault("tags", []).append("nbval-check-output")
    NotebookClient(nb, timeout=600, kernel_name="dbstudies",
                   resources={"metadata": {"path": str(HERE)}}).execute()
    for cell in nb.cells:  # figures are not compared (nbval skips images): not stored either
        for o in cell.get("outputs", []):
            o.get("data", {}).pop("image/png", None)
            o.get("metadata", {}).pop("image/png", None)
    out = HERE / f"{study}.ipynb"
    nbformat.write(nb, out)
    record_checked(f"{study}.ipynb", nb)
    return out


def record_checked(name: str, nb) -> None:
    """A notebook new to notebook_outputs.json: its `# CHECK_OUTPUT` cells' printed lines."""
    expected = json.loads(OUTPUTS.read_text())
    if name in expected:
        return
    expected[name] = ["".join(o.get("text", "") for o in c.outputs if o.output_type == "stream")
                      for c in nb.cells if c.cell_type == "code" and c.source.startswith("# CHECK_OUTPUT")]
    OUTPUTS.write_text(json.dumps(expected, indent=2, ensure_ascii=False) + "\n")


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    for arg in argv:
        run = Path(arg).resolve()
        meta = json.loads((run / "metadata.json").read_text())
        # a fixture given again: only its notebook is rebuilt (after a notebook's change)
        dest = run if run.is_relative_to(FIXTURES) else fixture(run)
        size = sum(f.stat().st_size for f in dest.rglob("*")
                   if f.is_file() and "figures" not in f.parts)  # what is committed
        out = notebook(meta["study"], dest, meta["parameters"])
        print(f"{meta['study']}: fixture {dest.relative_to(HERE.parent.parent)} "
              f"({size / 1024:.0f} KiB), notebook {out.relative_to(HERE.parent.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
