"""Run delay as a covariate of the paired verdicts: does it take noise out of the paired log
ratios without taking the effect with it?

For every compared cell of each run given (paired design, steps v6 on: the server's and the
client's time waiting for a CPU and the host's CPU pressure), the QPS log ratio of each pair
against the difference of each covariate between the pair's steps (candidate − baseline), as
a rate — µs per second of the step, the per-transaction figure × transactions per second: per
transaction, a covariate holds 1 ÷ throughput, the outcome itself (on the A/A run below it
"explained" 99 % of the variance that way, which is no finding). the log ratios' SD alone and adjusted (`stats.covariate_adjusted`),
their mean (unchanged by the centred adjustment) and what adjusting to no difference in the
covariate would estimate instead. On an A/A run the ratio of SDs says what the covariate
could buy; on an A/B run the mean against `at_zero` says whether the covariate moves with
the arms (then adjusting to it takes the effect with it).

    .venv/bin/python tests/benchmarks/covariate.py data/runs/<study>/<run> [...]
"""
from __future__ import annotations

import math
import sys

import pandas as pd

from dbstudies import stats
from dbstudies.analysis import BY
from dbstudies.store import results

COVARIATES = ("wait_server_us_per_txn", "wait_client_us_per_txn", "cpu_pressure_us_per_txn")


def rows(run_dir: str) -> list[dict]:
    run = results.Run.open(run_dir)
    steps = results.measured(run)
    arms = [a["label"] for a in run.metadata.get("arms", [])]
    base, out = arms[0], []
    for cand in arms[1:]:
        qps = stats.pair_up(steps, by=BY, factor="arm", baseline=base, candidate=cand, value="qps", pair="pair")
        for cov in COVARIATES:
            if cov not in steps:
                continue
            rate = steps[cov] * steps["tps"] + 1e-9  # µs per second: not divided by the outcome
            x = stats.pair_up(steps.assign(**{cov: rate}), by=BY, factor="arm", baseline=base,
                              candidate=cand, value=cov, pair="pair")
            both = qps.merge(x[[*BY, "pair", "a", "b"]].rename(columns={"a": "xa", "b": "xb"}), on=[*BY, "pair"])
            for cell, g in both.groupby(BY):
                r = stats.covariate_adjusted(g["d"], g["xb"] - g["xa"])
                out.append({"run": run.path.name, "candidate": cand, "cell": "@".join(map(str, cell)),
                            "covariate": cov.removesuffix("_us_per_txn") + " µs/s", "pairs": int(r["n"]),
                            "QPS %": math.expm1(r["mean"]) * 100, "at no Δ %": math.expm1(r["at_zero"]) * 100,
                            "SD": r["sd"], "SD adjusted": r["sd_adjusted"], "ratio": r["ratio"]})
    return out


if __name__ == "__main__":
    table = pd.DataFrame([r for d in sys.argv[1:] for r in rows(d)])
    with pd.option_context("display.width", 200, "display.float_format", "{:.3f}".format):
        print(table.to_string(index=False))
