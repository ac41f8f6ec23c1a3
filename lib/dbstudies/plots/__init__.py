"""Figures shared by the notebooks: one style, one colour per configuration across all the
figures of a report, series that share an x dodged apart, log axes with readable ticks
(1, 2, 5 × 10ⁿ as plain numbers), and alt text on every figure in the report. One module per
family of figures; the style (`axes`) and the checks and saving (`publish`) are shared.

    fig = plots.scaling(summary, "qps", "queries per second")
    plots.publish(fig, run, "qps_vs_threads")     # PNG + SVG in the run, shown with alt text
"""
from .axes import CLIPPED, MAX_W, palette, plt, ticks_125
from .latency import achieved, latency_vs_load, shift
from .publish import problems, properties, publish, save
from .queries import bars, normalised, per_query, whiskers
from .replication import effects as replication
from .series import bands, distribution, per_second, timeline, typical
from .threads import cpu, ratios_per_round, scaling, sweep

__all__ = ["CLIPPED", "MAX_W", "achieved", "bands", "bars", "cpu", "distribution", "latency_vs_load",
           "normalised", "palette", "per_query", "per_second", "plt", "problems", "properties", "publish",
           "ratios_per_round", "replication", "save", "scaling", "shift", "sweep", "ticks_125", "timeline", "typical", "whiskers"]
