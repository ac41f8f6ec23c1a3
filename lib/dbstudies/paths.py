"""Where the repository's folders are (the package is installed editable from lib/)."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ENV_DIR = REPO / "env"
SERVERS_DIR = ENV_DIR / "servers"
CNF_DIR = ENV_DIR / "cnf"
NOTEBOOKS_DIR = REPO / "notebooks"
DATA_DIR = REPO / "data"
RUNS_DIR = DATA_DIR / "runs"
FIGURES_DIR = REPO / "figures"
