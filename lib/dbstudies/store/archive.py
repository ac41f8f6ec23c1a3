"""A run as one file to share: `pack` writes a run directory — tables, metadata, notebook,
report, figures, its copies of the user's workload scripts, each server's my.cnf and error
log — into one `.tar.gz` (never a datadir); `open_run` opens a run directory *or* such an
archive, which it unpacks once under data/unpacked/ (checked against the archive's own
manifest of SHA-256s), so every command that reads a run reads an archive the same way. A
sweep's worker sends its finished run back in the same form (`packed`, `received`).

    path = pack(Run.open("data/runs/thread_pool/20261126T211644Z-f2875f"))
    run = open_run(path)          # the same Run, read from data/unpacked/<sha>/<run-id>/
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tarfile
from pathlib import Path
from typing import BinaryIO, Callable

from ..core import errors, paths
from .results import NotARun, Run, find_run

SUFFIX = ".run.tar.gz"
MANIFEST = "MANIFEST.json"           # in the archive, beside the run's folder
UNPACKED = paths.DATA_DIR / "unpacked"
PACKS = paths.DATA_DIR / "packs"
LEFT_OUT = ("datadir", "tmp", "__pycache__", ".ipynb_checkpoints", ".unpacked")  # never packed: servers' data, scratch


class ArchiveError(errors.StoreError):
    """An archive that is not a packed run, or whose files do not match its manifest."""


def is_archive(path: str | os.PathLike) -> bool:
    """Whether `path` names a packed run (a file ending in .run.tar.gz, or any .tar.gz)."""
    p = Path(path)
    return p.is_file() and (p.name.endswith(SUFFIX) or p.name.endswith(".tar.gz"))


def packed_files(run: Run | Path) -> list[Path]:
    """The files of a run (or a folder of runs) that its archive holds (relative to it),
    sorted: everything but the servers' datadirs and scratch folders."""
    top = run.path if isinstance(run, Run) else Path(run)
    out = []
    for f in sorted(top.rglob("*")):
        rel = f.relative_to(top)
        if f.is_file() and not f.is_symlink() and not any(part in LEFT_OUT for part in rel.parts):
            out.append(rel)
    return out


def pack_folder(top: Path, kind: str, out: Path | None = None) -> Path:
    """A folder of runs and what was made of them (a series: `dbstudies pack data/series/NAME`)
    as one archive (default data/packs/<kind>-<folder>.<kind>.tar.gz): the folder under its name
    and MANIFEST.json (kind, folder, every file's size and SHA-256; no datadir). A run in it
    still running cannot be packed; nothing is left behind when it cannot be written. Extracted
    (`tar xzf`), every run in it is a run directory again."""
    top = Path(top).resolve()
    running = [m.parent.name for m in top.rglob("metadata.json")
               if not any(part in LEFT_OUT for part in m.relative_to(top).parts) and Run(m.parent).status == "running"]
    if running:
        raise ArchiveError(f"{top.name}: run {running[0]} is still running: pack it when it has ended")
    name = f"{kind}-{top.name}.{kind}.tar.gz"
    out = Path(out) / name if out and Path(out).is_dir() else Path(out) if out else PACKS / name
    return _save(out, lambda f: _tar(top, {"kind": kind, "folder": top.name}, f))


def pack(run: Run, out: Path | None = None) -> Path:
    """Write `run` as one archive (default: data/packs/<study>-<run-id>.run.tar.gz; `out` an
    existing folder: that name in it): its folder under its run id, and MANIFEST.json (the
    study, run id, status, and every file's size and SHA-256). A running run cannot be packed;
    a place that cannot be written is one line (an ArchiveError), and nothing is left behind."""
    name = f"{run.study.replace(os.sep, '_')}-{run.path.name}{SUFFIX}"
    out = Path(out) / name if out and Path(out).is_dir() else Path(out) if out else PACKS / name
    return _save(out, lambda f: _write(run, f))


def _save(out: Path, write: Callable[[BinaryIO], None]) -> Path:
    """`write` an archive into `out` through a part file: all of it, or nothing and one line."""
    part = out.with_name(out.name + ".part")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(part, "wb") as f:
            write(f)
        part.replace(out)
    except OSError as e:
        raise ArchiveError(f"cannot write {out}: {e.strerror or e}") from None
    finally:
        with contextlib.suppress(OSError):
            part.unlink(missing_ok=True)
    return out


def packed(run: Run) -> bytes:
    """`run`'s archive as bytes, as `pack` writes it (what a sweep's worker sends back)."""
    buf = io.BytesIO()
    _write(run, buf)
    return buf.getvalue()


def _write(run: Run, f: BinaryIO) -> None:
    if run.status == "running":
        raise ArchiveError(f"run {run.path.name} is still running: pack it when it has ended")
    _tar(run.path, {"study": run.study, "run_id": run.path.name, "status": run.status}, f)


def _tar(top: Path, head: dict, f: BinaryIO) -> None:
    """`top`'s packed files under its name, after MANIFEST.json: `head` and every file's size
    and SHA-256."""
    files = packed_files(top)
    manifest = {**head, "files": {str(r): {"bytes": (top / r).stat().st_size, "sha256": paths.sha256(top / r)}
                                  for r in files}}
    with tarfile.open(fileobj=f, mode="w:gz") as tar:
        data = json.dumps(manifest, indent=1).encode()
        info = tarfile.TarInfo(MANIFEST)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        for rel in files:
            tar.add(top / rel, arcname=f"{top.name}/{rel}", recursive=False)


def _open(archive: Path | bytes) -> tarfile.TarFile:
    return (tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") if isinstance(archive, bytes)
            else tarfile.open(archive, "r:gz"))


def manifest(archive: Path | bytes) -> dict:
    """An archive's manifest (a clear error for a file that is no packed run)."""
    try:
        with _open(archive) as tar:
            member = tar.extractfile(MANIFEST)
            return json.loads(member.read())
    except (tarfile.TarError, KeyError, OSError, ValueError) as e:
        raise ArchiveError(f"{_name(archive)}: not a packed run ({e}); `dbstudies pack RUN` writes one") from None


def _name(archive: Path | bytes) -> str:
    return "a packed run received" if isinstance(archive, bytes) else str(archive)


def unpack(archive: Path, root: Path | None = None) -> Run:
    """The run an archive holds, unpacked once under `root`/<its SHA-256's first 16 hex
    digits>/<run-id>/ and each file checked against the manifest before it is used."""
    archive = Path(archive).expanduser().resolve()
    where = Path(root or UNPACKED) / paths.sha256(archive)[:16]
    run_dir = where / manifest(archive)["run_id"]
    if not (run_dir / ".unpacked").exists():
        shutil.rmtree(where, ignore_errors=True)
        _extract(archive, where)
        (run_dir / ".unpacked").write_text(str(archive) + "\n")
    return Run(run_dir)


def received(archive: bytes, into: Path) -> Path:
    """The run a packed run's bytes hold (a sweep's worker sent them), extracted under `into`
    and checked against its manifest; never over a run there already."""
    target = Path(into) / manifest(archive)["run_id"]
    if target.exists():
        raise ArchiveError(f"{target} exists already; runs are never overwritten")
    return _extract(archive, Path(into))


def _extract(archive: Path | bytes, where: Path) -> Path:
    """Extract the run folder an archive holds under `where`, every file checked against the
    manifest (nothing else in the archive taken); returns the run's folder."""
    man = manifest(archive)
    where.mkdir(parents=True, exist_ok=True)
    with _open(archive) as tar:
        members = [m for m in tar.getmembers() if m.name != MANIFEST]
        stray = [m.name for m in members if not m.name.startswith(man["run_id"] + "/") or not m.isfile()]
        if stray:
            raise ArchiveError(f"{_name(archive)}: holds what a packed run does not ({stray[0]})")
        tar.extractall(where, members=members, filter="data")
    run_dir = where / man["run_id"]
    for rel, facts in man["files"].items():
        f = run_dir / rel
        if not f.is_file() or paths.sha256(f) != facts["sha256"]:
            raise ArchiveError(f"{_name(archive)}: {rel} is missing or differs from its manifest (SHA-256)")
    return run_dir


def locate(given: str | os.PathLike, here: Path | None = None) -> Path:
    """The packed run or run directory `given` names as a user would — absolute, relative to
    `here` (default: the working directory) or to the repository (`results.find_run`) —, as an
    absolute path."""
    path = Path(given).expanduser()
    candidates = [path] if path.is_absolute() else [Path(here or Path.cwd()) / path, paths.REPO / path]
    for p in candidates:
        if is_archive(p):
            return p.resolve()
    try:
        return find_run(given, here)
    except NotARun:
        raise NotARun(f"{given}: neither a run directory (one holds metadata.json) nor a packed run "
                      f"(a file ending in {SUFFIX}, `dbstudies pack`) — looked in "
                      + " and ".join(str(p) for p in candidates)) from None


def open_run(given: str | os.PathLike, here: Path | None = None) -> Run:
    """A run named as a user would (`locate`): a run directory, or a packed run unpacked."""
    path = locate(given, here)
    return unpack(path) if is_archive(path) else Run(path)


def clear_copies(keep: set[str] = frozenset(), root: Path | None = None) -> list[tuple[Path, int]]:
    """Remove the unpacked copies under `root` (default data/unpacked) whose archive is still
    where it was opened — the next open unpacks it again —, but not those of the archives in
    `keep` (a replication measuring from one) nor one whose archive is gone (it is the only
    copy left): [(folder, bytes freed)]."""
    removed = []
    for marker in sorted(Path(root or UNPACKED).glob("*/*/.unpacked")):
        source = origin(Run(marker.parent))
        if source in keep or not Path(source).is_file():
            continue
        folder = marker.parent.parent
        size = paths.disk_usage(folder)
        shutil.rmtree(folder, ignore_errors=True)
        removed.append((folder, size))
    return removed


def origin(run: Run) -> str | None:
    """The archive an unpacked run came from (None for a run measured here)."""
    marker = run.path / ".unpacked"
    return marker.read_text().strip() if marker.is_file() else None
