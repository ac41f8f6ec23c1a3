"""`dbstudies run <study> …`: validate parameters, execute the study's notebook through
papermill into a new run directory, render its report.

    dbstudies run thread_pool --profile smoke -p threads '[1,8,64]' -p duration 5
    dbstudies plan thread_pool --profile quick
    dbstudies list
    dbstudies runs [thread_pool]
    dbstudies clean
    dbstudies export data/runs/thread_pool/<run-id> --format csv
    dbstudies compare data/runs/thread_pool/<run-a> data/runs/thread_pool/<run-b>
    dbstudies pack data/runs/thread_pool/<run-id>          # one file to share
    dbstudies replicate data/packs/thread_pool-<run-id>.run.tar.gz
    dbstudies pool data/runs/thread_pool/<run-a> data/runs/thread_pool/<run-b>
    dbstudies servers [provision mysql-9.7]
    dbstudies servers add mine ~/build/mariadb [--runtime mariadb-11.8]
    dbstudies report data/runs/thread_pool/<run-id>
    dbstudies sweep thread_pool --grid grid.yaml [--scheduler tls://HOST:8786]
    dbstudies scheduler                # on one machine: the Dask scheduler of a sweep (mutual TLS)
    dbstudies worker tls://HOST:8786   # on each benchmark host (data/tls/ copied from the scheduler's)

The console script `dbstudies` and `python -m dbstudies` run `main`. Each command is declared once,
in its group's module of the `commands` wing; `commands.loader` makes one parser of them.
"""
from __future__ import annotations

import sys

from .commands import COMMANDS, EXIT_USAGE, GROUPS, main, parser  # noqa: F401 - the command line's face

_parser = parser  # the name the README's examples are checked through


if __name__ == "__main__":
    sys.exit(main())
