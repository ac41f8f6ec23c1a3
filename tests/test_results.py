"""The run store: layout, metadata, declared tables, append-only parts, status on failure."""
import json
import os
import re
from dataclasses import dataclass

import pandas as pd
import pytest

from dbstudies.core import errors
from dbstudies.measure import ownership
from dbstudies.store import results
from dbstudies.store.results import Run, Table
from dbstudies.store.tables import INTERVALS


@dataclass(frozen=True)
class Params:
    a: int = 1


T = Table("demo", 2, {"step": "int64", "value": "float64", "label": "str"})


@pytest.fixture
def run(tmp_path):
    return Run.create("demo_study", {"threads": [1, 8]}, root=tmp_path)


def test_layout_and_metadata(run, tmp_path):
    assert run.path.parent == tmp_path / "demo_study"
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{6}", run.path.name)
    meta = json.loads((run.path / "metadata.json").read_text())
    assert meta["status"] == "running" and meta["parameters"] == {"threads": [1, 8]}
    assert len(meta["dbstudies"]["commit"] or "x" * 40) == 40
    assert meta["host"]["cpus"] >= 1 and meta["host"]["memory_gib"] > 0
    assert meta["host"]["kernel"] and meta["host"]["filesystem"]
    assert meta["packages"]["pandas"] == pd.__version__


def test_a_run_opened_by_a_relative_path_knows_its_absolute_one(run, monkeypatch):
    monkeypatch.chdir(run.path.parent)
    assert Run.open(run.path.name).path == run.path and run.path.is_absolute()


def test_run_ids_are_never_reused(tmp_path):
    ids = {Run.create("s", {}, root=tmp_path).path.name for _ in range(20)}
    assert len(ids) == 20


def test_append_is_durable_and_append_only(run):
    first = run.append(T, pd.DataFrame({"step": [1], "value": [1.5], "label": ["a"]}))
    second = run.append(T, pd.DataFrame({"label": ["b"], "step": [2], "value": [2]}))
    assert first != second and first.exists() and second.exists()
    df = run.table(T)
    assert df.to_dict("list") == {"step": [1, 2], "value": [1.5, 2.0], "label": ["a", "b"]}
    assert str(df["step"].dtype) == "int64"
    meta = run.metadata["tables"]["demo"]
    assert meta["schema_version"] == 2 and list(meta["columns"]) == ["step", "value", "label"]
    import pyarrow.parquet as pq
    assert pq.read_schema(first).metadata[b"dbstudies.schema_version"] == b"2"


def test_undeclared_or_missing_columns_are_refused(run):
    with pytest.raises(ValueError, match="undeclared columns \\['extra'\\]"):
        run.append(T, pd.DataFrame({"step": [1], "value": [1.0], "label": ["a"], "extra": [0]}))
    with pytest.raises(ValueError, match="missing columns \\['label'\\]"):
        run.append(T, pd.DataFrame({"step": [1], "value": [1.0]}))


def test_streamed_rows_are_read_until_the_step_is_stored_whole(run):
    run.append(T, pd.DataFrame({"step": [1], "value": [1.0], "label": ["a"]}))
    live = run.stream(T, 2)
    live.write(pd.DataFrame({"step": [2], "value": [2.0], "label": ["b"]}))
    live.write(pd.DataFrame({"step": [2, 2], "value": [3.0, 4.0], "label": ["c", "d"]}))
    with open(live.path, "a") as f:  # a crash in the middle of a line
        f.write('{"step":2,"val')
    df = run.table(T)
    assert df.to_dict("list") == {"step": [1, 2, 2, 2], "value": [1.0, 2.0, 3.0, 4.0],
                                  "label": ["a", "b", "c", "d"]}
    assert str(df["step"].dtype) == "int64"
    run.append(T, pd.DataFrame({"step": [2], "value": [9.0], "label": ["whole"]}))
    live.discard()
    assert run.table(T)["label"].tolist() == ["a", "whole"] and not live.path.exists()
    with pytest.raises(ValueError, match="undeclared columns"):
        run.stream(T, 3).write(pd.DataFrame({"step": [3], "value": [1.0], "label": ["x"], "y": [0]}))


def test_empty_table_has_declared_columns(run):
    assert list(run.table(INTERVALS).columns) == list(INTERVALS.columns)


def test_the_owner_marks_failed_and_interrupted(tmp_path):
    p = Params()
    failed = ownership.create_run("s", p, tmp_path, "notebook")
    with pytest.raises(RuntimeError):
        with ownership.guard(failed):
            raise RuntimeError("server exploded")
    assert failed.status == "failed" and "server exploded" in failed.metadata["error"]
    stopped = ownership.create_run("s", p, tmp_path, "notebook")
    with pytest.raises(KeyboardInterrupt):
        with ownership.guard(stopped):
            raise KeyboardInterrupt
    assert stopped.status == "interrupted" and stopped.metadata["finished_at"]
    ownership.finish(stopped)
    assert stopped.status == "interrupted"  # settled once, never rewritten


def test_only_the_owner_writes_the_status(tmp_path):
    """A kernel measuring a CLI-owned run leaves the status to the CLI."""
    theirs = ownership.create_run("s", Params(), tmp_path, "cli")
    theirs.update(owner={**theirs.metadata["owner"], "pid": os.getppid()})
    with pytest.raises(RuntimeError):
        with ownership.guard(theirs):
            raise RuntimeError("boom")
    ownership.finish(theirs)
    assert theirs.status == "running" and not ownership.owns(theirs)
    mine = ownership.create_run("s", Params(), tmp_path, "notebook")
    ownership.finish(mine)
    assert mine.status == "complete" and mine.metadata["parameters"] == {"a": 1}


def test_missing_run_is_a_store_error(tmp_path):
    with pytest.raises(errors.StoreError, match="not a run directory"):
        Run.open(tmp_path / "nope")


def test_list_runs_by_status(tmp_path):
    a, b = Run.create("s", {}, root=tmp_path), Run.create("s", {}, root=tmp_path)
    b.finish()
    assert [r.path for r in results.list_runs("s", tmp_path)] == sorted([a.path, b.path])
    assert [r.path for r in results.list_runs("s", tmp_path, status="complete")] == [b.path]
    with pytest.raises(errors.StoreError, match="status must be one of"):
        a.finish("great")
