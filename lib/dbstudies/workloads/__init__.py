"""Workloads we drive through sysbench besides its bundled OLTP scripts, written by us as
sysbench Lua (`lua/`) from public specifications:

- `tpcc`: TPC-C-like (the TPC-C standard's nine tables, five transactions, mix, NURand
  keys, 1 % New-Order rollbacks, remote warehouses); scale: `warehouses`. Not a TPC-C result.
- `linkbench`: LinkBench-like (the SIGMOD 2013 paper's node, link and count tables, its
  default request mix, Zipf-like access, power-law out-degree, lognormal payloads of a given
  compressibility); scale: `nodes`. Not LinkBench itself.

Every workload runs through the same report wrapper as the bundled ones (`sysbench_report.lua`):
JSON per interval, full histogram, prepare/run/cleanup, seeds, pinning, table options. Ours
also print per-transaction-type counts per second and latency histograms per type
(`lua/dbs_common.lua`), which `sysbench.py` here parses into `types` tables.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

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
    """The tables a workload runs on: "oltp" (sysbench's sbtest tables) or its own name."""
    return "oltp" if workload in OLTP else workload


def writes(workload: str) -> bool:
    """Whether `workload` changes data (leaves dirty pages and redo for the server to flush).

    >>> writes("oltp_read_only"), writes("oltp_write_only"), writes("tpcc")
    (False, True, True)
    """
    return workload not in READ_ONLY


def options(workload: str, scale: dict[str, Any]) -> list[str]:
    """The sysbench options of `workload` at this scale (tables/table_size for OLTP)."""
    names = ("tables", "table_size") if workload in OLTP else OURS[workload]
    return [f"--{n.replace('_', '-') if workload in OLTP else n}={scale[n]}" for n in names]


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
    if workload in OLTP:
        return scale["tables"] * scale["table_size"] * BYTES_PER["rows"]
    return None
