"""Workloads we drive through sysbench besides its bundled OLTP scripts, written by us as
sysbench Lua (`lua/`) from public specifications:

- `tpcc`: TPC-C-like (the TPC-C standard's nine tables, five transactions, mix, NURand
  keys, 1 % New-Order rollbacks, remote warehouses); scale: `warehouses`. Not a TPC-C result.
- `linkbench`: LinkBench-like (the SIGMOD 2013 paper's node, link and count tables, its
  default request mix, Zipf-like access, power-law out-degree, lognormal payloads of a given
  compressibility); scale: `nodes`. Not LinkBench itself.

- a script of the user's own (`workloads` entry ending in `.lua`, `check_script` checks it
  before anything starts): any script sysbench 1.0 runs with prepare/run/cleanup, its tables
  its own, its options from the study's `workload_options`.

Every workload runs through the same report wrapper as the bundled ones (`sysbench_report.lua`):
JSON per interval, full histogram, prepare/run/cleanup, seeds, pinning, table options. Ours
also print per-transaction-type counts per second and latency histograms per type
(`lua/dbs_common.lua`), which `sysbench.py` here parses into `types` tables.
"""
from __future__ import annotations

import functools
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import paths, proc

LUA_DIR = Path(__file__).with_name("lua")
OLTP = ("oltp_point_select", "oltp_read_only", "oltp_read_write", "oltp_write_only",
        "oltp_update_index", "oltp_update_non_index", "oltp_insert", "oltp_delete")
READ_ONLY = ("oltp_point_select", "oltp_read_only")  # every other workload writes
# our workloads → the scale parameters (study parameter = sysbench option) each takes
OURS: dict[str, tuple[str, ...]] = {"tpcc": ("warehouses",),
                                    "linkbench": ("nodes", "payload_compressibility")}
# what each of ours calls its transactions, in report order
TYPES: dict[str, tuple[str, ...]] = {
    "tpcc": ("new_order", "payment", "order_status", "delivery", "stock_level"),
    "linkbench": ("get_link_list", "get_node", "add_link", "update_link", "update_node", "count_link",
                  "delete_link", "add_node", "delete_node", "get_link"),
}

# the LinkBench paper's default request mix, % (TYPES order); lua/linkbench.lua draws from it
# and tests/test_linkbench.py checks the observed mix against it
LINKBENCH_MIX = (50.71, 12.93, 8.99, 8.01, 7.37, 4.89, 2.99, 2.57, 1.01, 0.53)


def family(workload: str) -> str:
    """The tables a workload runs on: "oltp" (sysbench's sbtest tables: its bundled OLTP
    workloads and any script built on its `oltp_common`, e.g. one of them named by its path)
    or its own name (another script's: its path)."""
    if workload in OLTP or is_script(workload) and built_on_oltp_common(workload):
        return "oltp"
    return workload


def built_on_oltp_common(workload: str) -> bool:
    """Whether the script `workload` loads sysbench's `oltp_common` (asked of sysbench once
    per file version; False where the file or sysbench is missing)."""
    if not shutil.which("sysbench"):
        return False
    return check_script(workload).oltp_common


def is_script(workload: str) -> bool:
    """Whether `workload` names a Lua script of the user's (a path ending in .lua)."""
    return str(workload).endswith(".lua")


def script_path(workload: str) -> Path:
    """A script workload's file: absolute as given, else relative to the working directory,
    else to the repository (a notebook's kernel runs in notebooks/)."""
    path = Path(workload).expanduser()
    if path.is_absolute():
        return path
    for base in (Path.cwd(), paths.REPO):
        if (base / path).is_file():
            return (base / path).resolve()
    return path.resolve()


WRAPPER = LUA_DIR / "sysbench_report.lua"  # every workload runs through it (see sysbench_report.lua)


@dataclass(frozen=True)
class ScriptCheck:
    """What sysbench said of a script loaded as a measured run loads it: the problems ([]
    when it can run) and whether it is built on sysbench's `oltp_common` (its sbtest tables)."""
    problems: tuple[str, ...]
    oltp_common: bool = False


def check_script(workload: str, options: tuple[str, ...] = (), what: str = "workloads") -> ScriptCheck:
    """Ask sysbench whether it can run the script `workload` with `options` (`--name=value`):
    our report wrapper loads it with the `run` command, as a measured step does, then stops
    before any thread or connection starts (`DBSTUDIES_CHECK`), so sysbench's own checks of
    the command and of the options against the script's run too. Problems: missing file,
    does not load, no `event`, no prepare, options sysbench refuses."""
    path = script_path(workload)
    if not path.is_file():
        return ScriptCheck((f"{what}: {workload}: no such Lua script",))
    st = path.stat()
    return _check(str(path), st.st_mtime_ns, st.st_size, tuple(options), what, workload)


@functools.lru_cache(maxsize=64)
def _check(path: str, _mtime: int, _size: int, options: tuple[str, ...], what: str,
           workload: str) -> ScriptCheck:
    p = proc.run(["sysbench", str(WRAPPER), "--db-driver=mysql", *options, "--threads=1", "run"],
                 env={"DBSTUDIES_SCRIPT": path, "DBSTUDIES_LUA_DIR": str(LUA_DIR), "DBSTUDIES_CHECK": "1"},
                 timeout=60, check=False)
    said = p.stdout + p.stderr
    lines = said.splitlines()
    ok = next((ln for ln in lines if ln.startswith("DBS_OK")), None)
    if ok is not None and p.returncode == 0:
        return ScriptCheck((), ok.split()[1:] == ["oltp_common"])
    if "DBS_NO_EVENT" in said:
        why = "defines no `event` function (sysbench calls it once per transaction)"
    elif "DBS_NO_PREPARE" in said:
        why = ("defines no prepare (a `prepare` function or `sysbench.cmdline.commands.prepare`): "
               "the study loads each workload's tables with it")
    elif any(ln.startswith("invalid option") for ln in lines):
        bad = [ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("invalid option")]
        why = (f"sysbench refuses the option{'s' if len(bad) > 1 else ''} {', '.join(bad)}: the script "
               "declares its own options (`sysbench.cmdline.options`) and not "
               f"{'these' if len(bad) > 1 else 'this one'} (`workload_options` go to every script of the run)")
    else:
        error = next((ln.split("DBS_LOAD_ERROR", 1)[1].strip() for ln in lines if "DBS_LOAD_ERROR" in ln),
                     proc.tail(said, 2))
        why = f"sysbench cannot load it: {error}"
    return ScriptCheck((f"{what}: {workload}: {why}",))


def script_problems(workload: str, options: tuple[str, ...] = (), what: str = "workloads") -> list[str]:
    """Why sysbench could not run the script `workload` with `options` (`check_script`); []
    when it can."""
    return list(check_script(workload, options, what).problems)


def script_options(options: dict[str, Any], what: str = "workload_options") -> list[str]:
    """The `--name=value` options given to script workloads; problems raise ValueError.

    >>> script_options({"--my-opt": 3, "rows": "10"})
    ['--my-opt=3', '--rows=10']
    """
    out = []
    for name, value in options.items():
        key = str(name).lstrip("-")
        if not key or isinstance(value, (dict, list)) or value is None:
            raise ValueError(f"{what}: {name!r}: an option name and a plain value, e.g. {{\"--rows\": 100}}")
        out.append(f"--{key}={str(value).lower() if isinstance(value, bool) else value}")
    return out


def environ_script(workload: str) -> dict[str, str]:
    """What the report wrapper needs to run `workload`: the bundled name, or a script's path."""
    if is_script(workload):
        return {"DBSTUDIES_SCRIPT": str(script_path(workload))}
    return {"DBSTUDIES_WORKLOAD": workload}



def writes(workload: str) -> bool:
    """Whether `workload` changes data (leaves dirty pages and redo for the server to flush).

    >>> writes("oltp_read_only"), writes("oltp_write_only"), writes("tpcc")
    (False, True, True)
    """
    return workload not in READ_ONLY


def options(workload: str, scale: dict[str, Any]) -> list[str]:
    """The sysbench options of `workload` at this scale (tables/table_size for OLTP)."""
    oltp = family(workload) == "oltp"
    if is_script(workload) and not oltp:
        return []  # a script's own options come from `workload_options`
    names = ("tables", "table_size") if oltp else OURS[workload]
    return [f"--{n.replace('_', '-') if oltp else n}={scale[n]}" for n in names]


# uncompressed bytes on disk per unit of scale, measured here (MariaDB 10.11, 16 KiB pages)
BYTES_PER = {"nodes": 650, "warehouses": 110 * 2**20, "rows": 260}


def estimated_bytes(workload: str, scale: dict[str, Any]) -> float | None:
    """The uncompressed size of `workload`'s tables at `scale` (nodes, warehouses, tables ×
    table_size), from `BYTES_PER`; None for a workload without an estimate.

    >>> estimated_bytes("linkbench", {"nodes": 1000}), estimated_bytes("oltp_read_only", {"tables": 2, "table_size": 10})
    (650000, 5200)
    """
    if workload == "linkbench":
        return scale["nodes"] * BYTES_PER["nodes"]
    if workload == "tpcc":
        return scale["warehouses"] * BYTES_PER["warehouses"]
    if family(workload) == "oltp":
        return scale["tables"] * scale["table_size"] * BYTES_PER["rows"]
    return None
