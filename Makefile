# dbstudies — the README's commands. Every target installs what it needs first (idempotent).
SHELL := /bin/bash
VENV := .venv
PROFILE ?= quick

.PHONY: setup study test check lab bench

setup:
	@bash env/setup.sh

study: setup  ## the thread-pool study on a private MariaDB (PROFILE=smoke|quick|full)
	$(VENV)/bin/dbstudies run thread_pool --profile $(PROFILE)

test: setup  ## the whole test suite (CI's command); the 15 slowest tests are listed at its end
	$(VENV)/bin/python -m pytest -n 3 --dist loadfile --no-loadscope-reorder --durations=15

check: setup  ## the fast tier for the edit loop: unit tests, doctests, layers, README drift, ruff — no server, kernel or browser
	$(VENV)/bin/python -m pytest -q -n 2 --dist loadfile -m "not server and not notebook and not browser"

lab: setup  ## JupyterLab on notebooks/ with the dbstudies kernel; study notebooks saved to data/lab/
	$(VENV)/bin/dbstudies lab

bench: setup  ## driver overhead benchmark (prints a ratio; not a test)
	$(VENV)/bin/python tests/benchmarks/driver_overhead.py
