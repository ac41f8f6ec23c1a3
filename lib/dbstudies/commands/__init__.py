"""The command line, one wing: a module per group of commands — studies (run, plan, list,
report, lab), runs (runs, clean, compare, pack, replicate, pool, export), servers, builds
(history, bisect), sweeps (sweep, scheduler, worker) —, each command declared once with its
arguments beside what it runs (`kit.Command`), and the loader that makes one parser of them."""
from .kit import Command
from .loader import COMMANDS, EXIT_USAGE, GROUPS, main, parser

__all__ = ["COMMANDS", "EXIT_USAGE", "GROUPS", "Command", "main", "parser"]
