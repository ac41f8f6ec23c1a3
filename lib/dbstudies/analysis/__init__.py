"""The analysis studies share, above the study kit and below the report: what a run's tables
say. Its rooms: the comparison tables in a run's design (`tables`), a cell in words (`cells`),
the vocabulary of verdicts (`words`), the answer's findings (`findings`) and its words (`said`,
`sentences`, `claims`, `caveats`), the controls (`aa`, `control`), and the analyses of
particular data (costs, server_view, cpu_profiles, counted, transactions, tails, timeseries,
runs, replication, sysbench_answer). This face only re-exports what the studies and notebooks
call as `analysis.X` (`analysis.relative`, `analysis.layout` …).
"""
from ..kit.studykit import BY
from .cells import (
    CELL_KEYS,
    cell_name,
    cell_text,
    digits,
    effect,
    interval,
    layout,
    p_text,
    signed,
    threads,
    verdict_text,
    verdicts,
    wide,
)
from .tables import (
    NOT_INTERLEAVED,
    aa_table,
    compare_arms,
    comparison,
    design_table,
    in_percent,
    is_paired,
    over_repeats,
    ratios_per_round,
    relative,
    step_summary,
    summary,
    tail_rests,
    target_of,
    threshold,
    to_target,
    versus_baseline,
    with_unavailable,
)
from .words import (
    WIDE,
    WORDS,
    adjusted,
    field,
    word_of,
)

__all__ = ["BY", "CELL_KEYS", "NOT_INTERLEAVED", "WIDE", "WORDS", "aa_table", "adjusted", "cell_name", "cell_text", "compare_arms", "comparison", "design_table", "digits", "effect", "field", "in_percent", "interval", "is_paired", "layout", "over_repeats", "p_text", "ratios_per_round", "relative", "signed", "step_summary", "summary", "tail_rests", "target_of", "threads", "threshold", "to_target", "verdict_text", "verdicts", "versus_baseline", "wide", "with_unavailable", "word_of"]
