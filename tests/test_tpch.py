"""TPC-H data, schema and the 22 queries: generated offline (DuckDB's tpch extension), cached
with a manifest, loaded into a private MariaDB, answers checked 22/22 at SF 0.01."""
import builtins
import json
import shutil

import pytest

from dbstudies import tpch
from dbstudies.core.errors import WorkloadError

SF = 0.01


@pytest.fixture(scope="module")
def data():
    return tpch.generate(SF, say=lambda m: None)  # data/tpch/sf0.01, made once per machine


def test_generated_data_is_cached_with_a_manifest_and_checked_on_reuse(data, tmp_path):
    manifest = json.loads((data / "manifest.json").read_text())
    assert manifest["scale_factor"] == SF and set(manifest["files"]) == {f"{t}.tbl" for t in tpch.SCHEMA}
    assert manifest["files"]["lineitem.tbl"]["rows"] == 60175  # the specification's SF 0.01 count
    assert tpch.generate(SF, say=lambda m: pytest.fail("generated again")) == data
    copy = tmp_path / tpch.sf_name(SF)
    shutil.copytree(data, copy)
    with open(copy / "orders.tbl", "r+b") as f:
        f.seek(100)
        f.write(b"X")
    with pytest.raises(WorkloadError, match="orders.tbl is missing or differs from .*delete"):
        tpch.generate(SF, root=tmp_path)


def test_a_missing_generator_and_a_scale_without_answers_are_clear_errors(monkeypatch):
    with pytest.raises(WorkloadError, match="there are reference answers for scale factors 0.01, 0.1, 1 only, not 0.5"):
        tpch.answers(0.5)
    real_import = builtins.__import__

    def no_extension(name, *args, **kw):
        if name == "duckdb_extension_tpch":
            raise ImportError("no", name=name)
        return real_import(name, *args, **kw)
    monkeypatch.setattr(builtins, "__import__", no_extension)
    with pytest.raises(tpch.GeneratorMissing, match="duckdb-extension-tpch .duckdb_extension_tpch is missing"):
        tpch.generate(0.02, root="/nonexistent")


@pytest.mark.server
def test_load_then_all_22_queries_match_the_reference_answers(server, data):
    loaded = tpch.load(server, data, say=lambda m: None)
    assert [t["table"] for t in loaded] == list(tpch.SCHEMA)
    assert {t["table"]: t["rows"] for t in loaded}["lineitem"] == 60175
    assert all(t["load_s"] >= 0 and t["index_s"] >= 0 for t in loaded)
    indexes = server.query("SELECT COUNT(DISTINCT index_name) FROM information_schema.statistics "
                           "WHERE table_schema = 'tpch' AND table_name = 'lineitem'")[0][0]
    assert indexes == 1 + len(tpch.INDEXES["lineitem"])
    reference = tpch.answers(SF)
    queries = tpch.queries()
    assert sorted(queries) == list(range(1, 23)) == sorted(reference)
    problems = []
    with server.connect(database="tpch") as c:
        cur = c.cursor()
        for n, sql in queries.items():
            cur.execute(sql)
            problems += tpch.check(n, cur.fetchall(), reference[n])
    assert problems == [], "\n".join(problems)
    # the check can fail: a wrong answer is reported
    assert tpch.check(6, [(123.0,)], reference[6])
