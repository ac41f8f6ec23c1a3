"""Our LinkBench-like sysbench workload: its generators (pure, no server) and, on a real
private server, prepare → counts agree with visible links → a run of the paper's mix → the
counts still agree; the mix within tolerance."""
import math
import zlib

import numpy as np
import pytest
from conftest import prepared

from dbstudies import workloads
from dbstudies.workloads import linkbench, sysbench


def test_generators_zipf_power_law_lognormal_and_compressibility():
    s = linkbench.selftest()
    ranks = np.array(s["ranks"])
    assert ranks.min() >= 1 and ranks.max() <= 100_000
    # Zipf 0.8 over 100,000 ranks: the top 1 % of ranks take ≈ (1000^0.2 − 1)/(100000^0.2 − 1) = 33 %
    assert 0.28 < (ranks <= 1000).mean() < 0.38
    assert (ranks == 1).mean() > 10 * (ranks == 1000).mean()  # a falling rank-frequency law
    nodes = np.array(s["nodes"])
    assert nodes.min() >= 1 and nodes.max() <= 100_000 and not np.array_equal(np.sort(nodes), np.sort(ranks))
    degrees = np.array(s["degrees"])
    assert 0.5 < (degrees == 0).mean() < 0.8 and degrees.max() > 100  # power law: many leaves, a long tail
    assert 1 < degrees.mean() < 2.5
    assert 100 <= np.median(s["node_lengths"]) <= 160 and 6 <= np.median(s["link_lengths"]) <= 10
    ratio = {k: len(zlib.compress(s[k].encode())) / len(s[k]) for k in ("random", "repetitive")}
    assert ratio["repetitive"] < 0.5 * ratio["random"]  # compressibility 0.9 vs 0


@pytest.fixture(scope="module")
def loaded(flavour, tmp_path_factory):
    with prepared(flavour, tmp_path_factory.mktemp("linkbench") / "srv", "linkbench", nodes=20_000) as both:
        yield both


@pytest.mark.server
def test_prepare_and_a_run_keep_counts_equal_to_visible_links_and_follow_the_mix(loaded):
    s, sb = loaded
    assert int(s.query("SELECT COUNT(*) FROM sbtest.nodetable")[0][0]) == 20_000
    links = int(s.query("SELECT COUNT(*) FROM sbtest.linktable")[0][0])
    assert 20_000 < links < 50_000  # ≈ 1.4 links per node
    assert linkbench.consistency(s) == []
    res = sb.run("linkbench", threads=8, duration=8, seed=4)
    assert linkbench.consistency(s) == []
    types = res.types.set_index("type")
    n = int(types["count"].sum())
    assert n == res.totals["events"] > 5000
    for name, pct in zip(workloads.TYPES["linkbench"], workloads.LINKBENCH_MIX):
        p, got = pct / 100, types.loc[name, "count"] / n
        assert abs(got - p) <= 4 * math.sqrt(p * (1 - p) / n) + 0.003, (name, got, p)
    # the writes did happen: links hidden by delete_link, nodes added
    assert int(s.query("SELECT COUNT(*) FROM sbtest.linktable WHERE visibility = 0")[0][0]) > 0
    assert int(s.query("SELECT MAX(id) FROM sbtest.nodetable")[0][0]) > 20_000


@pytest.mark.server
def test_a_broken_count_is_found(loaded):
    s, _ = loaded
    s.query("UPDATE sbtest.counttable SET count = count + 1 ORDER BY id LIMIT 1")
    try:
        problems = linkbench.consistency(s)
        assert len(problems) == 1 and "counts differ from their visible links" in problems[0]
    finally:
        s.query("UPDATE sbtest.counttable SET count = count - 1 ORDER BY id LIMIT 1")
    assert linkbench.consistency(s) == []


@pytest.mark.server
def test_table_options_reach_our_tables_and_cleanup_drops_them(loaded):
    """`table_options` (how the compression study asks for compressed tables) apply to our
    workload's CREATE TABLEs as to the bundled ones; cleanup drops them."""
    s, _ = loaded
    sb = sysbench.Sysbench(s, db="lbz", nodes=500, table_options="ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8")
    sb.prepare("linkbench", threads=1)
    created = s.query("SHOW CREATE TABLE lbz.linktable")[0][1]
    assert "ROW_FORMAT=COMPRESSED" in created and "KEY_BLOCK_SIZE=8" in created
    assert linkbench.consistency(s, db="lbz") == []
    sb.cleanup("linkbench")
    assert s.query("SHOW TABLES FROM lbz") == []
