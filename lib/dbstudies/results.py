"""The run store: data/runs/<study>/<run-id>/ with metadata.json and Parquet tables.

A run directory is append-only: each measured step is written as a new Parquet part as
soon as it finishes, metadata.json is replaced atomically, nothing is ever edited in
place. Tables have columns declared once in code (`Table`) with a schema version.

    run = Run.create("thread_pool", {"threads": [1, 8]})
    run.append(INTERVALS, frame)           # a new Parquet part, fsynced
    run.table(INTERVALS)                   # all parts, concatenated
    run.finish()                           # status: runner.py decides when
"""
from __future__ import annotations

import contextlib
import datetime as dt
import importlib.metadata
import json
import os
import platform
import secrets
import shutil
from pathlib import Path
from typing import Any, Mapping

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from . import errors, paths, proc
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
            raise ValueError(f"status must be one of {STATUSES[1:]}")
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


def disk_usage(path: Path) -> int:
    """Bytes allocated below `path` (what `du` counts)."""
    total = 0
    for f in Path(path).rglob("*"):
        with contextlib.suppress(OSError):
            if not f.is_symlink():
                total += f.stat().st_blocks * 512
    return total


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


# ---------------------------------------------------------------- provenance

def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def git_state(repo: Path = paths.REPO) -> dict[str, Any]:
    """The checkout's commit and whether tracked files differ from it."""
    try:
        commit = proc.run(["git", "-C", repo, "rev-parse", "HEAD"], timeout=30).stdout.strip()
        dirty = proc.run(["git", "-C", repo, "status", "--porcelain", "--untracked-files=no"],
                         timeout=30).stdout.strip() != ""
    except proc.ProcError:
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": dirty}


def package_versions() -> dict[str, str]:
    names = ["dbstudies", "numpy", "pandas", "pyarrow", "scipy", "matplotlib", "seaborn",
             "mysql-connector-python", "papermill", "nbconvert", "ipykernel"]
    out = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def host_facts(where: Path) -> dict[str, Any]:
    """CPU model, cores, memory, kernel and the filesystem a run's files live on."""
    model = None
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), None)
    mem_kib = None
    with contextlib.suppress(OSError, StopIteration), open("/proc/meminfo") as f:
        mem_kib = int(next(ln for ln in f if ln.startswith("MemTotal")).split()[1])
    try:
        fs = proc.run(["findmnt", "-n", "-o", "FSTYPE,SOURCE", "--target", where], timeout=30).stdout.strip()
    except proc.ProcError:
        fs = None
    return {"hostname": platform.node(), "cpu_model": model, "cpus": os.cpu_count(),
            "cpus_usable": len(os.sched_getaffinity(0)), "memory_gib": round(mem_kib / 2**20, 1) if mem_kib else None,
            "kernel": platform.release(), "os": _os_release(), "filesystem": fs,
            "storage": storage_facts(where)}


def storage_facts(where: Path) -> dict[str, Any]:
    """The storage `where` is on: filesystem and its mount options, block device, whether
    the kernel calls it rotational, its model and size (empty fields where unknown; a
    virtual disk may call itself rotational whatever is behind it)."""
    out: dict[str, Any] = {"filesystem": None, "mount_options": None, "device": None,
                           "rotational": None, "model": None, "size_gib": None}
    with contextlib.suppress(proc.ProcError):
        line = proc.run(["findmnt", "-n", "-o", "FSTYPE,OPTIONS", "--target", where],
                        timeout=30).stdout.split()
        out["filesystem"], out["mount_options"] = (line + [None, None])[:2]
    with contextlib.suppress(OSError):
        dev = os.stat(where).st_dev
        block = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}").resolve()
        disk = block if (block / "queue").exists() else block.parent  # a partition's disk
        out["device"] = block.name

        def read(name: str) -> str | None:
            with contextlib.suppress(OSError):
                return (disk / name).read_text().strip()
            return None
        rotational, size = read("queue/rotational"), read("size")
        out["rotational"] = None if rotational is None else rotational == "1"
        out["model"] = read("device/model")
        out["size_gib"] = round(int(size) * 512 / 2**30, 1) if size else None
    return out


def _os_release() -> str | None:
    with contextlib.suppress(OSError), open("/etc/os-release") as f:
        for line in f:
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    return None
