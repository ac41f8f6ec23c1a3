"""The studies: one module each (parameters, plan, measurement, analysis), one notebook each
(notebooks/<name>.ipynb) that narrates and calls into its module."""
from . import thread_pool

STUDIES = {thread_pool.STUDY: thread_pool}
