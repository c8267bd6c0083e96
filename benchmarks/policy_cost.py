"""What a scheduling decision costs under every policy for plain workloads, and how far each lands from the makespan bound.

    .venv/bin/python benchmarks/policy_cost.py [--jobs 1000 10000] [--machines 100] [--repeat 3] [--cap 60]

Times are CPU seconds of this process (the machine may be shared); the cap is wall time.

Table 1: one pass of ``policy.schedule`` over a queue of N pending jobs (all submitted
at 0, true run times as estimates) on ``--machines`` machines cycling through seed
000's six machine types (the queue of ``scheduler_scale.py pass``). Each policy is made
once and timed over ``--repeat`` passes on the same state (its caches warm, as between
passes in service; fewer once their CPU seconds add up to ``--cap``); the median is reported,
per pass and per job placed (START or DEFER). A pass longer than ``--cap`` wall seconds is
stopped and reported as such.

Table 2: ``--ratio-jobs`` NCBI jobs submitted together at t=0 (independent; data caches
off so the estimates are exact) on ``--per-type`` machines of each type, simulated under
each policy: makespan over :func:`simulator.bounds.makespan_lower_bound`.

Policies are those :func:`scheduler.policy.applicable_policies` lists for a workload
that provides nothing beyond jobs and machines, with their default options.

Tables 3 and 4: the same for the policies that need more than jobs and machines, each on the
kind of instance its paper uses. Santos-Neto et al. 2004's data-aware policies (sites) get a bag of N tasks
(2 GB of input cut into N slices) on 4 sites, data servers empty; Walker 2001's RAND, MP and MPL
(grid attributes) get one job of N tasks on Npacinet-2, the grid view built beforehand (once per
grid, not per pass). Their makespan ratios come from simulating a 1,000-task bag (the bound
ignores input transfers, which dominate Santos-Neto et al. 2004's first execution, so it is loose there) and
Walker 2001's 40-job workload (jobs arrive over time; the bound counts submit times).
"""

from __future__ import annotations

import argparse
import signal
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from typing import Any

from scheduler_scale import load_note, queue

from scheduler.gridinfo import GRID_ATTRIBUTES
from scheduler.orders import OrderKind
from scheduler.policies import applicable_policies
from scheduler.policies.walker import StaticPlacement
from scheduler.policy import Context, Event, Policy
from scheduler.sites import SITES
from scheduler.specs import make_policy
from simulator.bounds import makespan_lower_bound
from simulator.metrics import compute
from simulator.scenarios import parse_estimates
from simulator.simulate import backlog, simulate
from simulator.workload import Workload
from simulator.workloads import bag_of_tasks, ncbi, walker_grid

PLACED = (OrderKind.START, OrderKind.DEFER)


class Capped(Exception):
    """A measured call ran past its time cap."""


@contextmanager
def cap(seconds: float) -> Iterator[None]:
    """Interrupt the body with :class:`Capped` after ``seconds`` of wall time (main thread only).

    A wall-clock alarm: a CPU-time one (ITIMER_PROF) coarsens the process CPU clock on
    some kernels, which would spoil the CPU times measured under it.
    """

    def stop(signum: int, frame: Any) -> None:
        raise Capped

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def timed(call: Callable[[], Any], limit: float) -> tuple[float, Any]:
    """(CPU seconds, result) of ``call``, or (inf, None) if it ran past ``limit`` seconds of wall time.

    CPU rather than wall time is reported: the figures then hold on a shared, busy machine.
    """
    t = time.process_time()
    try:
        with cap(limit):
            out = call()
    except Capped:
        return float("inf"), None
    return time.process_time() - t, out


def pass_cost(name: str, policy: Policy, ctx: Context, jobs: int, repeat: int, limit: float) -> dict[str, Any]:
    """Median CPU seconds of ``policy``'s pass over ``ctx`` (``jobs`` pending), and per job placed."""
    times: list[float] = []
    placed = 0
    while len(times) < repeat and sum(times) < limit:  # a slow policy gets fewer repeats, not more minutes
        seconds, orders = timed(partial(policy.schedule, ctx), limit)
        times.append(seconds)
        if orders is None:
            break
        placed = sum(order.kind in PLACED for order in orders)
    median = statistics.median(times)
    print(f"  pass {name:16s} {jobs:6d} jobs  {_ms(median)}", flush=True)
    return {
        "policy": name,
        "jobs": jobs,
        "median_s": median,
        "placed": placed,
        "per_job_us": 1e6 * median / placed if placed else float("nan"),
    }


def pass_costs(policies: list[str], jobs: int, machines: int, repeat: int, limit: float) -> list[dict[str, Any]]:
    """Median CPU seconds of one pass over ``jobs`` pending jobs, per policy."""
    s, truth = queue(jobs, machines, seed=0)
    ctx = Context(0.0, s.state, truth, Event.NEW_JOBS)
    return [pass_cost(name, make_policy(name), ctx, jobs, repeat, limit) for name in policies]


def grid_instance(needs: str, tasks: int, seed: int) -> Workload:
    """``tasks`` tasks pending at 0 on the grid its policies need: Santos-Neto et al. 2004's sites or Walker 2001's Npacinet-2."""
    if needs == SITES:
        return bag_of_tasks.generate(seed=seed, granularity=2.0 * 1024 / tasks, total_gb=2.0, sites=4)
    return walker_grid.generate(seed=seed, jobs=1, net=2, min_tasks=tasks, max_tasks=tasks, x86_only=0.0)


def grid_pass_costs(needs: str, policies: list[str], jobs: int, repeat: int, limit: float) -> list[dict[str, Any]]:
    """Median CPU seconds of one pass over ``jobs`` pending tasks of a grid instance, per policy."""
    w = grid_instance(needs, jobs, seed=0)
    truth = parse_estimates("oracle").oracle(w)
    rows = []
    for name in policies:
        s = backlog(w, make_policy(name), truth)
        if isinstance(s.policy, StaticPlacement):
            s.policy.grid_view(s.state)
        rows.append(pass_cost(name, s.policy, Context(0.0, s.state, truth, Event.NEW_JOBS), len(w.jobs), repeat, limit))
    return rows


def independent(jobs: int, per_type: int, seed: int) -> Workload:
    """The first ``jobs`` NCBI jobs, all submitted at 0 and without data caches (true times exact), on the NCBI cluster."""
    w = ncbi.generate(hours=jobs * 1.5 * 1.14 / 3600, seed=seed, per_type=per_type, history_runs=1)
    specs = [replace(spec, submit=0.0, data=None) for spec in w.jobs[:jobs]]
    if len(specs) < jobs:
        raise ValueError(f"the trace has only {len(specs)} jobs")
    return Workload(f"ncbi-independent-{jobs}", specs, w.cluster, warm_gain={})


def ratios(policies: list[str], w: Workload, limit: float) -> tuple[float, list[dict[str, Any]]]:
    """The lower bound, and each policy's makespan and makespan / bound, simulating ``w``."""
    jobs = len(w.jobs)
    bound = makespan_lower_bound(w)
    truth = parse_estimates("oracle").oracle(w)
    rows = []
    for name in policies:
        seconds, result = timed(partial(simulate, w, make_policy(name), truth), limit)
        makespan = compute(result).makespan if result is not None else float("inf")
        unfinished = compute(result).unfinished if result is not None else jobs
        rows.append(
            {
                "policy": name,
                "makespan": makespan,
                "ratio": makespan / bound,
                "sim_s": seconds,
                "unfinished": unfinished,
            }
        )
        print(f"  simulate {name:16s} makespan {makespan:10.0f} s  ({seconds:.1f} s)", flush=True)
    return bound, rows


def _ms(seconds: float) -> str:
    return "stopped at cap" if seconds == float("inf") else f"{1e3 * seconds:.1f} ms"


def markdown_costs(rows: list[dict[str, Any]], sizes: list[int], limit: float) -> str:
    """Policy x size table of ms per pass and us per job placed."""
    head = "| policy | " + " | ".join(f"{n:,} jobs: ms / pass | us / job" for n in sizes) + " |"
    lines = [head, "| --- |" + " ---: | ---: |" * len(sizes)]
    for name in dict.fromkeys(r["policy"] for r in rows):
        cells = []
        for n in sizes:
            r = next(r for r in rows if r["policy"] == name and r["jobs"] == n)
            if r["median_s"] == float("inf"):
                cells += [f"> {limit:g} s (capped)", "-"]
            else:
                cells += [f"{1e3 * r['median_s']:.1f}", f"{r['per_job_us']:.1f}"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown_ratios(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| policy | makespan (s) | makespan / bound | unfinished | simulation (CPU s) |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for r in sorted(rows, key=lambda r: r["ratio"]):
        if r["makespan"] == float("inf"):
            lines.append(f"| {r['policy']} | - | capped | - | > cap |")
        else:
            lines.append(
                f"| {r['policy']} | {r['makespan']:.0f} | {r['ratio']:.3f} | {r['unfinished']} | {r['sim_s']:.1f} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[1000, 10_000], help="queue lengths to time a pass at")
    parser.add_argument("--machines", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cap", type=float, default=60.0, help="wall seconds before a pass or a simulation is stopped")
    parser.add_argument("--ratio-jobs", type=int, default=2000)
    parser.add_argument("--per-type", type=int, default=2, help="machines of each of the six types for table 2")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--policies", nargs="*", help="default: every policy applicable to plain workloads")
    args = parser.parse_args()
    policies = args.policies or applicable_policies(())
    print(f"policies: {', '.join(policies)}; {load_note()}", flush=True)
    rows = [row for n in args.jobs for row in pass_costs(policies, n, args.machines, args.repeat, args.cap)]
    w = independent(args.ratio_jobs, args.per_type, args.seed)
    bound, ratio_rows = ratios(policies, w, args.cap)
    grids = {
        needs: [p for p in applicable_policies((needs,)) if p not in applicable_policies(())]
        for needs in (SITES, GRID_ATTRIBUTES)
    }
    grid_rows = {
        needs: [r for n in args.jobs for r in grid_pass_costs(needs, names, n, args.repeat, args.cap)]
        for needs, names in grids.items()
    }
    grid_ratios = {
        SITES: ratios(grids[SITES], grid_instance(SITES, 1000, args.seed), args.cap),
        GRID_ATTRIBUTES: ratios(grids[GRID_ATTRIBUTES], walker_grid.generate(seed=args.seed), args.cap),
    }
    print(
        f"\n### One pass over a queue of pending jobs ({args.machines} machines, six types; median of {args.repeat})\n"
    )
    print(markdown_costs(rows, args.jobs, args.cap))
    print(
        f"\n### Makespan against the lower bound ({len(w.jobs)} independent jobs at t=0, {w.cluster.describe()}; "
        f"bound {bound:.0f} s)\n"
    )
    print(markdown_ratios(ratio_rows))
    for needs, title in (
        (SITES, "seed 003, a bag of N tasks on 4 sites"),
        (GRID_ATTRIBUTES, "seed 002, one job of N tasks on Npacinet-2"),
    ):
        sizes = sorted({r["jobs"] for r in grid_rows[needs]})
        print(f"\n### One pass, {title} (median of {args.repeat})\n")
        print(markdown_costs(grid_rows[needs], sizes, args.cap))
        grid_bound, grid_ratio_rows = grid_ratios[needs]
        print(f"\n### Makespan against the lower bound, {title.split(',')[0]} (bound {grid_bound:.0f} s)\n")
        print(markdown_ratios(grid_ratio_rows))


if __name__ == "__main__":
    main()
