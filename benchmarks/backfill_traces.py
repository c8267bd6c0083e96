"""Backfilling with learned estimates on real logs (issue 19): EASY, EASY-SJBF, EASY++, conservative, perfect knowledge.

    python benchmarks/backfill_traces.py logs ../shared/data/traces/hpc2n.swf ../shared/data/traces/wagap-2013.swf \
        --nodes pooled packed
    python benchmarks/backfill_traces.py pass --jobs 10000 --processors 240 --repeat 3

``logs``: each log replayed whole after its history prefix (the learned sources learn online as the replay
goes) under every (policy, estimates) row of ``RUNS``; per row the community's average bounded slowdown
(tau = 10 s), mean and max wait, utilisation, makespan, runs past their request, the share of jobs told an
estimate below their run, and, for plans that give one, the error of the start predicted at submission.
``--nodes`` replays each log with its clusters pooled (one pool of CPUs each), packed on their nodes, or both
(:mod:`scheduler.nodes`); a packed log's results are under ``NAME:nodes=packed``.
``pass``: one scheduling pass over a queue of pending jobs on one pooled machine, per policy, side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

from scheduler.policy import Context, Event
from scheduler.specs import make_policy
from simulator.runner import run
from simulator.scenarios import parse_estimates
from simulator.simulate import backlog
from simulator.workload import Cluster, JobSpec, MachineSpec, PlatformSpec, Workload
from simulator.workloads import swf

RUNS = (  # (label, policy, estimates): the cheap rows first, then the service's (it trains as it goes)
    ("FCFS, requested", "fcfs", "requested"),
    ("EASY, requested", "easy", "requested"),
    ("EASY-SJBF, requested", "easy:order=sjbf", "requested"),
    ("EASY++ (last two, SJBF, Tsafrir correction)", "easy:order=sjbf", "last_two_mean"),
    ("conservative, requested", "conservative", "requested"),
    ("conservative, last two", "conservative", "last_two_mean"),
    ("EASY-SJBF, perfect", "easy:order=sjbf", "oracle"),
    ("EASY, service point", "easy", "service"),
    ("EASY, service limit", "easy", "service:plan=limit"),
    ("conservative, service point", "conservative", "service"),
    ("EASY-SJBF, service point", "easy:order=sjbf", "service"),
    ("EASY-SJBF, service limit", "easy:order=sjbf", "service:plan=limit"),
    ("conservative, service limit", "conservative", "service:plan=limit"),
    ("EASY, service point, quantile correction", "easy:correction=quantile", "service"),
    ("EASY-SJBF, service point, quantile correction", "easy:order=sjbf,correction=quantile", "service"),
)
PASS_POLICIES = ("easy", "easy:order=sjbf", "conservative", "edf", "fcfs")


def load_note() -> str:
    one, five, _ = os.getloadavg()
    return f"{os.cpu_count()} cores, load average {one:.1f} (1 min) / {five:.1f} (5 min)"


def bench_logs(args: argparse.Namespace) -> dict[str, Any]:
    chosen = [r for r in RUNS if not args.only or any(word in r[0] for word in args.only)]
    out: dict[str, Any] = {}
    for path, nodes in ((p, n) for p in args.logs for n in args.nodes):
        w = swf.replay(path, limit=args.limit, nodes=nodes)
        name = w.name if nodes == "pooled" else f"{w.name}:nodes={nodes}"
        rows = []
        for label, policy, estimates in chosen:
            started = time.perf_counter()
            result, metrics = run(
                w, make_policy(policy), parse_estimates(estimates).oracle(w, args.seed), label=estimates
            )
            rows.append(
                {
                    "run": label,
                    "policy": policy,
                    "estimates": estimates,
                    **metrics.as_dict(),
                    "seconds": time.perf_counter() - started,
                }
            )
            print(
                f"{name:22s} {label:45s} AVEbsld {metrics.avebsld:8.2f}  {time.perf_counter() - started:7.1f} s",
                flush=True,
            )
            out[name] = {"notes": w.notes, "cluster": w.cluster.describe(), "rows": rows, "load": load_note()}
            if args.json:  # after each run, so a long run leaves what it has
                args.json.write_text(json.dumps(out, indent=2))
    return out


def gap_closed(rows: list[dict[str, Any]], label: str) -> float | None:
    """The share of the AVEbsld gap between EASY with requests and perfect knowledge that ``label`` closes."""
    by = {r["run"]: r["avebsld"] for r in rows}
    easy, perfect = by.get("EASY, requested"), by.get("EASY-SJBF, perfect")
    if easy is None or perfect is None or label not in by or easy == perfect or label.startswith("FCFS"):
        return None
    return (easy - by[label]) / (easy - perfect)


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| run | AVEbsld | gap closed | mean wait (s) | max wait (s) | utilisation | makespan (s) | past request | underestimated |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        gap = gap_closed(rows, r["run"])
        lines.append(
            f"| {r['run']} | {r['avebsld']:.1f} | {'-' if gap is None else f'{100 * gap:.0f} %'} | {r['mean_waiting']:.0f} | "
            f"{r['max_waiting']:.0f} | {r['utilisation']:.3f} | {r['makespan']:.0f} | {r['over_request']} | "
            f"{100 * r['underestimated']:.0f} % |"
        )
    predicted = [r for r in rows if r["predicted_starts"]]
    if predicted:
        lines += [
            "",
            "| plan | jobs that waited | median abs error of the predicted start (s) | within 10 min |",
            "| --- | ---: | ---: | ---: |",
        ]
        for r in predicted:
            lines.append(
                f"| {r['run']} | {r['predicted_starts']} | {r['start_error_median']:.0f} | {100 * r['start_within_10min']:.0f} % |"
            )
    return "\n".join(lines)


def pool_queue(jobs: int, processors: int, seed: int) -> Workload:
    """``jobs`` pending jobs on one pooled machine: sizes 1-32 processors, runs of 1 min to 10 h, requests 1-5x."""
    rng = random.Random(seed)
    specs = []
    for i in range(jobs):
        run_seconds = 60.0 * 10 ** rng.uniform(0, 2.78)
        specs.append(
            JobSpec(
                f"q{i}",
                0.0,
                "log",
                {"pool": run_seconds},
                size=rng.choice([1, 1, 1, 2, 4, 8, 16, 32]),
                params={"job": i, "user": i % 50, "requested_time": round(run_seconds * rng.uniform(1, 5))},
            )
        )
    return Workload("queue", specs, Cluster({"pool": PlatformSpec("pool")}, [MachineSpec("pool", "pool", processors)]))


def bench_pass(args: argparse.Namespace) -> dict[str, Any]:
    """One pass per policy over the same queue, with half the pool busy with running jobs; repeats alternate policies."""
    w = pool_queue(args.jobs + args.running, args.processors, args.seed)
    requested = parse_estimates("requested").oracle(w)
    schedulers = {}
    for name in args.policies:
        s = backlog(Workload(w.name, list(w.jobs), w.cluster), make_policy(name), requested)
        machine = s.state.machines["pool"]
        for job_id in list(s.state.pending)[: args.running]:  # some running jobs, so the plan has releases to place
            job = s.state.jobs[job_id]
            if machine.free >= job.size:
                s.state.start_run(job, machine, 0.0)
        schedulers[name] = s
    times: dict[str, list[float]] = {name: [] for name in args.policies}
    orders: dict[str, int] = {}
    for _ in range(args.repeat):
        for name, s in schedulers.items():
            ctx = Context(1.0, s.state, requested, Event.NEW_JOBS)
            started = time.perf_counter()
            orders[name] = len(s.policy.schedule(ctx))
            times[name].append(time.perf_counter() - started)
    queued = len(next(iter(schedulers.values())).state.pending)
    return {
        "queued": queued,
        "processors": args.processors,
        "load": load_note(),
        "policies": {
            name: {"best_ms": 1e3 * min(t), "median_ms": 1e3 * statistics.median(t), "orders": orders[name]}
            for name, t in times.items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("logs")
    p.add_argument("logs", type=Path, nargs="+")
    p.add_argument(
        "--limit", type=int, default=None, help="Replay at most this many jobs after the history (default: all)."
    )
    p.add_argument("--only", nargs="+", default=None, help="Only the runs whose label holds one of these words.")
    p.add_argument(
        "--nodes",
        nargs="+",
        choices=("pooled", "packed"),
        default=["pooled"],
        help="Each cluster as one pool of CPUs, as its nodes (jobs packed or as their node request asks), or both.",
    )
    p = sub.add_parser("pass")
    p.add_argument("--jobs", type=int, default=10_000)
    p.add_argument("--running", type=int, default=200, help="Jobs started before the pass (those that fit).")
    p.add_argument("--processors", type=int, default=240)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument(
        "--policies", nargs="+", default=list(PASS_POLICIES), help="The policies to time (default: all five)."
    )
    for p in sub.choices.values():
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--json", type=Path, default=None, help="Also write the results here.")
    args = parser.parse_args()
    if args.what == "logs":
        for name, part in bench_logs(args).items():
            print(f"\n{name}: {part['notes']}; {part['cluster']}; {part['load']}\n")
            print(markdown(part["rows"]))
        return
    result = bench_pass(args)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
