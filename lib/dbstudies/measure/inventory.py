"""What a run records of its set-up as it goes: each arm (its flavour, intent and settings),
each server as an arm first used it (version, my.cnf, global variables, the settings its
sessions set), and the data the study loaded into each server. Written into the run's
metadata; read back by `settings` and `described`.
"""
from __future__ import annotations

from typing import Any

from .. import servers
from ..kit.studykit import Arm, StudyParams
from ..store.results import Run

SYSTEM_SCHEMAS = ("mysql", "information_schema", "performance_schema", "sys")


def arm(arm: Arm, p: StudyParams) -> dict[str, Any]:
    """An arm as the run records it (`metadata["arms"]`): its flavour, intent and every setting
    its server starts with, the intent's included."""
    flavour = arm.flavour or p.flavour
    said = servers.load_flavour(flavour).settings_for(arm.intent) if arm.intent else {}
    return {"label": arm.label, "intent": arm.intent.asdict() if arm.intent else {},
            "settings": {**said, **arm.settings}, "flavour": flavour, "twin_of": arm.twin_of}


def record_server(run: Run, server: servers.Server, label: str, *,
                  session: dict[str, Any] | None = None) -> None:
    """Add what the server is (version, my.cnf, global variables) to the run's metadata;
    `session`: the settings the arm's sessions set on it (a shared server)."""
    run.extend("servers", [{"label": label, **server.describe(), **({"session": session} if session else {})}])


def record_data(run: Run, server: servers.Server, key: str) -> None:
    """Add the size of the data the study loaded into server `key` (per schema, data and
    indexes, as information_schema reports it after the load and an ANALYZE TABLE of each
    table: MySQL otherwise shows statistics cached before the load) to the run's metadata."""
    system = ", ".join(repr(s) for s in SYSTEM_SCHEMAS)
    tables = server.query("SELECT table_schema, table_name FROM information_schema.TABLES WHERE "
                          f"table_type = 'BASE TABLE' AND table_schema NOT IN ({system})")
    if tables:
        server.query("ANALYZE TABLE " + ", ".join(f"`{s}`.`{t}`" for s, t in tables))
    rows = server.query(
        "SELECT table_schema, SUM(data_length + index_length), SUM(table_rows) "
        f"FROM information_schema.TABLES WHERE table_schema NOT IN ({system}) GROUP BY table_schema")
    run.extend("data", [{"server": key, "schema": schema, "bytes": int(size or 0), "rows": int(n or 0)}
                        for schema, size, n in rows])
