"""The run store: data/runs/<study>/<run-id>/ with metadata.json and Parquet tables.

A run directory is append-only: each measured step is written as a new Parquet part as
soon as it finishes, metadata.json is replaced atomically, nothing is ever edited in
place. Tables have columns declared once in code (`Table`) with a schema version.

    run = Run.create("thread_pool", {"threads": [1, 8]})
    run.append(INTERVALS, frame)           # a new Parquet part, fsynced
    run.table(INTERVALS)                   # all parts, concatenated
    run.finish()                           # status: ownership.py decides when
"""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import secrets
import shutil
from pathlib import Path
from typing import Any, Mapping

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from . import errors, paths
from .provenance import git_state, host_facts, package_versions
from .provenance import now as _now
from .schema import Table  # noqa: F401 - the run store's tables are declared with it

STATUSES = ("running", "complete", "failed", "interrupted", "abandoned")


class NotARun(errors.StoreError, FileNotFoundError):
    """The directory does not exist or holds no metadata.json."""



INTERVALS = Table("intervals", 1, {
    "step": "int64", "second": "int64", "threads_running": "int64", "tps": "float64",
    "qps": "float64", "reads_per_s": "float64", "writes_per_s": "float64",
    "errors_per_s": "float64", "reconnects_per_s": "float64", "latency_p_ms": "float64",
}, "sysbench's per-interval report; latency_p_ms is that interval's --percentile")
HISTOGRAMS = Table("histograms", 1, {"step": "int64", "value_ms": "float64", "count": "int64"},
                   "sysbench's full latency histogram of one step")
TYPES = Table("types", 1, {"step": "int64", "type": "str", "count": "int64", "rollbacks": "int64",
                           "retries": "int64", "latency_avg_ms": "float64", "latency_max_ms": "float64",
                           "latency_p50_ms": "float64", "latency_p95_ms": "float64",
                           "latency_p99_ms": "float64"},
              "our workloads (tpcc): per transaction type of one step — finished transactions, "
              "business rollbacks among them, retries after deadlocks/lock-wait timeouts, latency")
TYPE_INTERVALS = Table("type_intervals", 1, {"step": "int64", "second": "int64", "type": "str",
                                             "count": "int64"},
                       "our workloads: transactions finished per type per second of a step")
STATUS = Table("status", 1, {"step": "int64", "second": "int64", "offset_s": "float64",
                             "variable": "str", "value": "float64"},
               "1 Hz SHOW GLOBAL STATUS and CPU seconds (cpu_server_s, cpu_client_s)")


class Stream:
    """One step's rows of a table as JSON lines, appended and flushed as they come."""

    def __init__(self, table: Table, path: Path):
        self.table, self.path = table, path
        self._file = open(path, "a", encoding="utf-8")

    def write(self, df: pd.DataFrame) -> None:
        rows = self.table.conform(df)
        self._file.write(rows.to_json(orient="records", lines=True).rstrip("\n") + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def discard(self) -> None:
        """The step was stored whole: its streamed rows are no longer needed."""
        self.close()
        self.path.unlink(missing_ok=True)

    @staticmethod
    def read(path: Path) -> pd.DataFrame:
        """The complete lines of a stream (a last line cut by a crash is skipped)."""
        rows = []
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError):
                rows.append(json.loads(line))
        return pd.DataFrame(rows)


def new_run_id(now: dt.datetime | None = None) -> str:
    """UTC timestamp + random suffix, e.g. 20261122T130355Z-3fa9c2."""
    now = now or dt.datetime.now(dt.timezone.utc)
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str, sort_keys=False) + "\n")
    os.replace(tmp, path)


class Run:
    """One run directory. Create with `Run.create`, reopen with `Run.open`."""

    def __init__(self, path: Path):
        self.path = Path(path).absolute()  # a notebook executing on it runs elsewhere
        self.meta_path = self.path / "metadata.json"
        if not self.meta_path.exists():
            raise NotARun(f"{self.path} is not a run directory (no metadata.json)")

    @classmethod
    def create(cls, study: str, parameters: Mapping[str, Any], root: Path = paths.RUNS_DIR) -> "Run":
        path = Path(root) / study / new_run_id()
        path.mkdir(parents=True, exist_ok=False)
        _write_json(path / "metadata.json", {
            "study": study, "run_id": path.name, "status": "running", "error": None,
            "parameters": dict(parameters), "created_at": _now(), "finished_at": None,
            "dbstudies": git_state(), "host": host_facts(path), "packages": package_versions(),
            "servers": [], "sysbench": {}, "tables": {},
        })
        return cls(path)

    @classmethod
    def open(cls, path: str | Path) -> "Run":
        return cls(Path(path))

    # -- metadata
    @property
    def metadata(self) -> dict[str, Any]:
        return json.loads(self.meta_path.read_text())

    @property
    def study(self) -> str:
        return self.metadata["study"]

    @property
    def status(self) -> str:
        return self.metadata["status"]

    def update(self, **fields: Any) -> None:
        """Replace top-level metadata fields (atomically)."""
        meta = self.metadata
        meta.update(fields)
        _write_json(self.meta_path, meta)

    def finish(self, status: str = "complete", error: str | None = None) -> None:
        if status not in STATUSES[1:]:
            raise errors.StoreError(f"status must be one of {STATUSES[1:]}, got {status!r}")
        self.update(status=status, error=error, finished_at=_now())

    # -- progress (what `dbstudies run` shows in the terminal while a kernel measures)
    def set_progress(self, done: int, total: int, now: str = "") -> None:
        _write_json(self.path / "progress.json", {"done": done, "total": total, "now": now})

    def progress(self) -> dict[str, Any] | None:
        """{"done", "total", "now"} as the measuring process last wrote it, or None."""
        try:
            return json.loads((self.path / "progress.json").read_text())
        except (FileNotFoundError, ValueError):
            return None

    # -- tables
    def append(self, table: Table, df: pd.DataFrame) -> Path:
        """Write `df` as the next part of `table`, durably, before returning."""
        df = table.conform(df)
        folder = self.path / "tables" / table.name
        folder.mkdir(parents=True, exist_ok=True)
        part = folder / f"part-{len(list(folder.glob('part-*.parquet'))):05d}.parquet"
        arrow = pa.Table.from_pandas(df, preserve_index=False)
        arrow = arrow.replace_schema_metadata({**(arrow.schema.metadata or {}),
                                               b"dbstudies.table": table.name.encode(),
                                               b"dbstudies.schema_version": str(table.version).encode()})
        tmp = part.with_suffix(".tmp")
        pq.write_table(arrow, tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, part)
        tables = self.metadata["tables"]
        if table.name not in tables:
            tables[table.name] = {"schema_version": table.version, "columns": dict(table.columns),
                                  "doc": table.doc}
            self.update(tables=tables)
        return part

    def append_rows(self, table: Table, rows: list[dict[str, Any]]) -> Path:
        """`append` of rows given as dicts, in the table's column order."""
        return self.append(table, pd.DataFrame(rows, columns=list(table.columns)))

    def stream(self, table: Table, key: int) -> "Stream":
        """Rows of one step written as they come (JSON lines, flushed at every write), so a
        step that dies half-way keeps what it streamed; `table` reads them until the step's
        Parquet part replaces them (`Stream.discard`)."""
        folder = self.path / "tables" / table.name
        folder.mkdir(parents=True, exist_ok=True)
        return Stream(table, folder / f"stream-{key}.jsonl")

    def table(self, table: Table | str) -> pd.DataFrame:
        """All parts of a table, the rows streamed by unfinished steps included (empty with
        its declared columns if none was written)."""
        name = table if isinstance(table, str) else table.name
        folder = self.path / "tables" / name
        frames = [pd.read_parquet(p) for p in sorted(folder.glob("part-*.parquet"))]
        for path in sorted(folder.glob("stream-*.jsonl")):
            rows = Stream.read(path)
            if not rows.empty:
                frames.append(table.conform(rows) if isinstance(table, Table) else rows)
        if not frames:
            if isinstance(table, Table):
                return pd.DataFrame({c: pd.Series(dtype=t) for c, t in table.columns.items()})
            raise errors.StoreError(f"run {self.path.name} has no table {name}")
        return pd.concat(frames, ignore_index=True)

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r})"


def list_runs(study: str | None = None, root: Path = paths.RUNS_DIR,
              status: str | None = None) -> list[Run]:
    """Runs of a study (None: of every study), oldest first (run ids sort by time)."""
    out = []
    metas = (Path(root) / study).glob("*/metadata.json") if study else Path(root).glob("*/*/metadata.json")
    for p in sorted(metas, key=lambda m: m.parent.name):
        run = Run(p.parent)
        if status is None or run.status == status:
            out.append(run)
    return out




def export_tables(run: Run, out: Path, fmt: str) -> list[Path]:
    """Every tidy table of a run as one file each (csv or parquet) in `out`."""
    if fmt not in ("csv", "parquet"):
        raise errors.StoreError(f"unknown export format {fmt!r}; use csv or parquet")
    names = sorted(p.name for p in (run.path / "tables").glob("*") if p.is_dir())
    if not names:
        raise errors.StoreError(f"run {run.path.name} has no tables to export")
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for name in names:
        df, f = run.table(name), out / f"{name}.{fmt}"
        df.to_csv(f, index=False) if fmt == "csv" else df.to_parquet(f, index=False)
        files.append(f)
    return files


def export_figures(run: Run, dest_root: Path = paths.FIGURES_DIR) -> Path:
    """Copy a run's figures to figures/<study>/ (the latest run's figures live there)."""
    dest = Path(dest_root) / run.study
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(run.path / "figures", dest)
    return dest
