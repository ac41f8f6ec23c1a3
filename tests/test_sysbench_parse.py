"""sysbench output parsing, on output recorded from sysbench 1.0.20 with our wrapper."""
from pathlib import Path

import pytest

from dbstudies.workloads import sysbench_output

RECORDED = Path(__file__).parent / "fixtures" / "sysbench_oltp_read_only_2threads.txt"


@pytest.fixture
def text():
    return RECORDED.read_text()


def test_intervals_and_total(text):
    intervals, total = sysbench_output.parse_report(text)
    assert len(intervals) == 3 and total["kind"] == "total"
    df = sysbench_output.intervals_frame(intervals)
    assert df["second"].tolist() == [1, 2, 3]
    assert df["tps"].iloc[0] == pytest.approx(4039.1002)
    assert df["reads_per_s"].iloc[0] == pytest.approx(56667 / 1.001708)
    assert (df["writes_per_s"] == 0).all()
    assert list(df.columns) == ["second", "threads_running", "tps", "qps", "reads_per_s",
                                "writes_per_s", "errors_per_s", "reconnects_per_s", "latency_p_ms"]


def test_histogram_accounts_for_every_event(text):
    hist = sysbench_output.parse_histogram(text)
    _, total = sysbench_output.parse_report(text)
    assert hist["count"].sum() == total["events"] == 11245
    assert hist["value_ms"].is_monotonic_increasing
    assert hist["value_ms"].iloc[0] == 0.312 and hist["value_ms"].iloc[-1] == 3.748


def test_run_percentiles_from_histogram_match_sysbench(text):
    _, total = sysbench_output.parse_report(text)
    hist = sysbench_output.parse_histogram(text)
    t = sysbench_output.run_totals(total, hist)
    # sysbench's own whole-run 99th percentile, printed with 6 decimals; buckets have 3
    assert t["latency_p99_ms"] == pytest.approx(total["latency_pct_ms"], abs=0.001)
    assert t["latency_p50_ms"] < t["latency_p95_ms"] < t["latency_p99_ms"] <= t["latency_max_ms"] + 0.05
    assert t["tps"] == pytest.approx(11245 / 3.005503)


def test_missing_histogram_gives_nan_percentiles():
    empty = sysbench_output.parse_histogram("no histogram here")
    assert empty.empty
    assert sysbench_output.histogram_percentile(empty, 99) != sysbench_output.histogram_percentile(empty, 99)


def test_version_line():
    assert sysbench_output.parse_version("sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)") == "1.0.20"
    with pytest.raises(ValueError):
        sysbench_output.parse_version("bash: sysbench: command not found")


def test_per_type_lines_are_summed_over_threads():
    """Our workloads' lines (dbs_common.lua): totals, rollbacks, retries and histograms of
    every thread merged; per-second counts summed by second."""
    text = "\n".join([
        '{"kind":"types_interval","thread":0,"second":1,"counts":{"new_order":3,"payment":2}}',
        '{"kind":"types_interval","thread":1,"second":1,"counts":{"new_order":1}}',
        '{"kind":"types_interval","thread":1,"second":2,"counts":{"payment":4}}',
        '{"kind":"types","thread":0,"types":{"new_order":{"count":3,"rollbacks":1,"retries":2,'
        '"sum_ms":30,"max_ms":20,"hist":[[5,2],[20,1]]},"payment":{"count":2,"rollbacks":0,'
        '"retries":0,"sum_ms":4,"max_ms":3,"hist":[[1,1],[3,1]]}}}',
        '{"kind":"types","thread":1,"types":{"new_order":{"count":1,"rollbacks":0,"retries":1,'
        '"sum_ms":50,"max_ms":50,"hist":[[50,1]]},"payment":{"count":4,"rollbacks":0,'
        '"retries":0,"sum_ms":8,"max_ms":2,"hist":[[2,4]]}}}',
    ])
    types, seconds = sysbench_output.parse_types(text)
    no = types.set_index("type").loc["new_order"]
    assert (no["count"], no["rollbacks"], no["retries"]) == (4, 1, 3)
    assert no["latency_avg_ms"] == 20 and no["latency_max_ms"] == 50
    assert no["latency_p50_ms"] == 5 and no["latency_p99_ms"] == 50  # of the merged histogram
    assert seconds.to_dict("records") == [{"second": 1, "type": "new_order", "count": 4},
                                          {"second": 1, "type": "payment", "count": 2},
                                          {"second": 2, "type": "payment", "count": 4}]
    assert sysbench_output.parse_types('{"kind":"total"}')[0].empty  # bundled workloads: nothing
