"""Like for like (`align`): the settings a benchmark must hold equal, said to every server in
its own dialect, recorded equal in the servers' own variables; the Answer names what still
differs. `align = "defaults"` leaves each server as it ships."""
import json

import nbformat
import pytest

from dbstudies import servers
from dbstudies.store import settings

SHOWN = [servers.SHOWN_AS[f] for f in servers.ALIGNED.asdict() if f in servers.SHOWN_AS]


def test_defaults_leave_each_server_as_it_ships():
    mysql = servers.Dialect("mysql", (9, 7, 4))
    assert mysql.settings(servers.base_intent("defaults")) == {"innodb_redo_log_capacity": "512M"}
    said = mysql.settings(servers.base_intent("intent"))
    assert said["disable_log_bin"] is None and said["innodb_io_capacity"] == 200
    assert said["collation_server"] == "utf8mb4_general_ci" and said["innodb_change_buffering"] == "none"
    assert "innodb_change_buffering" not in servers.Dialect("mariadb", (11, 8, 6)).settings(servers.ALIGNED)
    with pytest.raises(servers.Unavailable, match="no change buffer"):
        servers.Dialect("mariadb", (11, 8, 6)).settings(servers.Intent(change_buffering="all"))


@pytest.mark.server
def test_a_versions_smoke_run_records_the_aligned_settings_equal_and_names_the_rest(smoke_run):
    proc, run_dir = smoke_run("versions")
    assert proc.returncode == 0, proc.stderr[-3000:]
    meta = json.loads((run_dir / "metadata.json").read_text())
    per_arm = settings.arm_variables(meta)
    assert list(per_arm) == ["mariadb-10.11", "mysql-9.7"]
    assert settings.aligned(meta) == SHOWN
    for name in SHOWN:
        values = [per_arm[a][name] for a in per_arm]
        assert settings.same(values), (name, values)
    mariadb, mysql = per_arm.values()
    assert (mariadb["log_bin"], mysql["log_bin"], mysql["sync_binlog"]) == ("OFF", "OFF", "1")
    assert {v["character_set_server"] for v in per_arm.values()} == {"utf8mb4"}
    differ = dict(settings.differences(meta))
    assert differ and not set(differ) & set(SHOWN)
    nb = nbformat.read(run_dir / "notebook.ipynb", as_version=4)
    text = "\n".join(o.get("data", {}).get("text/markdown", "") for c in nb.cells if c.cell_type == "code"
                     for o in c.get("outputs", []))  # what the notebook said in words (the report's)
    assert "**Settings differ beyond what the study varies**: " in text  # a caveat of the Answer
    assert " between mariadb-10.11 and mysql-9.7 — " in text and "The verdicts include their effect." in text
    # the data's size read after ANALYZE TABLE: MySQL no longer shows its pre-load statistics
    sizes = {d["server"]: d["bytes"] for d in meta["data"]}
    assert 0.5 < sizes["mysql-9.7"] / sizes["mariadb-10.11"] < 2, sizes
    html = (run_dir / "report.html").read_text()
    assert html.count("<small>aligned</small>") == len(SHOWN)


def test_only_a_like_for_like_run_of_servers_we_started_marks_variables_aligned():
    meta = {"parameters": {"align": "intent"}, "servers": [{"label": "a"}]}
    assert settings.aligned(meta) == SHOWN
    assert settings.aligned({**meta, "parameters": {"align": "defaults"}}) == []
    assert settings.aligned({"parameters": {}, "servers": []}) == []  # recorded before alignment
    assert settings.aligned({**meta, "servers": [{"label": "a"}, {"label": "b", "remote": True}]}) == []
