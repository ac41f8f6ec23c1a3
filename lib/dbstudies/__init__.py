"""dbstudies — reproducible MySQL/MariaDB performance studies (driver library).

Import the modules you use (`from dbstudies import experiment, plots, report`); their layers
and the one direction of their imports are in docs/architecture.md "Layout" (tests/test_layers.py).
"""
from __future__ import annotations

__version__ = "0.1.0"
