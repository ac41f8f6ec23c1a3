"""dbstudies — reproducible MySQL/MariaDB performance studies (driver library).

Import the modules you use (`from dbstudies import experiment, plots, report`); their layers
and the one direction of their imports are in docs/architecture.md "Layout" (tests/test_layers.py).
"""
from __future__ import annotations

import os
import sys

__version__ = "0.1.0"

if os.environ.get("DBSTUDIES_STACKS_ON_USR1"):  # a kernel the `dbstudies` command started (cli.main)
    import faulthandler
    import signal
    faulthandler.register(signal.SIGUSR1, file=sys.__stderr__, all_threads=True)

if "ipykernel" in sys.modules:  # a live kernel: Run All stops at a failing cell (`passes`)
    from . import passes
    passes.in_kernel()
