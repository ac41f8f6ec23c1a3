"""report.html: the executed notebook with code hidden, under a header built from the run's
metadata (`described.header`) — what was measured where, with which parameters, and how the
run ended. A run that did not complete gets a banner with its status and error, and error
outputs (tracebacks) are left out of the page; so is a section that shows nothing. Absolute
paths of this machine are written relative to the repository (or to the run directory).
"""
from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from ..core import paths
from ..core.errors import DbStudiesError
from ..store.results import Run
from . import css
from .described import header
from .shown import CONCLUSION, FIRST, SKIP


def scrub_paths(text: str, run: Run) -> str:
    """Absolute paths of this machine → relative to the repository (a run kept elsewhere:
    `…/<study>/<run-id>`; a server's socket directory: `dbs-…`).

    >>> run = type("R", (), {"path": Path("/elsewhere/runs/tp/20260101T000000Z-abcdef")})()
    >>> scrub_paths(f"at {paths.REPO}/data/x, {run.path}/server and /tmp/dbs-1a2b/s.sock", run)
    'at data/x, …/tp/20260101T000000Z-abcdef/server and dbs-…/s.sock'
    """
    run_dir, repo = Path(run.path).resolve(), paths.REPO.resolve()
    if not run_dir.is_relative_to(repo):
        text = text.replace(str(run_dir), f"…/{run_dir.parent.name}/{run_dir.name}")
    text = text.replace(str(repo) + "/", "").replace(str(repo), ".")
    return re.sub(r"/tmp/dbs-[0-9a-f]+", "dbs-…", text)


def _alt_texts(body: str, nb: Any) -> str:
    """nbconvert's lab template ignores the images' `alt` metadata (plots.publish sets it):
    put each PNG output's alt text on its <img>, in document order."""
    alts = iter([o.get("metadata", {}).get("image/png", {}).get("alt")
                 for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                 if "image/png" in o.get("data", {})])
    return re.sub(r"<img(?![^>]*\balt=)",
                  lambda m: f'<img alt="{html.escape(next(alts, None) or "figure", quote=True)}"', body)


# what the keyboard can reach (an output may scroll), as nbconvert's own pass marks it
_FOCUSABLE = re.compile(r'(<div class="[^"]*\bjp-(?:OutputArea-output|Cell-inputWrapper)\b[^"]*")')


def _page(nb: Any) -> str:
    """The notebook as an HTML page without its code: nbconvert's lab template, without the
    exporter's last pass — it parses the whole page again with BeautifulSoup (0.6 CPU-s a report
    here, more than the template) only to give images without an alt text a placeholder and
    make cells and outputs focusable; `_alt_texts` and `_FOCUSABLE` do both on the text."""
    from nbconvert import HTMLExporter
    from nbconvert.exporters.templateexporter import TemplateExporter
    from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

    class Page(HTMLExporter):
        def from_notebook_node(self, nb, resources=None, **kw):  # noqa: ANN001 - nbconvert's signature
            resources = self._init_resources(resources)
            self.register_filter("highlight_code", html.escape)  # no input is shown
            self.register_filter("filter_data_type", WidgetsDataTypeFilter(
                notebook_metadata=self._nb_metadata, parent=self, resources=resources))
            return TemplateExporter.from_notebook_node(self, nb, resources, **kw)

    body, _ = Page(exclude_input=True, exclude_input_prompt=True,
                   exclude_output_prompt=True).from_notebook_node(nb)
    return _FOCUSABLE.sub(r'\1 tabindex="0"', _alt_texts(body, nb))


PAPERMILL_ERROR = "papermill-error-cell-tag"  # the cells papermill adds around a failure


def prune(nb: Any) -> tuple[str, str] | None:
    """Make an executed notebook a report: papermill's error cells, tracebacks, stderr and
    `skip` notes removed; the notebook cut after a cell that raised (what follows never
    ran); a caption (a text cell before a code cell) without its output and a section (a
    heading and what follows up to the next heading as high) whose code cells show nothing
    left out. Returns (the section's heading, "Error: message") where the analysis stopped."""
    cells = [c for c in nb.cells if PAPERMILL_ERROR not in c.metadata.get("tags", [])]
    stopped, section = None, ""
    for i, cell in enumerate(cells):
        if cell.cell_type == "markdown" and _level(cell):
            section = cell.source.lstrip("#").splitlines()[0].strip()
        error = next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)
        if error is not None:
            stopped, cells = (section, f"{error.get('ename')}: {error.get('evalue')}"), cells[:i + 1]
            break
    for cell in cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.get("outputs", []) if o.get("output_type") != "error"
                            and not (o.get("output_type") == "stream" and o.get("name") == "stderr")
                            and not o.get("metadata", {}).get(SKIP)]
    shown = [c.cell_type == "markdown" or bool(c.outputs) for c in cells]
    for i, cell in enumerate(cells):  # captions of nothing
        if cell.cell_type == "markdown" and not _level(cell) and i + 1 < len(cells) \
                and cells[i + 1].cell_type == "code" and not shown[i + 1]:
            shown[i] = False
    for i, cell in enumerate(cells):  # sections showing nothing
        if cell.cell_type == "markdown" and _level(cell) > 1:
            end = next((j for j in range(i + 1, len(cells)) if 0 < _level(cells[j]) <= _level(cell)),
                       len(cells))
            if not any(shown[j] for j in range(i + 1, end) if cells[j].cell_type == "code"):
                shown[i:end] = [False] * (end - i)
    nb.cells = [c for c, keep in zip(cells, shown) if keep]
    return stopped


def _level(cell: Any) -> int:
    """The heading level of a text cell that starts with one (## → 2), else 0."""
    if cell.cell_type != "markdown":
        return 0
    m = re.match(r"(#{1,6})\s", cell.source)
    return len(m.group(1)) if m else 0


def first_outputs(nb: Any) -> str:
    """Take out of the notebook what it marked to open the report (`shown.first`), in order,
    as HTML: its HTML where it has one, else its Markdown rendered as nbconvert renders it."""
    from nbconvert.filters.markdown import markdown2html

    parts = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for out in cell.get("outputs", []):
            if not out.get("metadata", {}).get(FIRST):
                kept.append(out)
                continue
            data = out.get("data", {})
            parts.append(data.get("text/html") or markdown2html(data.get("text/markdown") or ""))
        cell.outputs = kept
    return f"<section class='dbs-first jp-RenderedHTMLCommon'>{''.join(parts)}</section>" if parts else ""


def render(run: Run) -> Path:
    """Write report.html from the run's executed notebook: header, then the notebook's
    outputs without code, progress bars or tracebacks."""
    import nbformat

    nb_path = run.notebook
    if not nb_path.exists():
        raise DbStudiesError(f"{run.path} has no executed notebook (notebook.ipynb) to render")
    nb = nbformat.read(nb_path, as_version=4)
    stopped = prune(nb)
    opening = first_outputs(nb)
    r = run.record
    nb.metadata.title = f"{r.study} — run {r.run_id}"  # the page's
    body = css.prune_page(css.offline(_page(nb)))
    body = body.replace("</head>", css.STYLE + "</head>", 1)
    # under the notebook's title (its first heading), else at the top of the page
    where = r"(</h1>)" if "</h1>" in body else r"(<body[^>]*>)"
    top, folded = header(run, stopped)
    body = re.sub(where, lambda m: m.group(1) + top + opening + folded, body, count=1)
    out = run.report
    out.write_text(scrub_paths(body, run))
    return out


def plain(markdown: str) -> str:
    """Markdown as a terminal prints it: no emphasis marks, code spans or link targets.

    >>> plain("- **QPS** (2 cells): *the same* in `x`, 2 * 3, [docs](d.md)")
    '- QPS (2 cells): the same in x, 2 * 3, docs'
    """
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", markdown)
    text = re.sub(r"\*\*(.+?)\*\*", r"\1", text)
    text = re.sub(r"(?<![\w*])\*(?=\S)(.+?)(?<=\S)\*(?![\w*])", r"\1", text)
    return text.replace("`", "")


TERMINAL = "The answer"  # the heading `dbstudies run` prints the answer under (`terminal_text`)


def terminal_text(parts: list[str]) -> str:
    """What `dbstudies run` ends with (before the report's path): the answer its notebook
    marked to be printed (`printed`: the glance's lines, the lead words), in plain text under
    one heading. The README quotes exactly this (`generated.excerpt`)."""
    return f"{TERMINAL}\n\n" + plain("\n\n".join(parts))


def printed(nb_path: Path) -> list[str]:
    """What an executed notebook marked to be printed (Markdown, every marked output in
    order: the glance's lines and the lead words; a replication's answer); [] when it has
    none or cannot be read."""
    import nbformat
    try:
        nb = nbformat.read(nb_path, as_version=4)
    except (OSError, ValueError):
        return []
    return [out.get("data", {}).get("text/markdown") or ""
            for cell in nb.cells if cell.cell_type == "code"
            for out in cell.get("outputs", []) if out.get("metadata", {}).get(CONCLUSION)]


def conclusion_text(nb_path: Path) -> str | None:
    """`printed` as one Markdown text, or None."""
    said = printed(nb_path)
    return "\n\n".join(said) if said else None


def page(out: Path, title: str, parts: list[str]) -> Path:
    """A page of our own beside the runs' reports — a build series' history, a sweep's index:
    `parts` (HTML) under the reports' style sheet, written to `out`."""
    out.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
                   f"{css.STYLE}</head><body class='dbs-header'>" + "\n".join(parts) + "</body></html>\n")
    return out


def inline_html(text: str) -> str:
    """A line of our Markdown on such a page: **bold** as <b>, the rest escaped.

    >>> inline_html("**5 % slower** at b6 < b7")
    '<b>5 % slower</b> at b6 &lt; b7'
    """
    bits = html.escape(text).split("**")
    return "".join(f"<b>{b}</b>" if i % 2 else b for i, b in enumerate(bits))
