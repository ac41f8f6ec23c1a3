"""The run store: data/runs/<study>/<run-id>/ with metadata.json and Parquet tables — the
one module that knows a run directory's layout, and reads measurements back (`measured`;
how far a run got: `progress`); the tables studies share are declared in `tables`.

A run directory is append-only: each measured step is written as a new Parquet part as
soon as it finishes, metadata.json is replaced atomically, nothing is ever edited in
place. Tables have columns declared once in code (`Table`) with a schema version. What
lives where in a run is `Run`'s to say (`notebook`, `report`, `figures`, `server_dir`,
`has_table` …): no other module spells a path inside a run.

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
import re
import secrets
from pathlib import Path
from typing import Any, Mapping

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..core import errors, paths
from . import params as P
from . import record
from .provenance import git_state, host_facts, package_versions, speed_probe
from .provenance import now as _now
from .schema import Table
from .tables import STEPS

STATUSES = ("running", "complete", "failed", "interrupted", "abandoned")
PROFILE_DIR = "profiles"    # in a run: the profiled steps' folded stacks


class NotARun(errors.StoreError, FileNotFoundError):
    """The directory does not exist or holds no metadata.json."""


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


def slug(label: str) -> str:
    """A folder name for a server named after its arm.

    >>> slug("mariadb-10.11 · pool-of-threads (A/A)")
    'mariadb-10.11-pool-of-threads-A-A'
    """
    return re.sub(r"[^A-Za-z0-9._]+", "-", label).strip("-")


def new_run_id(now: dt.datetime | None = None) -> str:
    """UTC timestamp + random suffix, e.g. 20261122T130355Z-3fa9c2."""
    now = now or dt.datetime.now(dt.timezone.utc)
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str, sort_keys=False) + "\n")
    os.replace(tmp, path)


RESERVE, RESERVE_BYTES = ".reserve", 8 << 20  # held while a run measures: a full disk still takes its end
VARIANTS = "variants"  # a run's re-analyses at other analysis parameters, a folder each


def variant_name(changed: Mapping[str, Any]) -> str:
    """The folder of a re-analysis, named by what it changed.

    >>> variant_name({"draw_threshold": 0.02}), variant_name({"b": "x y", "a": [1, 2]})
    ('draw_threshold=0.02', 'a=1-2,b=x-y')
    """
    def text(v: Any) -> str:
        return "-".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)
    return ",".join(f"{k}={re.sub(r'[^A-Za-z0-9._-]+', '-', text(v)).strip('-')}" for k, v in sorted(changed.items()))


def find_run(given: str | os.PathLike, here: Path | None = None) -> Path:
    """A run directory named as a user would: absolute, relative to `here` (a notebook's
    folder: the kernel's working directory), or relative to the repository (as the docs
    write `data/runs/…`) — the first that is a run. A clear error otherwise."""
    path = Path(given).expanduser()
    tries = [path] if path.is_absolute() else [Path(here or Path.cwd()) / path, paths.REPO / path]
    for p in tries:
        if (p / "metadata.json").is_file():
            return p.resolve()
    raise NotARun(f"run_dir {str(given)!r}: no run there (looked in "
                  + " and ".join(str(p) for p in tries) + "); a run directory holds metadata.json")


class Run:
    """One run directory. Create with `Run.create`, reopen with `Run.open`. A run opened as a
    `variant` (a re-analysis at other analysis parameters) reads the run's measurements and
    writes its notebook, report and figures into `variants/<variant>/`, never over the run's."""

    def __init__(self, path: Path, variant: str | None = None, *, as_it_is: bool = False):
        self.path = Path(path).absolute()  # a notebook executing on it runs elsewhere
        self.meta_path = self.path / "metadata.json"
        self.variant = variant
        self.as_it_is = as_it_is  # re-read at its own parameters: its figures are kept as they are
        self._observer: Any = None  # `watch_progress`
        self._parts: dict[Path, tuple[tuple[int, int], pd.DataFrame]] = {}  # `table`'s reads
        if not self.meta_path.exists():
            raise NotARun(f"{self.path} is not a run directory (no metadata.json)")

    def params(self, study: Any) -> Any:
        """The run's parameters as the `study`'s typed `Params` — the one reader of what a run
        recorded (`params.recorded`: old runs too, unvalidated); a variant's with what it changed."""
        given = P.written(self.metadata)
        given.update({k: v.get("variant") for name, changed in self.variants() if name == self.variant
                      for k, v in changed.items()})
        return P.recorded(study.Params, study.PROFILES, given)

    def as_variant(self, changed: Mapping[str, Any]) -> "Run":
        """This run re-analysed at the analysis parameters `changed` (name → the new value):
        its folder records what changed and when."""
        run = Run(self.path, variant_name(changed))
        run.output_dir.mkdir(parents=True, exist_ok=True)
        _write_json(run.output_dir / "variant.json", {
            "changed": {k: {"run": P.written(self.metadata).get(k), "variant": v}
                        for k, v in changed.items()},
            "created_at": _now()})
        return run

    def reread(self) -> "Run":
        """This ended run, re-analysed at its own analysis parameters: what the analysis
        shows is what the run already wrote, so it writes no figure it has (`as_it_is`)."""
        return Run(self.path, self.variant, as_it_is=True)

    def variants(self) -> list[tuple[str, dict[str, Any]]]:
        """(name, what it changed) of each re-analysis variant the run holds."""
        out = []
        for f in sorted((self.path / VARIANTS).glob("*/variant.json")):
            with contextlib.suppress(OSError, ValueError):
                out.append((f.parent.name, json.loads(f.read_text()).get("changed", {})))
        return out

    @property
    def output_dir(self) -> Path:
        """Where the analysis writes (notebook, report, figures): the run, or its variant's folder."""
        return self.path / VARIANTS / self.variant if self.variant else self.path

    @classmethod
    def create(cls, study: str, parameters: Mapping[str, Any], root: Path = paths.RUNS_DIR) -> "Run":
        path = Path(root) / study / new_run_id()
        path.mkdir(parents=True, exist_ok=False)
        with open(path / RESERVE, "wb") as f:  # room for the run's end, should its disk fill up
            os.posix_fallocate(f.fileno(), 0, RESERVE_BYTES)
        _write_json(path / "metadata.json", {
            "study": study, "run_id": path.name, "status": "running", "error": None,
            "parameters": dict(parameters), "created_at": _now(), "finished_at": None,
            "dbstudies": git_state(), "host": host_facts(path), "packages": package_versions(),
            "servers": [], "sysbench": {}, "tables": {},
        })
        return cls(path)

    @classmethod
    def open(cls, path: str | Path, variant: str | None = None) -> "Run":
        return cls(Path(path), variant)

    # -- metadata
    @property
    def metadata(self) -> dict[str, Any]:
        return json.loads(self.meta_path.read_text())

    @property
    def record(self) -> record.Record:
        """Its metadata, typed (`record.Record`): how every view reads a run."""
        return record.Record.of(self.metadata)

    @property
    def study(self) -> str:
        return self.record.study

    @property
    def status(self) -> str:
        return self.record.status

    def update(self, **fields: Any) -> None:
        """Replace top-level metadata fields (atomically)."""
        meta = self.metadata
        meta.update(fields)
        _write_json(self.meta_path, meta)

    def extend(self, key: str, items: list[Any]) -> None:
        """Add `items` to the metadata list `key` (servers, data …)."""
        self.update(**{key: [*(self.metadata.get(key) or []), *items]})

    def finish(self, status: str = "complete", error: str | None = None) -> None:
        if status not in STATUSES[1:]:
            raise errors.StoreError(f"status must be one of {STATUSES[1:]}, got {status!r}")
        (self.path / RESERVE).unlink(missing_ok=True)  # its room, for this record and the report
        host = dict(self.record.host.raw)
        if status != "abandoned":  # its own process, on its own host: how fast that host is now
            host = {**host, "loop_ms_end": speed_probe()}
        self.update(status=status, error=error, finished_at=_now(), host=host)

    # -- its layout
    @property
    def notebook(self) -> Path:
        """The executed notebook (papermill writes it while the run measures)."""
        return self.output_dir / "notebook.ipynb"

    def partial_notebook(self, status: str) -> Path:
        """Where the notebook of a run that ended `status` before its end is kept."""
        return self.path / f"notebook-{status}.ipynb"

    @property
    def report(self) -> Path:
        return self.output_dir / "report.html"

    @property
    def figures(self) -> Path:
        return self.output_dir / "figures"

    @property
    def servers_dir(self) -> Path:
        """Where the run's private servers keep their datadirs, sockets and logs."""
        return self.path / "server"

    def server_dir(self, name: str) -> Path:
        """The folder of the server called `name` (a flavour, or an arm: its `slug`)."""
        return self.servers_dir / slug(name)

    def file(self, relative: str | Path) -> Path:
        """A file the run's metadata or tables name relative to the run."""
        return self.path / relative

    def folder(self, name: str) -> Path:
        """A folder of the run's own (`profiles`, `workloads`, a sweep's marker …)."""
        return self.path / name

    def has_table(self, table: Table | str) -> bool:
        """Whether anything of `table` was written (a part, or a step's stream)."""
        return (self.path / "tables" / (table if isinstance(table, str) else table.name)).exists()

    def has_tables(self) -> bool:
        """Whether any table was written: the run holds measurements."""
        return (self.path / "tables").exists()

    def table_names(self) -> list[str]:
        return sorted(p.name for p in (self.path / "tables").glob("*") if p.is_dir())

    # -- progress (what `dbstudies run` shows in the terminal while a kernel measures)
    def set_progress(self, done: int, total: int, now: str = "") -> None:
        """Record how far the measurement is (`progress`); tell `watch_progress`'s observer."""
        _write_json(self.path / "progress.json", {"done": done, "total": total, "now": now})
        if self._observer is not None:
            self._observer(done, total, now)

    def watch_progress(self, observer: Any) -> None:
        """Call `observer(done, total, now)` at each `set_progress` of this object (None: stop)."""
        self._observer = observer

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
        tables = dict(self.record.tables)
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
        frames = [self._part(p) for p in sorted(folder.glob("part-*.parquet"))]
        for path in sorted(folder.glob("stream-*.jsonl")):
            rows = Stream.read(path)
            if not rows.empty:
                frames.append(table.conform(rows) if isinstance(table, Table) else rows)
        if not frames:
            if isinstance(table, Table):
                return pd.DataFrame({c: pd.Series(dtype=t) for c, t in table.columns.items()})
            raise errors.StoreError(f"run {self.path.name} has no table {name}")
        return pd.concat(frames, ignore_index=True)

    def _part(self, path: Path) -> pd.DataFrame:
        """One Parquet part, read once: a part is written whole and never changed (`append`),
        and an analysis reads the same tables many times (the steps table a dozen)."""
        st = path.stat()
        stamp = (st.st_mtime_ns, st.st_size)
        kept = self._parts.get(path)
        if kept is None or kept[0] != stamp:
            kept = self._parts[path] = (stamp, pd.read_parquet(path))
        return kept[1]

    def newest_part(self, table: Table | str) -> pd.DataFrame:
        """The part of a table written last (the step stored last; empty: none yet)."""
        name = table if isinstance(table, str) else table.name
        parts = sorted((self.path / "tables" / name).glob("part-*.parquet"))
        return pd.read_parquet(parts[-1]) if parts else pd.DataFrame()

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r})"


def is_run(path: str | Path) -> bool:
    """Whether `path` is a run directory (it holds metadata.json)."""
    return (Path(path) / "metadata.json").exists()


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


# ---------------------------------------------------------------- reading measurements back

def finished_steps(run: Run) -> bool:
    """Whether the run holds a finished sysbench step (measured, warm-up or busy)."""
    return run.has_table(STEPS)


def measured(run: Run) -> pd.DataFrame:
    """The measured steps (warm-ups and discarded busy attempts dropped), each with
    `remeasured`: how many attempts at it were discarded because the host was busy."""
    steps = run.table(STEPS)
    keys = ["repeat", "arm", "workload", "threads"]
    retried = steps[steps["phase"] == "busy"].groupby(keys).size().rename("remeasured")
    out = steps[steps["phase"] == "measure"].merge(retried.reset_index(), on=keys, how="left")
    return out.assign(remeasured=out["remeasured"].fillna(0).astype("int64"))
