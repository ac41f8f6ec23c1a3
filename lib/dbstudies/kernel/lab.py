"""JupyterLab as `make lab` (`dbstudies lab`) runs it: the study notebooks stay clean.

JupyterLab saves what is on screen — every output, and the parameters a researcher edited —
and autosaves it every two minutes. Opened straight from notebooks/, that would write into the
tracked study notebooks. `WorkingCopies` is the server's contents manager instead: a study
notebook (`notebooks/<study>.ipynb`) is read from, and saved to, a working copy under
`data/lab/` once a save changes a cell (a notebook only opened — the kernel fills in its
`language_info` and JupyterLab then autosaves it — makes none); the tracked file is never
written. The copy records the study notebook it was made from (`origin_of`); when that has
changed since, the copy opens with a note saying so and how to go back (`behind`). Nothing else
changes for the user: the notebook keeps its name and folder, so the kernel still runs in
notebooks/ and relative paths mean what they meant. Deleting the notebook in JupyterLab
deletes the working copy: the tracked notebook is back. (Why not a git filter that strips
outputs? It needs every clone configured, and it would still let edited parameters through.)
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import nbformat
from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from tornado import web
from traitlets import Unicode

from ..core import paths

WORKING_DIR = paths.DATA_DIR / "lab"


NOTICE = "dbstudies-notice"  # the tag of the cell that says a working copy is behind its study notebook


def tracked() -> set[str]:
    """The study notebooks' names (`notebooks/*.ipynb`)."""
    return {p.name for p in paths.NOTEBOOKS_DIR.glob("*.ipynb")}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def origin_of(copy: Path) -> Path:
    """Where a working copy records the study notebook it was made from (its sha256, when)."""
    return copy.with_name(f".{copy.name}.origin.json")


def cells_of(nb: Any) -> list[tuple[str, str, Any]]:
    """What a researcher changes in a notebook: each cell's type, source and outputs (not the
    metadata a kernel or JupyterLab fills in on opening: language_info, trust, ids)."""
    return [(c["cell_type"], c["source"] if isinstance(c["source"], str) else "".join(c["source"]),
             c.get("outputs") or []) for c in nb["cells"]]


def same_cells(content: Any, tracked_file: Path) -> bool:
    """Whether a notebook model's cells are the study notebook's, unchanged."""
    return cells_of(nbformat.from_dict(content)) == cells_of(nbformat.read(tracked_file, as_version=4))


def without_notice(content: Any) -> Any:
    """A notebook model's content without the notice `get` put in (never saved)."""
    nb = nbformat.from_dict(content)
    nb.cells = [c for c in nb.cells if NOTICE not in c.get("metadata", {}).get("tags", [])]
    return nb


def behind(tracked_file: Path, copy: Path) -> str | None:
    """The notice for a working copy whose study notebook changed after it was made (None: it
    did not) — with the way back."""
    try:
        origin = json.loads(origin_of(copy).read_text())
        changed, made = origin["sha256"] != sha256(tracked_file), f"made {origin['copied_at']}"
    except (OSError, ValueError, KeyError):  # a copy from before origins were recorded
        changed, made = tracked_file.stat().st_mtime > copy.stat().st_mtime, "older than it"
    if not changed:
        return None
    where = copy.relative_to(paths.REPO) if copy.is_relative_to(paths.REPO) else copy
    return (f"**This is your working copy** (`{where}`, {made}), and the study's notebook "
            f"`notebooks/{tracked_file.name}` has changed since: the changes are not in this copy. To go back to "
            "the study's notebook, save anything you want to keep elsewhere, then delete this notebook in the file "
            "browser (right click › Delete: only the working copy goes) and open it again. *(This note is not saved.)*")


class WorkingCopies(AsyncLargeFileManager):
    """A contents manager on notebooks/ whose study notebooks live in working copies."""

    working_dir = Unicode(str(WORKING_DIR), config=True,
                          help="where the study notebooks' working copies are saved")

    def _copy(self, path: str) -> Path | None:
        """The working copy of the API `path` if it names a study notebook, else None."""
        name = path.strip("/")
        mine = name in tracked() and (Path(self.root_dir) / name).is_file()
        return Path(self.working_dir) / name if mine else None

    def _get_os_path(self, path: str) -> str:
        copy = self._copy(path)
        if copy is not None and copy.exists():
            return str(copy)
        return super()._get_os_path(path)

    def _base_model(self, path: str) -> dict:
        if self._copy(path) is None or not self._copy(path).exists():
            return super()._base_model(path)
        hidden, self.allow_hidden = self.allow_hidden, True  # the copy lies outside root_dir, which
        try:                                                 # the hidden-file check cannot judge
            return super()._base_model(path)
        finally:
            self.allow_hidden = hidden

    async def is_hidden(self, path: str) -> bool:
        return False if self._copy(path) is not None else await super().is_hidden(path)

    async def get(self, path: str, content: bool = True, type: str | None = None, format: str | None = None,
                  require_hash: bool = False) -> dict:
        model = await super().get(path, content=content, type=type, format=format, require_hash=require_hash)
        copy = self._copy(path)
        if content and model.get("type") == "notebook" and copy is not None and copy.exists():
            note = behind(Path(self.root_dir) / path.strip("/"), copy)
            if note:
                model["content"].cells.insert(0, nbformat.v4.new_markdown_cell(
                    note, metadata={"tags": [NOTICE], "editable": False}))
        return model

    async def save(self, model: dict, path: str = "") -> dict:
        copy = self._copy(path)
        if copy is not None and model.get("type") == "notebook":
            model = {**model, "content": without_notice(model["content"])}
            tracked_file = Path(self.root_dir) / path.strip("/")
            if not copy.exists():
                if same_cells(model["content"], tracked_file):  # opened, not changed: nothing to keep
                    return await super().get(path, content=False)
                copy.parent.mkdir(parents=True, exist_ok=True)  # the first change: the copy takes over
                shutil.copy2(tracked_file, copy)
                origin_of(copy).write_text(json.dumps({"tracked": str(tracked_file), "sha256": sha256(tracked_file),
                                                       "copied_at": time.strftime("%Y-%m-%d %H:%M")}))
        return await super().save(model, path)

    async def delete_file(self, path: str) -> None:
        copy = self._copy(path)
        if copy is not None:
            if not copy.exists():
                raise web.HTTPError(403, f"{path} is a tracked study notebook: nothing to delete "
                                         "(its working copy, once saved, can be)")
            copy.unlink()  # back to the tracked notebook
            origin_of(copy).unlink(missing_ok=True)
            return
        await super().delete_file(path)

    async def rename_file(self, old_path: str, new_path: str) -> None:
        if self._copy(old_path) is not None or self._copy(new_path) is not None:
            raise web.HTTPError(403, "the study notebooks keep their names: save a copy under "
                                     "another name instead (File › Save Notebook As…)")
        await super().rename_file(old_path, new_path)


def argv(port: int | None = None, token: str | None = None, browser: bool = False,
         working_dir: Path = WORKING_DIR, notebook_dir: Path = paths.NOTEBOOKS_DIR) -> list[str]:
    """The `jupyter lab` command `make lab` runs: on notebooks/ (`notebook_dir`), the study
    notebooks in working copies (`working_dir`), listening on 127.0.0.1."""
    args = [str(Path(sys.prefix) / "bin" / "jupyter"), "lab", f"--notebook-dir={notebook_dir}",
            "--ServerApp.contents_manager_class=dbstudies.lab.WorkingCopies",
            f"--WorkingCopies.working_dir={working_dir}", "--ip=127.0.0.1", "--allow-root"]
    if port is not None:
        args.append(f"--port={port}")
    if token is not None:
        args.append(f"--IdentityProvider.token={token}")
    if not browser:
        args.append("--no-browser")
    return args


def main(port: int | None = None) -> int:
    """`dbstudies lab`: replace this process with JupyterLab (`argv`)."""
    args = argv(port)
    print(f"dbstudies: JupyterLab on notebooks/; what you save of a study notebook goes to "
          f"{WORKING_DIR.relative_to(paths.REPO)}/ (delete it there, or the notebook in JupyterLab, "
          "to start again from the study's own)", flush=True)
    os.execv(args[0], args)
    return 0  # not reached
