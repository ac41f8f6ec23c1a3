"""What a study's notebook shows, for its report: the answer (verdicts, conclusion, the
settings that still differ), how the run was measured (`setup`), comparison tables, details
folded away, costs that moved, on-CPU profiles, and notes on sections that do not apply
(`skip`). `render` turns the executed notebook into report.html. A room per section; this
face only re-exports what the notebooks call (`report.answer`, `report.table` …)."""
from .answer import answer, finish
from .controls import positive_control
from .costs import COST_COLUMNS, costs, cpu_budget
from .instructions import count_functions
from .profiles import cpu_profiles, shows
from .setup import narrative, plan, setup, where
from .shown import (
    LABELS,
    PROSE,
    SKIP,
    answer_here,
    conclusion,
    fill_here,
    first,
    label,
    note,
    number,
    percent_cell,
    skip,
    table,
)
from .tables import (
    FULL_COMPARISON,
    KEYS,
    MAX_COLUMNS,
    SCALING_SUMMARY,
    comparison,
    details,
    full_comparison,
    parts,
    scaling_summary,
    tail_note,
)

__all__ = ["COST_COLUMNS", "FULL_COMPARISON", "KEYS", "LABELS", "MAX_COLUMNS", "PROSE", "SCALING_SUMMARY", "SKIP",
           "answer", "answer_here", "comparison", "conclusion", "costs", "count_functions", "cpu_budget",
           "cpu_profiles", "details", "fill_here", "finish", "first", "full_comparison", "label", "narrative",
           "note", "number", "parts", "percent_cell", "plan", "positive_control", "scaling_summary", "setup", "shows",
           "skip", "table", "tail_note", "where"]
