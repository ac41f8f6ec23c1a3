# dbstudies — the README's commands. Every target installs what it needs first (idempotent).
SHELL := /bin/bash
VENV := .venv
PROFILE ?= quick

.PHONY: setup study test lab bench

setup:
	@bash env/setup.sh

study: setup  ## the thread-pool study on a private MariaDB (PROFILE=smoke|quick|full)
	$(VENV)/bin/dbstudies run thread_pool --profile $(PROFILE)

test: setup  ## the whole test suite
	$(VENV)/bin/python -m pytest

lab: setup  ## JupyterLab on notebooks/ with the dbstudies kernel; study notebooks saved to data/lab/
	$(VENV)/bin/dbstudies lab

bench: setup  ## driver overhead benchmark (prints a ratio; not a test)
	$(VENV)/bin/python tests/benchmarks/driver_overhead.py
