"""Make a recorded run a test fixture that keeps what the analysis reads, in a diff a person
can read: `python tests/slim_fixture.py RUN_DIR…` rewrites each run's metadata.json in place.

- sysbench's calls: of the measured runs, per workload and loop, only the calls that bring a
  value the report's client command shows ({threads}, seeds …: `report.setup.client_commands` reads
  the same command back); the warm-ups' and repeated calls go (a quick run records 500 argv
  lists, 15k lines); every other command (prepare) is kept.
- each server's `SHOW GLOBAL VARIABLES` dump: the variables that differ between the run's
  servers (what "the settings that differ" reads) and every variable the library names (its
  string literals: the settings tables, the buffer pool, the governing variables); the ~650
  others, alike on every server, go.
- written one short record per line (a plan row, a small dict), longer ones opened up.

Check what a slimmed fixture gives against the original before committing it: its report
(`dbstudies report --analyse`), its notebook's checked cells (tests/checked_cells.py).
"""
from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

LIB = Path(__file__).resolve().parents[1] / "lib" / "dbstudies"
WIDTH = 160  # a record at most this wide stays on one line
LISTED = ("--threads", "DBSTUDIES_RATE")  # shown with every value; the other varying ones as …


def named_in_library() -> set[str]:
    """Every string literal of the library's code (a superset of the variables it reads)."""
    out: set[str] = set()
    for path in LIB.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                out.add(node.value.lower())
    return out


def slim_variables(servers: list[dict[str, Any]], keep: set[str]) -> None:
    dumps = [s.get("global_variables") or {} for s in servers]
    names = {k for d in dumps for k in d}
    differ = {k for k in names if len({str(d.get(k)) for d in dumps}) > 1}
    for s, d in zip(servers, dumps):
        if d:
            s["global_variables"] = {k: v for k, v in d.items() if k in differ or k.lower() in keep}


def slim_calls(meta: dict[str, Any]) -> None:
    calls = (meta.get("sysbench") or {}).get("calls") or []
    duration = f"--time={(meta.get('parameters') or {}).get('duration')}"
    measured = [c for c in calls if c.get("command") == "run" and duration in c.get("argv", [])]

    def values(c: dict[str, Any]) -> dict[str, str]:  # what `report.setup.client_commands` may show as {…}
        both = [*c["argv"], *(f"{k}={v}" for k, v in (c.get("env") or {}).items())]
        return {a.split("=", 1)[0]: a.split("=", 1)[1] for a in both if "=" in a}
    kept = []
    for group in dict.fromkeys((c.get("workload"), "DBSTUDIES_RATE" in (c.get("env") or {})) for c in measured):
        mine = [c for c in measured if (c.get("workload"), "DBSTUDIES_RATE" in (c.get("env") or {})) == group]
        # every value of the listed ones ({8, 64}); two of those shown as … (seeds, sockets)
        need = {k: (set(vs) if k in LISTED else set(list(dict.fromkeys(vs))[:2]))
                for k in {k for c in mine for k in values(c)}
                for vs in [[values(c).get(k) for c in mine]]}
        have: dict[str, set[str]] = {k: set() for k in need}
        for i, c in enumerate(mine):
            new = {k for k, v in values(c).items() if v in need[k] and v not in have[k]}
            if i == 0 or new:
                kept.append(c)
                for k, v in values(c).items():
                    have[k].add(v)
    if calls:
        meta["sysbench"]["calls"] = [c for c in calls if c.get("command") != "run" or any(c is k for k in kept)]


def dumps(value: Any, indent: int = 0) -> str:
    """JSON with each record that fits `WIDTH` on one line."""
    flat = json.dumps(value, ensure_ascii=False, default=str)
    if len(flat) + indent <= WIDTH or not isinstance(value, (dict, list)) or not value:
        return flat
    pad = " " * (indent + 1)
    if isinstance(value, dict):
        body = [f"{pad}{json.dumps(k, ensure_ascii=False)}: {dumps(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(body) + "\n" + " " * indent + "}"
    return "[\n" + ",\n".join(pad + dumps(v, indent + 1) for v in value) + "\n" + " " * indent + "]"


def slim(run_dir: Path, keep: set[str]) -> None:
    path = run_dir / "metadata.json"
    meta = json.loads(path.read_text())
    slim_calls(meta)
    slim_variables(meta.get("servers") or [], keep)
    path.write_text(dumps(meta) + "\n")


if __name__ == "__main__":
    keep = named_in_library()
    for arg in sys.argv[1:]:
        slim(Path(arg), keep)
        print(f"{arg}: {len((Path(arg) / 'metadata.json').read_text().splitlines())} lines")
