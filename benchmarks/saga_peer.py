"""Our MCT, Min-Min, Max-Min and Sufferage against the same heuristics of SAGA (PyPI ``anrg-saga``) on identical instances.

    .venv/bin/pip install -c constraints.txt -e '.[bench]'     # once: SAGA is a benchmark-only dependency
    PYTHONHASHSEED=0 .venv/bin/python benchmarks/saga_peer.py [--sizes 50x5 200x10 300x12] [--seed 0] [--cap 60]

An instance is N independent tasks (costs lognormal, median 100) on M machines of
five speeds (1, 1.5, 2, 3, 4; machines cycle through them), with run time = cost /
speed. SAGA gets it as a task graph without edges (it adds a zero-cost source and
sink) on a fully connected network; we get the same jobs (one platform per speed,
true run times as estimates) on the same machines, queued in the order SAGA's MCT
visits them. Makespan: ours from the discrete-event simulator (estimates exact, so
the plan is what runs), SAGA's from its schedule; both also over
:func:`simulator.bounds.makespan_lower_bound`. Time per decision (CPU time, so a busy
machine slows neither side): ours one scheduling pass over the N pending jobs,
SAGA's one ``schedule`` call, each divided by N; the best of ``--repeat`` (a SAGA
run over 2 s is timed once, one over ``--cap`` is stopped). SAGA's task order follows Python's string hashing: set ``PYTHONHASHSEED``
for repeatable figures (MCT depends on that order; ties elsewhere are broken by it).
"""

from __future__ import annotations

import argparse
import logging
import time
from functools import partial
from typing import Any

import numpy as np
from policy_cost import timed
from saga import Network, TaskGraph
from saga.schedulers import (
    MaxMinScheduler,
    MCTScheduler,
    MinMinScheduler,
    SufferageScheduler,
)
from scheduler_scale import load_note

from scheduler.policy import Context, Event
from scheduler.run_times import Oracle
from scheduler.specs import make_policy
from simulator.bounds import makespan_lower_bound
from simulator.estimates import truth
from simulator.metrics import compute
from simulator.simulate import backlog, simulate
from simulator.workload import Cluster, JobSpec, MachineSpec, PlatformSpec, Workload

SPEEDS = (1.0, 1.5, 2.0, 3.0, 4.0)
SAGA_REPEAT_UNDER = 2.0  # seconds: a longer SAGA run is timed once
PEERS = {"mct": MCTScheduler, "minmin": MinMinScheduler, "maxmin": MaxMinScheduler, "sufferage": SufferageScheduler}


def instance(tasks: int, machines: int, seed: int) -> tuple[Workload, dict[str, float], dict[str, float]]:
    """(our workload, task costs, machine speeds) of one random instance."""
    rng = np.random.default_rng(seed)
    costs = {f"t{i:05d}": float(c) for i, c in enumerate(100.0 * rng.lognormal(0.0, 1.0, tasks))}
    speeds = {f"m{k:03d}": SPEEDS[k % len(SPEEDS)] for k in range(machines)}
    platforms = {f"x{s:g}": s for s in sorted(set(speeds.values()))}
    cluster = Cluster({p: PlatformSpec(p) for p in platforms}, [MachineSpec(m, f"x{s:g}") for m, s in speeds.items()])
    jobs = [
        JobSpec(t, 0.0, "task", {p: c / s for p, s in platforms.items()}, params={"task": t}) for t, c in costs.items()
    ]
    return Workload(f"independent-{tasks}x{machines}", jobs, cluster), costs, speeds


def saga_instance(costs: dict[str, float], speeds: dict[str, float]) -> tuple[Network, TaskGraph]:
    """SAGA's network (all links fast; no data moves anyway) and task graph without dependencies."""
    names = list(speeds)
    links = [(a, b, 1.0) for i, a in enumerate(names) for b in names[i + 1 :]]
    return Network.create(list(speeds.items()), links), TaskGraph.create(list(costs.items()), [])


def pass_seconds(w: Workload, oracle: Oracle, policy: str, repeat: int) -> float:
    """Best CPU seconds of one pass of ``policy`` over all of ``w``'s jobs pending at t=0."""
    s = backlog(w, make_policy(policy), oracle)
    ctx = Context(0.0, s.state, oracle, Event.NEW_JOBS)
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        s.policy.schedule(ctx)
        best = min(best, time.process_time() - t)
    return best


def compare(tasks: int, machines: int, seed: int, repeat: int, limit: float) -> list[dict[str, Any]]:
    """One row per heuristic: makespans, ratios to the bound and to each other, seconds per decision."""
    w, costs, speeds = instance(tasks, machines, seed)
    oracle = truth(w)
    network, graph = saga_instance(costs, speeds)
    rank = {task.name: i for i, task in enumerate(graph.topological_sort())}
    w.jobs.sort(key=lambda spec: rank[spec.id])  # MCT's "arbitrary order": SAGA's, so both see the same queue
    bound = makespan_lower_bound(w)
    rows = []
    for name, peer in PEERS.items():
        ours = compute(simulate(w, make_policy(name), oracle)).makespan
        ours_s = pass_seconds(w, oracle, name, repeat)
        theirs_s, schedule = timed(partial(peer().schedule, network, graph), limit)
        for _ in range(repeat - 1 if theirs_s < SAGA_REPEAT_UNDER else 0):
            theirs_s = min(theirs_s, timed(partial(peer().schedule, network, graph), limit)[0])
        theirs = schedule.makespan if schedule is not None else float("nan")
        rows.append(
            {
                "size": f"{tasks} x {machines}",
                "policy": name,
                "ours": ours,
                "saga": theirs,
                "ratio": ours / theirs,
                "ours_bound": ours / bound,
                "saga_bound": theirs / bound,
                "ours_us": 1e6 * ours_s / tasks,
                "saga_us": 1e6 * theirs_s / tasks,
                "speedup": theirs_s / ours_s,
            }
        )
        print(f"  {tasks} x {machines} {name:9s} ours {ours:9.1f}  saga {theirs:9.1f}", flush=True)
    return rows


def markdown(rows: list[dict[str, Any]], limit: float) -> str:
    lines = [
        (
            "| tasks x machines | policy | our makespan | SAGA makespan | ours / SAGA | ours / bound | SAGA / bound "
            "| our us / decision | SAGA us / decision | SAGA time / ours |"
        ),
        "| --- | --- |" + " ---: |" * 8,
    ]
    for r in rows:
        if np.isnan(r["saga"]):
            saga = [f"> {limit:g} s", "-", "-", "-", "-"]
        else:
            saga = [
                f"{r['saga']:.1f}",
                f"{r['ratio']:.3f}",
                f"{r['saga_bound']:.3f}",
                f"{r['saga_us']:.0f}",
                f"{r['speedup']:.0f}x",
            ]
        lines.append(
            f"| {r['size']} | {r['policy']} | {r['ours']:.1f} | {saga[0]} | {saga[1]} | {r['ours_bound']:.3f} | {saga[2]} "
            f"| {r['ours_us']:.1f} | {saga[3]} | {saga[4]} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["50x5", "200x10", "300x12"], help="TASKSxMACHINES")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cap", type=float, default=60.0, help="seconds before a SAGA run is stopped")
    args = parser.parse_args()
    logging.getLogger().setLevel(logging.ERROR)  # SAGA warns that it adds a source and a sink to every graph
    print(load_note(), flush=True)
    rows = []
    for size in args.sizes:
        tasks, _, machines = size.partition("x")
        rows += compare(int(tasks), int(machines), args.seed, args.repeat, args.cap)
    print()
    print(markdown(rows, args.cap))


if __name__ == "__main__":
    main()
