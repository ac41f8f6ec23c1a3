"""The answer as a report says it: the verdicts in words (with the client's share of the CPU
where it explains a verdict), the comparisons moving apart along the threads, the source's
claims tested, the caveats of the run's own data — and the conclusion, with the server
settings that differ between the arms beyond those the study varied.
"""
from __future__ import annotations

from .. import settings
from ..comparisons import throughput
from ..contract import Answer
from ..results import Run
from ..study import params_of
from . import caveats, words


def answer_text(said: Answer, run: Run | None = None) -> tuple[str, str]:
    """The answer in words (Markdown: the verdicts, the source's claims, the caveats) and the
    conclusion (with what else differs between the arms), as `answer` shows them."""
    tables = said.verdict_tables()
    key = throughput(said.comparisons)
    meta = run.metadata if run is not None else {}
    cpus = (meta.get("host") or {}).get("cpus") or 0
    p = params_of(run) if run is not None else None
    pinned = caveats.pinned_apart(p) if run is not None else True
    client = (caveats.client_explained(caveats.judged_budget(said.tables, key, cpus), pinned)
              if run is not None and key else None)
    name = next((n for n, k in said.verdicts.items() if k == key), None)
    said_words = words.paragraphs(tables, {name: client} if name and client is not None else None, cpus)
    said_words += words.moving_apart(tables)
    if said.claims:
        said_words.append("**The source's claims, tested here:**\n\n" + "\n".join(
            f"- {line}" for line in words.claims_held(said.claims, said.tables, client, pinned, cpus)))
    warn = caveats.caveats(run, p, said.tables, key) if run is not None else []
    if warn:
        said_words.append("**Caveats from this run's data:**\n\n" + "\n".join(f"- {c}" for c in warn))
    differ = settings.differences_line(run.metadata) if run is not None else ""
    if differ and settings.beyond_varied(run.metadata):
        differ = ""  # a caveat above says it
    return "\n\n".join(said_words), said.conclusion + (f"\n\n{differ}" if differ else "")
