"""JupyterLab as `make lab` (`dbstudies lab`) runs it: the study notebooks stay clean.

JupyterLab saves what is on screen — every output, and the parameters a researcher edited —
and autosaves it every two minutes. Opened straight from notebooks/, that would write into the
tracked study notebooks. `WorkingCopies` is the server's contents manager instead: a study
notebook (`notebooks/<study>.ipynb`) is read from, and saved to, a working copy under
`data/lab/` once it has been saved there; the tracked file is never written. Nothing else
changes for the user: the notebook keeps its name and folder, so the kernel still runs in
notebooks/ and relative paths mean what they meant. Deleting the notebook in JupyterLab
deletes the working copy: the tracked notebook is back. (Why not a git filter that strips
outputs? It needs every clone configured, and it would still let edited parameters through.)
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from tornado import web
from traitlets import Unicode

from . import paths

WORKING_DIR = paths.DATA_DIR / "lab"


def tracked() -> set[str]:
    """The study notebooks' names (`notebooks/*.ipynb`)."""
    return {p.name for p in paths.NOTEBOOKS_DIR.glob("*.ipynb")}


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

    async def save(self, model: dict, path: str = "") -> dict:
        copy = self._copy(path)
        if copy is not None and not copy.exists():  # the first save: the copy takes over
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(Path(self.root_dir) / path.strip("/"), copy)
        return await super().save(model, path)

    async def delete_file(self, path: str) -> None:
        copy = self._copy(path)
        if copy is not None:
            if not copy.exists():
                raise web.HTTPError(403, f"{path} is a tracked study notebook: nothing to delete "
                                         "(its working copy, once saved, can be)")
            copy.unlink()  # back to the tracked notebook
            return
        await super().delete_file(path)

    async def rename_file(self, old_path: str, new_path: str) -> None:
        if self._copy(old_path) is not None or self._copy(new_path) is not None:
            raise web.HTTPError(403, "the study notebooks keep their names: save a copy under "
                                     "another name instead (File › Save Notebook As…)")
        await super().rename_file(old_path, new_path)


def argv(port: int | None = None, token: str | None = None, browser: bool = False,
         working_dir: Path = WORKING_DIR) -> list[str]:
    """The `jupyter lab` command `make lab` runs: on notebooks/, the study notebooks in
    working copies (`working_dir`), listening on 127.0.0.1."""
    args = [str(Path(sys.prefix) / "bin" / "jupyter"), "lab", f"--notebook-dir={paths.NOTEBOOKS_DIR}",
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
