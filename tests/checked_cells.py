"""What the study notebooks print on their recorded fixture runs, kept as text.

`pytest --nbval-lax` re-analyses each study's committed fixture run (tests/fixtures/runs/<study>/)
in its notebook and compares the checked cells — tables, comparisons, the Answer, the
conclusion, the plan — with a reference. The reference is text, tests/nbval/<study>.txt, one
section per checked cell: what it prints, with the page markup stripped by the suite's
sanitizer (tests/nbval/sanitize.cfg: tables become `a | b | c` rows, figures and styles are
left out). A change to the analysis or to a notebook shows as a readable diff of it.

The notebooks nbval executes are built before each test session (`build_all`, from conftest)
from notebooks/<study>.ipynb, a parameters cell naming the fixture run and the reference's
outputs; they are not committed (tests/nbval/*.ipynb is ignored). After an intended change:

    .venv/bin/python tests/checked_cells.py tests/fixtures/runs/*/*

re-executes each notebook on its fixture and writes its reference again (read the diff before
committing it). Given a new complete smoke run (`dbstudies run <study> --profile smoke`), the
run first becomes the study's fixture: its metadata (without its owner; slimmed to what the
analysis reads, tests/slim_fixture.py), each table's parts
compacted into one Parquet file and the profiled steps' folded stacks — nothing else, so that it
stays small. A study new to tests/fixtures/notebook_outputs.json gets its `# CHECK_OUTPUT`
cells' printed lines recorded there (what the suite's smoke run of it must print).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import nbformat
import slim_fixture

from dbstudies.kit import study as registry

HERE = Path(__file__).resolve().parent
NBVAL = HERE / "nbval"
FIXTURES = HERE / "fixtures" / "runs"
OUTPUTS = HERE / "fixtures" / "notebook_outputs.json"
CHECKED = ("report.table(", "report.comparison(", "report.conclusion(", "report.answer(", "report.setup(",
           "report.details(", "report.cpu_profiles(", "report.full_comparison(", "report.scaling_summary(",
           "report.positive_control(", "# CHECK_OUTPUT")
INJECTED = "injected-parameters"
TAG = "nbval-check-output"
REBUILD = ".venv/bin/python tests/checked_cells.py tests/fixtures/runs/*/*"
CELL, OUTPUT, BODY = "## cell ", "-- ", "  "
SKIPPED = ("image/png", "image/jpeg")  # nbval does not compare images: nor is a figure kept


def patterns() -> list[tuple[str, str]]:
    """The sanitizer's (regex, replacement) pairs, read as nbval reads them."""
    text = (NBVAL / "sanitize.cfg").read_text()
    return re.findall(r"^regex: (.*)$\n^replace: (.*)$", text, flags=re.MULTILINE)


def sanitize(s: str) -> str:
    """What nbval compares of an output's text (the same patterns, in the same order).

    >>> sanitize('<style>#T_ab12c td {x}</style><table><tr><th>a</th><td>1 %</td></tr></table>')
    'a | 1 % |\\n'
    >>> sanitize(sanitize('<p>x  y</p>\\n\\n<b>z</b> at 0x7f3a')) == sanitize('<p>x  y</p>\\n\\n<b>z</b> at 0x7f3a')
    True
    """
    for regex, replace in patterns():
        s = re.sub(regex, replace, s)
    return s


def is_checked(source: str) -> bool:
    return any(m in source for m in CHECKED)


def fixture_run(study: str) -> Path:
    runs = sorted(p for p in (FIXTURES / study).iterdir() if (p / "metadata.json").exists())
    assert len(runs) == 1, f"{FIXTURES / study}: {len(runs)} fixture runs, one expected"
    return runs[0]


def notebook(study: str) -> Path:
    """The study's notebook (the faces of one experiment share one)."""
    return registry.notebook_of(registry.load(study))


def study_notebook(study: str, run: Path):
    """The study's notebook with the fixture's parameters injected after its parameters cell
    (as papermill injects them, `run_dir` and a shared notebook's `face` included) and its
    checked cells tagged."""
    nb = nbformat.read(notebook(study), as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    values = {**registry.notebook_face(registry.load(study)),
              **json.loads((run / "metadata.json").read_text())["parameters"], "run_dir": os.path.relpath(run, NBVAL)}
    source = f"# Parameters of the fixture run (tests/{Path(__file__).name})\n" + "".join(
        f"{k} = {v!r}\n" for k, v in values.items())
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell(source, metadata={"tags": [INJECTED]}))
    for cell in nb.cells:
        if cell.cell_type == "code" and is_checked(cell.source):
            cell.metadata.setdefault("tags", []).append(TAG)
    return nb


def checked_cells(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code" and TAG in c.metadata.get("tags", [])]


def headline(cell) -> str:
    return cell.source.splitlines()[0] if cell.source else ""


# ---------------------------------------------------------------- the reference as text
def to_text(nb) -> str:
    """An executed notebook's checked cells: a `## cell` line (its first source line), then
    each output — `-- stream stdout`, or `-- display_data text/html text/plain` and each
    non-empty text under `text/html:` — its lines indented by two spaces."""
    lines: list[str] = []
    for n, cell in enumerate(checked_cells(nb), 1):
        lines.append(f"{CELL}{n}: {headline(cell)}")
        for o in cell.outputs:
            if o.output_type == "stream":
                lines.append(f"{OUTPUT}stream {o.name}")
                lines += [BODY + s for s in sanitize(o.text).split("\n")]
            elif o.output_type in ("display_data", "execute_result"):
                data = {k: sanitize(v) for k, v in sorted(o.data.items()) if k not in SKIPPED}
                lines.append(f"{OUTPUT}{o.output_type} " + " ".join(data))
                for key, value in data.items():
                    if value:
                        lines.append(f"{key}:")
                        lines += [BODY + s for s in value.split("\n")]
            else:
                raise ValueError(f"cell {n} ({headline(cell)!r}) has a {o.output_type} output")
    return "\n".join(lines) + "\n"


def from_text(text: str) -> list[tuple[str, list]]:
    """`to_text` read back: (first source line, outputs) per checked cell.

    >>> cells = from_text(to_text(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
    ...     'report.table(t)', metadata={"tags": [TAG]}, outputs=[
    ...     nbformat.v4.new_output("stream", name="stdout", text="a\\n\\nb"),
    ...     nbformat.v4.new_output("display_data", data={"text/html": "<b>x</b>\\ny", "text/plain": "<HTML>"})])])))
    >>> cells[0][0], [dict(o) for o in cells[0][1]]  # doctest: +NORMALIZE_WHITESPACE
    ('report.table(t)', [{'output_type': 'stream', 'name': 'stdout', 'text': 'a\\nb'},
     {'output_type': 'display_data', 'metadata': {}, 'data': {'text/html': 'x\\ny', 'text/plain': ''}}])
    """
    cells: list[tuple[str, list]] = []
    body: list[str] | None = None

    def close() -> None:
        if body is not None:
            output, key = current
            value = "\n".join(s[len(BODY):] for s in body)
            if key is None:
                output["text"] = value
            else:
                output["data"][key] = value

    current: tuple = (None, None)
    for line in text.splitlines():
        if line.startswith(CELL):
            close()
            body = None
            cells.append((line.split(": ", 1)[1], []))
        elif line.startswith(OUTPUT):
            close()
            body = None
            kind, *rest = line[len(OUTPUT):].split(" ")
            if kind == "stream":
                output = nbformat.v4.new_output("stream", name=rest[0], text="")
                body, current = [], (output, None)
            else:
                output = nbformat.v4.new_output(kind, data={k: "" for k in rest})
                if kind == "execute_result":
                    output["execution_count"] = None
            cells[-1][1].append(output)
        elif body is not None and line.startswith(BODY):
            body.append(line)
        elif line.endswith(":") and cells and cells[-1][1] and line[:-1] in cells[-1][1][-1].get("data", {}):
            close()
            body, current = [], (cells[-1][1][-1], line[:-1])
        else:
            raise ValueError(f"not a line of the reference: {line!r}")
    close()
    return cells


# ---------------------------------------------------------------- at test time
def build(study: str) -> Path:
    """tests/nbval/<notebook>.ipynb: the study's notebook on its fixture run, its checked cells
    holding the reference's outputs. Where the two no longer match cell for cell, the notebook
    starts with a cell that fails, saying how to write the reference again."""
    nb = study_notebook(study, fixture_run(study))
    name = notebook(study).stem
    reference = NBVAL / f"{name}.txt"
    cells = checked_cells(nb)
    expected = from_text(reference.read_text()) if reference.exists() else []
    found = [headline(c) for c in cells]
    if found != [h for h, _ in expected]:
        why = (f"the checked cells of notebooks/{name}.ipynb are not those of tests/nbval/{name}.txt "
               f"({len(found)} vs {len(expected)}; first different: "
               f"{next((a for a, b in zip(found + [''], [h for h, _ in expected] + ['']) if a != b), '')!r})"
               f": write the reference again with {REBUILD}")
        nb.cells.insert(0, nbformat.v4.new_code_cell(f"raise AssertionError({why!r})"))
    else:
        for n, (cell, (_, outputs)) in enumerate(zip(cells, expected), 1):
            cell.outputs, cell.execution_count = outputs, n  # nbval compares only cells that ran
    out = NBVAL / f"{name}.ipynb"
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    nbformat.write(nb, tmp)
    tmp.replace(out)
    return out


def studies() -> list[str]:
    """The studies with a fixture run whose notebook nbval executes: one per notebook (a
    shared one's first face)."""
    return sorted(p.name for p in FIXTURES.iterdir()
                  if p.is_dir() and registry.faces(notebook(p.name))[0] == p.name)


def build_all() -> list[Path]:
    return [build(s) for s in studies()]


# ---------------------------------------------------------------- writing the reference
def compact(src: Path, dest: Path) -> None:
    """Every table of run `src` as one Parquet part in run `dest`, with its schema metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq
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
    slim_fixture.slim(dest, slim_fixture.named_in_library())  # what the analysis reads, a record a line
    compact(run, dest)
    if (run / "profiles").is_dir():  # the profiled steps' stacks (cpu_profile), not their SVGs
        (dest / "profiles").mkdir()
        for f in (run / "profiles").glob("*.folded"):
            shutil.copy2(f, dest / "profiles" / f.name)
    return dest


def record(study: str) -> Path:
    """Execute the study's notebook on its fixture run; write its checked cells' text."""
    from nbclient import NotebookClient
    nb = study_notebook(study, fixture_run(study))
    NotebookClient(nb, timeout=600, kernel_name="dbstudies", resources={"metadata": {"path": str(NBVAL)}}).execute()
    out = NBVAL / f"{notebook(study).stem}.txt"
    out.write_text(to_text(nb))
    record_checked(study, nb)
    return out


def record_checked(name: str, nb) -> None:
    """A study new to notebook_outputs.json: its notebook's `# CHECK_OUTPUT` cells' printed lines."""
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
        first = registry.faces(notebook(meta["study"]))[0]
        if first != meta["study"]:
            print(f"{meta['study']}: shares {notebook(meta['study']).name} with {first}, whose fixture "
                  "makes its reference: skipped")
            continue
        # a fixture given again: only its reference is written again (after a notebook's change)
        dest = run if run.is_relative_to(FIXTURES) else fixture(run)
        size = sum(f.stat().st_size for f in dest.rglob("*") if f.is_file() and "figures" not in f.parts)
        out = record(meta["study"])
        print(f"{meta['study']}: fixture {dest.relative_to(HERE.parent)} ({size / 1024:.0f} KiB), "
              f"reference {out.relative_to(HERE.parent)} ({len(out.read_text().splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
