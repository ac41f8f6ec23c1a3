"""The measurement loop every study shares (`Loop`): servers, rounds or blocks, steps, what they
record — one phase of a measurement (`experiment.measure` runs the phases).

The unit of replication is a *block*: one arm (configuration) on a fresh server start.
For each repeat, every arm gets one block, in an order shuffled per repeat, so
configurations interleave instead of running all A then all B. A block is: restart the
server with the arm's intent and settings (neither sticks to the next start), warm up (recorded,
discarded), then measure every cell in a seeded random order. Each finished step is
flushed to the run directory at once, so a failure keeps everything measured so far.

**The paired design** (`design = "paired"`, the default of the thread-pool, versions and
DBT3 studies) measures every arm on a server of its own, all running for the whole
measurement — or, in a study whose steps give their arm's settings to each session
(`SHARED_SERVER`: DBT3's optimizer candidates), the arms of one flavour on one shared server
(`server_key`), a setting no session can take refused before the data is loaded. A *round* measures every
cell once on every arm, the arms of one cell back to back (a *pair*), in an order balanced
across rounds (each arm in each position equally often) and cells shuffled per round; every
`restart_every` rounds all servers are restarted and warmed up. Host noise seconds apart is
shared by the steps of a pair, so the per-pair log ratios (`stats.paired_table`) are far
less noisy than blocks on fresh starts compared as independent samples (docs/statistics.md).
After a step that wrote, its server's background flushing is waited out (`probes.settle`,
recorded as `settle_s`) before another server is measured; a pair with a step measured on a
busy host is measured again whole.
"""
from __future__ import annotations

import contextlib
import functools
import time
from typing import Any

import numpy as np
import pandas as pd
from tqdm import tqdm

from .. import servers
from ..core import errors
from ..kit.contract import Study, study_name
from ..kit.studykit import Arm, StudyParams, arms_of
from ..observe import callgrind, profiler
from ..store.results import Run
from ..workloads import sql
from . import inventory, precision
from .checks import max_clients
from .context import Context
from .schedule import (
    FOLD_SECONDS,
    MAX_ROUNDS,
    cell_text,
    cells_of,
    design,
    orders_so_far,
    pairs_of,
    profile_seconds,
    rounds_in,
    server_key,
    session_settings,
)


class Loop:
    """The servers (created, started and prepared on first use), blocks or rounds, steps."""

    def __init__(self, study: Study, p: StudyParams, run: Run):
        self.study, self.p, self.run = study, p, run
        self.stack = contextlib.ExitStack()
        self.contexts: dict[str, Context] = {}
        self.recorded: set[str] = set()
        self.client_record = {"version": None, "calls": []}  # the `client` hook's: version, argv of every call
        self.warmups = [0]  # one counter for all servers of the run
        self.done = 0       # steps measured so far (the progress of a later phase counts on)
        self.pair_seconds: dict[tuple, list[float]] = {}  # per cell: how long its pairs took
        self.restart_seconds: list[float] = []            # how long restarting every server took
        self.note = ""      # what the progress says after each step's words (the rounds to a target)
        budget = p.budget
        self.end = time.monotonic() + budget * 60 if budget else None
        self.profiling = False  # in the profiled rounds: the whole budget is theirs

    @property
    def deadline(self) -> float | None:
        """When the budget ends for the phase measuring now: its end, less — before the
        profiled rounds — the time kept for them (`reserve`)."""
        if self.end is None:
            return None
        return self.end - (0.0 if self.profiling else self.reserve())

    def reserve(self) -> float:
        """The profiled rounds' time (`cpu_profile`; 0 without): their estimate
        (`profile_seconds`) until pairs are timed, then from the pairs' and restarts' own
        times — each chosen cell (at most `profiler.MAX_CELLS`, or those named) a pair of the
        compared arms per round, each step folded (`schedule.FOLD_SECONDS`)."""
        p = self.p
        if not getattr(p, "cpu_profile", False):
            return 0.0
        timed = [t for ts in self.pair_seconds.values() for t in ts]
        if not timed:
            return profile_seconds(self.study, p)
        every = arms_of(self.study, p)
        compared = [a for a in every if a.twin_of is None]
        cells = len(p.cpu_profile_cells or []) or min(profiler.MAX_CELLS, len(self.study.cells(p)))
        pair = float(np.mean(timed)) * len(compared) / len(every)
        restart = float(np.mean(self.restart_seconds or [0.0])) / max(p.restart_every, 1)
        return p.profile_rounds() * (restart + cells * (pair + len(compared) * FOLD_SECONDS))

    def __enter__(self) -> "Loop":
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self.stack.close()  # stop the servers, remove their datadirs
        finally:  # the argv of every call, the failing one included, and start/stop times
            self.run.update(sysbench=self.client_record,
                            server_events={f: c.server.events for f, c in self.contexts.items()})

    def context(self, key: str, flavour_name: str, arms: list[Arm] = ()) -> Context:
        """The server called `key` (`server_key`); on a shared server, every one of its `arms`
        must be able to set its settings per session — checked before the data is loaded."""
        if key not in self.contexts:
            flavour = servers.load_flavour(flavour_name)
            if design(self.p) == "paired":  # several servers of one flavour: a folder each
                where = log_dir = self.run.server_dir(key)
            else:
                where, log_dir = self.run.server_dir(flavour.name), self.run.servers_dir
            made = {"settings": dict(self.p.settings)}
            if getattr(self.p, "count", 0):  # under callgrind, its windows' dumps beside its logs
                made = callgrind.server_options(flavour, self.run.server_dir(key) / "counts", made["settings"])
            server = servers.instance(flavour, where, log_dir=log_dir, **made,
                                      intent=None if flavour.remote else servers.base_intent(self.p.align),
                                      cpus=self.p.server_cpus, max_clients=max_clients(self.p))
            self.stack.enter_context(server)
            self.stack.callback(server.remove_datadir)
            self.stack.callback(server.stop)
            ctx = Context(self.p, self.run, server,
                          self.study.client(self.p, server, self.client_record), warmups=self.warmups,
                          siblings=lambda key=key: [c.server.pid for k, c in self.contexts.items()
                                                    if k != key and c.server.pid is not None])
            self.contexts[key] = ctx
            server.start()
            self.check_sessions(server, arms)
            inventory.record_server(self.run, server, f"prepare {key}")
            now = self.run.progress() or {"done": 0, "total": 0}
            self.run.set_progress(now["done"], now["total"], f"preparing {key}: loading the data")
            self.study.prepare(ctx)
            inventory.record_data(self.run, server, key)
        return self.contexts[key]

    def check_sessions(self, server: servers.Server, arms: list[Arm]) -> None:
        """Arms sharing `server` set their settings per session: a setting a session cannot
        take (a global or read-only variable) is a parameter error, before any load."""
        problems = [f"{a.label}: {m}" for a in arms
                    for m in sql.session_problems(server, session_settings(a, self.p))]
        if problems:
            raise errors.ParamError([
                f"{m} — in the paired design the arms of one flavour share a server and switch "
                "settings per session; a setting no session can take needs `design blocks`"
                for m in problems])

    def use(self, ctx: Context, arm: Arm, repeat: int) -> Context:
        """`ctx` about to measure `arm`: its arm, round and session settings."""
        ctx.arm, ctx.repeat, ctx.session = arm, int(repeat), session_settings(arm, self.p)
        return ctx

    def restart(self, ctx: Context, arm: Arm, repeat: int, *, also: list[Arm] = ()) -> None:
        """Restart `ctx`'s server with `arm`'s start settings (a shared server: with none), and
        warm it up for `arm` and each of `also` (the other arms sharing it); each arm's server
        is recorded once."""
        self.use(ctx, arm, repeat)
        ctx.server.restart(ctx.start_settings(), intent=arm.intent)
        for a in [arm, *also]:
            self.use(ctx, a, repeat)
            if a.label not in self.recorded:
                self.recorded.add(a.label)
                inventory.record_server(self.run, ctx.server, a.label, session=ctx.session)
            self.study.warmup(ctx)

    def out_of_time(self, durations: list[float]) -> bool:
        """Whether the next round (or repeat), as long as the mean one so far, would end past
        the time budget's deadline (never before two: a verdict needs them)."""
        if self.deadline is None or len(durations) < 2:
            return False
        return time.monotonic() + float(np.mean(durations)) > self.deadline

    def blocks(self, steps: pd.DataFrame, arms: dict[str, Arm], progress: bool, *,
               before: int = 0) -> None:
        """Measure `steps` block by block; `before`: steps measured by earlier phases (the
        progress counts on from them)."""
        total = before + len(steps)
        bar = tqdm(total=len(steps), disable=not progress, unit="step", mininterval=2,
                   desc=study_name(self.study) + (" (follow-up)" if before else ""))
        step = self.study.step
        done, durations, current, started = before, [], None, time.monotonic()
        self.run.set_progress(done, total, "starting the server")
        try:
            for (repeat, label), block in steps.groupby(["repeat", "arm"], sort=False):
                if repeat != current:  # a new repeat: does it still fit the time budget?
                    if current is not None:
                        durations.append(time.monotonic() - started)
                        started = time.monotonic()
                    if self.out_of_time(durations):
                        break
                    current = repeat
                arm = arms[label]
                flavour = arm.flavour or self.p.flavour
                ctx = self.context(flavour, flavour)
                ctx.cells = cells_of(block)
                self.restart(ctx, arm, repeat)
                for cell in block.to_dict("records"):
                    now = f"r{repeat} {label} " + cell_text(cell)
                    bar.set_postfix_str(now)
                    self.run.set_progress(done, total, now)
                    ctx.progress = functools.partial(_within_step, self.run, done, total, now)
                    step(ctx, cell)
                    done += 1
                    bar.update()
            self.done = done
            self.run.set_progress(done, total, "done")
        finally:
            bar.close()

    def rounds(self, steps: pd.DataFrame, arms: dict[str, Arm], progress: bool, *,
               before: int = 0) -> None:
        """Measure a paired plan round by round: every `restart_every` rounds each server is
        restarted and warmed up (for every arm it serves), then each pair's steps run back to
        back (`pair`). `before`: steps measured by earlier phases."""
        per_round = int((steps["repeat"] == steps["repeat"].iloc[0]).sum())
        total = before + (len(steps) if self.deadline is None or self.p.target else per_round * rounds_in(
            self.study, self.p, self.deadline - time.monotonic()))
        grows = self.deadline is not None and not self.p.target  # rounds until the time is up
        bar = tqdm(total=None if grows else total - before, disable=not progress, unit="step", mininterval=2,
                   desc=study_name(self.study) + (" (follow-up)" if before else ""))  # a fraction never falls
        self.run.set_progress(before, total, "starting the servers")
        keys, served, contexts = self.servers(steps, arms)
        done, durations = before, []
        try:
            for repeat, block in steps.groupby("repeat", sort=False):
                if self.out_of_time(durations):
                    break
                t0 = time.monotonic()
                self.restart_due(int(repeat), served, contexts, done, total)
                for _, pair in block.groupby("pair", sort=False):
                    done = self.pair({a: contexts[k] for a, k in keys.items()}, arms,
                                     pair.to_dict("records"), int(repeat), done, total, bar)
                durations.append(time.monotonic() - t0)
                if grows:
                    total = max(total, done + per_round)
            if not before:
                self.run.update(rounds_done=len(durations))
            self.done = done
            self.run.set_progress(done, done if self.deadline else total, "done")
        finally:
            bar.close()

    def servers(self, steps: pd.DataFrame, arms: dict[str, Arm]) -> tuple[
            dict[str, str], dict[str, list[Arm]], dict[str, Context]]:
        """The paired design's servers: each arm's server key, the arms each server serves,
        and each server's context (started and prepared on first use; a warm-up goes through
        the cells of `steps`' first round)."""
        keys = {label: server_key(arm, self.p) for label, arm in arms.items()}
        served = {k: [a for a in arms.values() if keys[a.label] == k] for k in dict.fromkeys(keys.values())}
        contexts = {k: self.context(k, mine[0].flavour or self.p.flavour, mine) for k, mine in served.items()}
        for k, mine in served.items():  # the cells a warm-up goes through: the round's
            contexts[k].cells = cells_of(steps[(steps["repeat"] == steps["repeat"].iloc[0])
                                             & (steps["arm"] == mine[0].label)])
        return keys, served, contexts

    def restart_due(self, repeat: int, served: dict[str, list[Arm]], contexts: dict[str, Context],
                    done: int, total: int) -> None:
        """Every `restart_every` rounds, restart and warm up every server (for every arm it
        serves), timed."""
        if (repeat - 1) % self.p.restart_every:
            return
        t0 = time.monotonic()
        for k, mine in served.items():
            self.run.set_progress(done, total, f"r{repeat}: restarting {k}")
            self.restart(contexts[k], mine[0], repeat, also=mine[1:])
        self.restart_seconds.append(time.monotonic() - t0)

    def refine(self, first: pd.DataFrame, arms: dict[str, Arm], progress: bool) -> pd.DataFrame:
        """With a precision target, after `first` (every cell's first rounds): round after
        round, one pair of each cell `fund` chooses (`schedule.pairs_of`), servers restarted
        every `restart_every` rounds as before, until no cell is chosen; what it decided is
        kept in the run's `precision` metadata after every round (an interrupted run says it
        too). Returns the steps it measured (a later phase numbers on from them)."""
        p, run = self.p, self.run
        rng = np.random.default_rng(p.seed + 3)
        plan_cells, history = orders_so_far(first)
        repeat, numbers = int(first["repeat"].max()), {"pair": int(first["pair"].max()), "step": int(first["step"].max())}
        keys, served, contexts = self.servers(first, arms)
        bar = tqdm(total=None, disable=not progress, unit="step", mininterval=2,  # its total grows: no fraction
                   desc=study_name(self.study) + " (to the target)")
        done, record, measured = self.done, {"target": dict(p.target), "first_rounds": repeat}, []
        try:
            while repeat < MAX_ROUNDS:
                todo, more, record = self.fund(plan_cells, repeat, record)
                if not todo:
                    break
                repeat += 1
                rows = pairs_of(todo, history, rng, repeat, after=numbers)
                numbers, measured = {k: rows[-1][k] for k in numbers}, measured + rows
                total = done + len(rows) + max(more - len(todo), 0) * len(arms)
                self.restart_due(repeat, served, contexts, done, total)
                for pair in pd.DataFrame(rows).groupby("pair", sort=False):
                    done = self.pair({a: contexts[k] for a, k in keys.items()}, arms,
                                     pair[1].to_dict("records"), repeat, done, total, bar)
            else:
                record["stopped"] = f"the most rounds a run plans ({MAX_ROUNDS})"
            record["rounds"] = repeat
            run.update(precision=record, rounds_done=repeat)
            self.done = done
            run.set_progress(done, done, "done")
            print(f"to the target: {record['stopped']} after {repeat} rounds", flush=True)
            return pd.DataFrame(measured, columns=first.columns)
        finally:
            bar.close()

    def fund(self, plan_cells: list[dict[str, Any]], repeat: int,
             record: dict[str, Any]) -> tuple[list[dict[str, Any]], int, dict[str, Any]]:
        """The cells (the plan's) that round `repeat + 1` measures: those still short of their
        target that the time left can take to it (`precision.fund`), none when the round would
        end past the budget; with the pairs they still need in all, and the run's `precision`
        record of the decision (its `stopped` said when nothing is chosen)."""
        p = self.p
        short = precision.shortfall(self.study, p, self.run)
        by = short.attrs.get("by") or []
        of_table = {tuple(c[b] for b in by): c for c in plan_cells}  # a table's cell → the plan's
        restart = float(np.mean(self.restart_seconds or [0.0]))
        chosen, left = precision.fund(short, lambda cell: self.seconds_per_pair(_key(of_table[cell])),
                                      self.deadline - time.monotonic(), restart, p.restart_every)
        due = 0.0 if repeat % p.restart_every else restart
        if chosen and time.monotonic() + due + sum(self.seconds_per_pair(_key(of_table[c])) for c in chosen) \
                > self.deadline:  # the next round would end past the budget, however hopeful
            left, chosen = left + chosen, []
        record = precision.record(record, short, left, repeat)
        if not chosen:
            return [], 0, {**record, "stopped": precision.stopped(left)}
        self.run.update(precision=record)
        self.note = (f" · to the target: {len(chosen)} cell{'s' if len(chosen) != 1 else ''} short"
                     + (f", {len(left)} beyond the budget" if left else ""))
        to_go = dict(zip(short["cell"], short["more"]))
        return [of_table[c] for c in chosen], int(sum(to_go[c] for c in chosen)), record

    def seconds_per_pair(self, cell: tuple) -> float:
        """How long a pair of `cell` took so far on average (untimed yet: every pair's)."""
        own = self.pair_seconds.get(cell)
        return float(np.mean(own if own else [t for ts in self.pair_seconds.values() for t in ts] or [0.0]))

    def pair(self, contexts: dict[str, Context], arms: dict[str, Arm],
             cells: list[dict[str, Any]], repeat: int, done: int, total: int, bar: Any) -> int:
        """One cell on every arm, back to back: a study with its own `step` measures each as
        it does in blocks; else the study's `pair` measures them (sysbench's: `steps.sysbench_pair`).
        `begin(i, cell)` readies the context of the pair's `i`-th step for its arm and says it
        runs (`announce=False`: readied to store what it measured). The step number never goes
        back: a pair measured again (a busy host) counts on from its last step."""
        last = done

        def begin(i: int, cell: dict[str, Any], announce: bool = True) -> Context:
            nonlocal last
            ctx = self.use(contexts[cell["arm"]], arms[cell["arm"]], repeat)
            if announce:
                n = last = max(done + i, last)
                now = f"r{repeat} {cell['arm']} " + cell_text(cell) + (" (again: the host was busy)" if n > done + i else "") + self.note
                bar.set_postfix_str(now)
                self.run.set_progress(n, total, now)
                ctx.progress = functools.partial(_within_step, self.run, n, total, now)
            return ctx

        t0 = time.monotonic()
        self.study.pair(begin, cells)
        self.pair_seconds.setdefault(_key(cells_of(pd.DataFrame(cells[:1]))[0]), []).append(time.monotonic() - t0)
        bar.update(len(cells))
        return done + len(cells)


def _key(cell: dict[str, Any]) -> tuple:  # a cell's values, in order: the key of its pairs' times, orders
    return tuple(cell.values())


def _within_step(run: Run, done: int, total: int, now: str, text: str) -> None:
    run.set_progress(done, total, f"{now} · {text}")
