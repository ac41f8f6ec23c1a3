"""The report's answer: the glance, the grid, the lead words, the verdict table, the rest in words, the
conclusion — and the notebook's last cell."""

from __future__ import annotations

from ..analysis.said import answer_text, glance_markdown, tldr, verdict_summary
from ..kit.contract import Answer
from ..measure import ownership
from ..store.results import Run
from . import replicated
from .glance import glance, grid
from .shown import SKIP, fill_here, first, note, table


def answer(said: Answer, run: Run | None = None) -> None:
    """The report's answer, the same for every study, in the order a busy reader wants it:
    at a glance — a line per comparison of the grid (`said.tldr`, at most eight) and the grid, a row per cell and a column
    per comparison, each effect with its interval coloured by its word (`grid`) —, the lead
    comparisons in words (those three open the report: `shown.first`), then the verdicts in
    one short table (`said.verdict_summary`), every other comparison, the source's
    claims and the caveats in words, and the study's conclusion (Markdown, computed from the
    tables). `dbstudies run` prints the glance's lines and the lead words, in plain text."""
    from IPython.display import display
    lines = tldr(said, run)
    if lines:
        first(glance_markdown(lines), printed=True)
    at_a_glance = grid(said)
    first(html=at_a_glance)
    fill_here(glance(lines, at_a_glance, "The answer in words, the tables and figures: the Answer section below"))
    words = answer_text(said, run)
    if words.lead:
        first(words.lead, printed=True)
    verdicts = verdict_summary(said)
    if len(verdicts):
        display(table(verdicts))
    note(words.more)  # the report's, not the terminal's: `dbstudies run` prints what opens it
    note(words.conclusion)
    if run is not None:
        replicated.section(run)  # a replication: did the original's answer hold here?


def finish(run: Run, said: Answer) -> None:
    """A study notebook's last cell: the run's end recorded (`ownership.finish`: complete, if
    this notebook measured it), the answer at a glance again — Run All leaves the view here —
    and the line that re-analyses the run without measuring it."""
    from IPython.display import display
    display({"text/html": glance(tldr(said, run), grid(said), "The Answer, in words, with its tables and figures")},
            raw=True, metadata={SKIP: True})  # first: Run All shows the last cell's top; the report opens with it
    ownership.finish(run)
    if run.status != "running" and not ownership.owns(run):  # a re-analysis: how to do it again, in the
        display({"text/plain": ownership.reanalyse_line(run)}, raw=True, metadata={SKIP: True})  # notebook only


