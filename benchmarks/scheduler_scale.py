"""The scheduler at scale, and what estimates buy: four measurements, each against a peer run in the same process.

    python benchmarks/scheduler_scale.py pass --jobs 10000 --machines 100 --repeat 5
    python benchmarks/scheduler_scale.py simulate --hours 25
    python benchmarks/scheduler_scale.py ncbi --hours 25 --seeds 0
    python benchmarks/scheduler_scale.py traces ../shared/data/traces/hpc2n.swf ../shared/data/traces/wagap-2013.swf

``pass``: one EDF-with-deferral pass over a queue of pending jobs (targets: under
100 ms for 10,000 jobs on 100 machines); peer: the same list schedule computed the
plain way (every job against every machine, O(jobs x machines)); the two must give
every job the same completion time. ``simulate``: a 25-hour NCBI-like trace (about
80,000 jobs; target under 60 s) under EDF with true run times; peer: FCFS on the
same trace. ``ncbi``: FCFS against EDF with deferral fed true, model, noisy and no
estimates on Kontothanassis & Goddeau 2004's heterogeneous cluster (target: at least 15% lower mean
completion than FCFS with model estimates). ``traces``: real logs replayed with the
users' requested times, their last two run times (online), a frozen model's, the service's (learning
online) and the true run times as estimates.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from scheduler.events import EventLoop
from scheduler.policy import Context, Event
from scheduler.run_times import Oracle, seconds
from scheduler.specs import make_policy
from scheduler.state import INF, Machine
from simulator.learning import LearningOracle, estimates_served
from simulator.metrics import Metrics, compute
from simulator.scenarios import parse_estimates
from simulator.simulate import SimResult, simulate
from simulator.workload import Workload
from simulator.workloads import ncbi, swf

Inspect = Callable[
    [Workload, int, str, Oracle, SimResult], None
]  # (workload, seed, estimates, oracle, result) of one run
NCBI_ESTIMATES = ("oracle", "model", "noisy:0.25", "noisy:0.5", "noisy:1.0", "none")
TRACE_ESTIMATES = ("requested", "last_two_mean", "model:lightgbm_log", "model:last_two_mean", "service", "oracle")


def load_note() -> str:
    one, five, _ = os.getloadavg()
    return f"{os.cpu_count()} cores, load average {one:.1f} (1 min) / {five:.1f} (5 min)"


def queue(jobs: int, machines: int, seed: int) -> tuple[EventLoop, Any]:
    """A scheduler over ``machines`` NCBI machines (round-robin over the six types) with ``jobs`` pending jobs."""
    w = ncbi.generate(hours=jobs * 1.2 * 1.14 / 3600, seed=seed, per_type=1, history_runs=1)
    truth = parse_estimates("oracle").oracle(w)
    s = EventLoop(make_policy("edf"), truth)
    types = list(ncbi.MACHINE_TYPES)
    for i in range(machines):
        platform = types[i % len(types)]
        s.machine_gained(Machine(f"{platform}-{i:03d}", platform, 1, ncbi.MACHINE_TYPES[platform].power_watts), 0.0)
    for spec in w.jobs[:jobs]:
        job = spec.job()
        job.submit = 0.0
        job.estimates = seconds(truth.estimate(job.algorithm, job.params))
        s.state.add_job(job)
    return s, truth


def naive_plan(s: EventLoop, order: list[str]) -> dict[str, float]:
    """The same list schedule the plain way: each job, in order, against every machine; earliest completion wins."""
    machines = list(s.state.machines.values())
    free = [0.0] * len(machines)
    out = {}
    for job_id in order:
        estimates = s.state.jobs[job_id].estimates
        best, best_end = -1, INF
        for k, m in enumerate(machines):
            e = estimates.get(m.platform)
            if e is not None and free[k] + e < best_end:
                best, best_end = k, free[k] + e
        free[best] = best_end
        out[job_id] = best_end
    return out


def bench_pass(args: argparse.Namespace) -> dict[str, Any]:
    s, truth = queue(args.jobs, args.machines, args.seed)
    policy = s.policy
    ctx = Context(0.0, s.state, truth, Event.NEW_JOBS)
    ours, ours_cpu, plain = [], [], []
    for _ in range(args.repeat):  # alternated, so a noisy machine slows both alike
        t, c = time.perf_counter(), time.process_time()
        orders = policy.schedule(ctx)
        ours.append(time.perf_counter() - t)
        ours_cpu.append(time.process_time() - c)
        order = [o.job for o in orders]
        t = time.perf_counter()
        reference = naive_plan(s, order)
        plain.append(time.perf_counter() - t)
    slots, _ = policy.plan(s.state, 0.0, [s.state.jobs[j] for j in s.state.pending])
    ends = {slot.job.id: slot.end for slot in slots}
    assert all(math.isclose(ends[j], reference[j], rel_tol=1e-12) for j in reference), "plans differ"
    return {
        "jobs": args.jobs,
        "machines": args.machines,
        "orders": len(orders),
        "ours_best_ms": 1e3 * min(ours),
        "ours_median_ms": 1e3 * statistics.median(ours),
        "ours_best_cpu_ms": 1e3 * min(ours_cpu),
        "plain_best_ms": 1e3 * min(plain),
        "ratio": min(ours) / min(plain),
        "load": load_note(),
    }


def bench_simulate(args: argparse.Namespace) -> dict[str, Any]:
    w = ncbi.generate(hours=args.hours, seed=args.seed, per_type=args.per_type)
    truth = parse_estimates("oracle").oracle(w)
    out: dict[str, Any] = {"jobs": len(w.jobs), "machines": len(w.cluster.machines), "load": load_note()}
    for name in ("edf", "fcfs"):
        cpu = time.process_time()
        result = simulate(w, make_policy(name), truth)
        out[name] = {
            "seconds": result.wall_seconds,
            "cpu_seconds": time.process_time() - cpu,
            "passes": result.passes,
            "unfinished": compute(result).unfinished,
        }
    out["ratio"] = out["edf"]["seconds"] / out["fcfs"]["seconds"]
    return out


def bench_ncbi(args: argparse.Namespace, inspect: Inspect | None = None) -> dict[str, Any]:
    """FCFS without estimates, then ``args.policy`` fed each estimate source, per seed; ``inspect`` sees every run."""
    rows: dict[str, list[Metrics]] = {}
    accuracy: dict[str, list[dict[str, float]]] = {}
    learning: list[dict[str, Any]] = []
    for seed in args.seeds:
        w = ncbi.generate(hours=args.hours, seed=seed, per_type=args.per_type)
        for policy, estimates in [("fcfs", "none")] + [(args.policy, e) for e in args.estimates or NCBI_ESTIMATES]:
            started = time.perf_counter()
            oracle = parse_estimates(estimates).oracle(w, seed)
            result = simulate(w, make_policy(policy), oracle, estimates=estimates)
            rows.setdefault(f"{policy} / {estimates}", []).append(compute(result))
            if estimates != "none":
                accuracy.setdefault(estimates, []).append(_accuracy(w, oracle))
            if isinstance(oracle, LearningOracle):
                learning.append(_learning(oracle, seed))
            if inspect is not None:
                inspect(w, seed, estimates, oracle, result)
            print(
                f"seed {seed} {policy:5s} {estimates:10s} sim {result.wall_seconds:6.1f} s, all {time.perf_counter() - started:6.1f} s",
                flush=True,
            )
    mean_accuracy = {e: {k: statistics.mean(a[k] for a in runs) for k in runs[0]} for e, runs in accuracy.items()}
    return {
        "cluster": w.cluster.describe(),
        "jobs": len(w.jobs),
        "seeds": args.seeds,
        "rows": _table(rows, "fcfs / none"),
        "accuracy": mean_accuracy,
        "learning": learning,
    }


def bench_traces(args: argparse.Namespace) -> dict[str, Any]:
    out = {}
    for path in args.logs:
        w = swf.replay(path, limit=args.limit, speedup=args.speedup)
        rows: dict[str, list[Metrics]] = {}
        accuracy = {}
        result = simulate(w, make_policy("fcfs"), parse_estimates("none").oracle(w), estimates="none")
        rows["fcfs / none"] = [compute(result)]
        for estimates in args.estimates or TRACE_ESTIMATES:
            try:
                oracle = parse_estimates(estimates).oracle(w, args.seed)
            except KeyError as exc:  # a zoo member this checkout does not have
                print(f"skipping {estimates}: {exc}")
                continue
            result = simulate(w, make_policy(args.policy), oracle, estimates=estimates)
            accuracy[estimates] = _accuracy(w, oracle)  # after the run: a learning oracle is judged on what it served
            if isinstance(oracle, LearningOracle):
                accuracy[estimates]["learning"] = _learning(oracle, args.seed)
            rows[f"{args.policy} / {estimates}"] = [compute(result)]
            print(f"{w.name} {args.policy} {estimates:22s} sim {result.wall_seconds:6.1f} s", flush=True)
            out[w.name] = {
                "notes": w.notes,
                "cluster": w.cluster.describe(),
                "rows": _table(rows, "fcfs / none"),
                "accuracy": accuracy,
            }
            if args.json:  # after each run, so a long run leaves what it has
                args.json.write_text(json.dumps(out, indent=2))
    return out


def _accuracy(w, oracle) -> dict[str, float]:
    """How far the estimates are from the truth: median |log(estimate / true)|, share underestimated.

    An online oracle (``service``, ``last_two_mean``) is judged on what it served each job when the job arrived;
    others are asked now.
    """
    if hasattr(oracle, "served"):
        pairs = estimates_served(oracle, w.jobs)
    else:
        pairs = []
        for spec in w.jobs:
            platform, true = next(iter(spec.true_times.items()))
            estimate = oracle.estimate(spec.algorithm, spec.params)[platform].seconds
            if estimate is not None:
                pairs.append((estimate, true))
    logs = np.array([math.log(max(e, 1.0) / max(t, 1.0)) for e, t in pairs if t > 0])
    return {
        "median_abs_log_error": float(np.median(np.abs(logs))),
        "underestimated": float(np.mean(logs < 0)),
        "known": len(logs) / len(w.jobs),
    }


def _learning(oracle: LearningOracle, seed: int) -> dict[str, Any]:
    """What the service did in a run: pair retrains, their seconds, and the guard's decisions by verdict."""
    verdicts: dict[str, int] = {}
    for d in oracle.decisions:
        verdicts[d["decision"]] = verdicts.get(d["decision"], 0) + 1
    return {
        "seed": seed,
        "retrains": oracle.costs.retrains,
        "train_seconds": oracle.costs.train_cpu_s,
        "verdicts": verdicts,
    }


def _table(rows: dict[str, list[Metrics]], baseline: str) -> list[dict[str, Any]]:
    """Mean over seeds of each metric per row, and the change of mean completion against ``baseline``."""
    base = statistics.mean(m.mean_completion for m in rows[baseline])
    table = []
    for name, metrics in rows.items():
        mean = {
            k: statistics.mean(getattr(m, k) for m in metrics)
            for k in (
                "mean_completion",
                "mean_waiting",
                "mean_running",
                "makespan",
                "mean_slowdown",
                "utilisation",
                "energy_kwh",
                "interrupted",
                "unfinished",
            )
        }
        mean["vs_baseline"] = mean["mean_completion"] / base - 1.0
        table.append({"run": name, **mean})
    return table


def markdown(table: list[dict[str, Any]]) -> str:
    lines = [
        "| run | mean completion (s) | waiting | running | vs FCFS | makespan (s) | slowdown | utilisation | energy (kWh) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in table:
        lines.append(
            f"| {r['run']} | {r['mean_completion']:.1f} | {r['mean_waiting']:.1f} | {r['mean_running']:.1f} | "
            f"{100 * r['vs_baseline']:+.1f}% | {r['makespan']:.0f} | {r['mean_slowdown']:.2f} | {r['utilisation']:.3f} | "
            f"{r['energy_kwh']:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("pass")
    p.add_argument("--jobs", type=int, default=10_000)
    p.add_argument("--machines", type=int, default=100)
    p.add_argument("--repeat", type=int, default=5)
    p = sub.add_parser("simulate")
    p.add_argument("--hours", type=float, default=25.0)
    p.add_argument("--per-type", type=int, default=20)
    p = sub.add_parser("ncbi")
    p.add_argument("--hours", type=float, default=25.0)
    p.add_argument("--per-type", type=int, default=20)
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p = sub.add_parser("traces")
    p.add_argument("logs", type=Path, nargs="+")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--speedup", type=float, default=1.0)
    for name in ("ncbi", "traces"):
        sub.choices[name].add_argument("--policy", default="edf", help="The policy set against FCFS, with options.")
        sub.choices[name].add_argument(
            "--estimates", nargs="+", default=None, help="Estimate sources (default: the module's list)."
        )
    for p in sub.choices.values():
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--json", type=Path, default=None, help="Also write the results here.")
    args = parser.parse_args()
    result = {"pass": bench_pass, "simulate": bench_simulate, "ncbi": bench_ncbi, "traces": bench_traces}[args.what](
        args
    )
    if args.what == "ncbi":
        print(f"\n{result['jobs']} jobs on {result['cluster']}, seeds {result['seeds']}\n")
        print(markdown(result["rows"]))
    elif args.what == "traces":
        for name, part in result.items():
            print(f"\n{name}: {part['notes']}; {part['cluster']}\n")
            print(markdown(part["rows"]))
            for estimates, acc in part["accuracy"].items():
                print(
                    f"- {estimates}: median |log(estimate/true)| {acc['median_abs_log_error']:.2f}, "
                    f"{100 * acc['underestimated']:.0f}% underestimated, {100 * acc['known']:.0f}% of jobs with an estimate"
                )
    else:
        print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
