"""Peak memory beside run time on hpc2n's real jobs (issue 31): limits, retries, memory-aware backfilling.

    nice -n 5 python benchmarks/peak_memory.py limits ../shared/data/traces/hpc2n.swf
    nice -n 5 python benchmarks/peak_memory.py retries ../shared/data/traces/hpc2n.swf
    nice -n 5 python benchmarks/peak_memory.py backfill ../shared/data/traces/hpc2n.swf

``limits``: the log's jobs with a used memory, in submit order, each given a memory limit at its submission by
every source of :mod:`simulator.memory_limits` (learned ones from the jobs that had ended by then); every
data-driven setting (scope, window, quantile, offset, level, alpha) is chosen on the first ``--tune`` of these jobs
(the least waste with at most 1 % of jobs over their limit there, else the fewest over) and scored on the rest.
``retries``: the whole log on its nodes with memory, EASY planning with each job's time limit, the resource manager
killing at the limits (:mod:`simulator.retries`): the users' requested times (real TIMEOUTs), the learned memory
limits of ``limits`` with OOM and TIMEOUT kills injected into a seeded share of the jobs (a limit drawn below the
job's peak or run); each killed job is retried, with everything doubled or only the failed resource doubled.
``backfill``: the whole log on its nodes with memory, EASY and conservative (users' requested times), the scheduler
planning with no memory (overcommitting nodes: counted), the learned limits, or the true peaks.
Results are printed as Markdown and written to ``benchmarks/results/peak_memory_<command>.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from features.swf import read_swf
from scheduler.specs import make_policy
from simulator import memory_limits as ml
from simulator.metrics import compute
from simulator.retries import KILLS, LimitOracle, RetryPolicy
from simulator.scenarios import parse_estimates
from simulator.simulate import SimResult, simulate
from simulator.workload import Workload
from simulator.workloads import swf

RESULTS = Path(__file__).parent / "results"
MAX_OVER = 0.01  # the target: at most 1 % of jobs over their limit
ALL = 10**6  # "every run" as a window


def load_note() -> str:
    one, five, _ = os.getloadavg()
    return f"{os.cpu_count()} cores, load average {one:.1f} (1 min) / {five:.1f} (5 min)"


def node_size(path: Path) -> tuple[int, int]:
    """(bytes, CPUs) of one node of the log's single cluster, from its machine file."""
    (cluster,) = swf.read_machines(path.with_name(path.name + ".machines"))
    if cluster.node_memory is None:
        raise SystemExit(f"{path}.machines gives no node memory")
    return cluster.node_memory, cluster.cpus_per_node


def grids(node: tuple[int, int]) -> dict[str, list[Callable[[], ml.MemorySource]]]:
    """Every setting of each learned source the tuning part chooses from."""
    sizey = {scope: ml.SizeyModels(scope) for scope in ml.SCOPES}  # one set of fitted models per scope, shared
    return {
        "last runs": [
            lambda k=k, q=q, off=off, scope=scope: ml.LastRuns(k, off, scope, q)
            for scope in ml.SCOPES
            for k in (1, 3, 10, ALL)
            for q in (1.0, 0.9)
            for off in (0.0, 0.05, 0.1, 0.25)
        ],
        "online learner": [lambda level=level: ml.OnlineQuantile(level) for level in (0.9, 0.95, 0.98, 0.99, 0.995)],
        "Sizey-style": [
            lambda scope=scope, a=a, off=off: ml.SizeyStyle(sizey[scope], a, off)  # type: ignore[arg-type]
            for scope in ml.SCOPES
            for a in (0.0, 0.25, 0.5, 0.75, 1.0)
            for off in ml.OFFSET_RULES
        ],
    }


def choose(
    jobs: Sequence[ml.MemoryJob], split: int, makers: Sequence[Callable[[], ml.MemorySource]], fallback: ml.MemorySource
) -> tuple[str, list[float], ml.Score]:
    """The setting with the least waste and at most 1 % over on the tuning part (else the fewest over): its name,
    its limits on every job, and its tuning score."""
    best: tuple[tuple[float, float], str, list[float], ml.Score] | None = None
    for make in makers:
        source = make()
        limits = ml.replay(jobs, source, fallback)
        tuned = ml.score(jobs[:split], limits[:split])
        key = (0.0, tuned.waste_gbh) if tuned.over_share <= MAX_OVER else (1.0, tuned.over_share)
        if best is None or key < best[0]:
            best = (key, source.name, limits, tuned)
    assert best is not None
    return best[1], best[2], best[3]


def learned_limits(path: Path, tune: float) -> tuple[str, dict[int, int]]:
    """The chosen last-runs source's limit of every job with a used memory, bytes per job by log job number."""
    jobs = ml.memory_jobs(read_swf(path))
    node = node_size(path)
    name, limits, _ = choose(jobs, int(len(jobs) * tune), grids(node)["last runs"], ml.NodeShare(*node, whole=True))
    return name, {j.id: int(limit * j.procs) for j, limit in zip(jobs, limits)}


def bench_limits(args: argparse.Namespace) -> dict[str, Any]:
    began = time.process_time()
    jobs = ml.memory_jobs(read_swf(args.log))
    split = int(len(jobs) * args.tune)
    node = node_size(args.log)
    whole = ml.NodeShare(*node, whole=True)
    rows = []
    for users in (ml.NodeShare(*node), whole):
        limits = ml.replay(jobs, users, users)
        rows.append(("users' default: " + users.name, "-", limits))
    for family, makers in grids(node).items():
        cpu = time.process_time()
        name, limits, _ = choose(jobs, split, makers, whole)
        rows.append((family, name, limits))
        print(f"{family}: {len(makers)} settings in {time.process_time() - cpu:.1f} CPU s")
    out = []
    reference = ml.score(jobs[split:], rows[0][2][split:]).waste_gbh
    for family, name, limits in rows:
        tuned, scored = ml.score(jobs[:split], limits[:split]), ml.score(jobs[split:], limits[split:])
        out.append(
            {
                "source": family,
                "chosen": name,
                "tune": {
                    "jobs": tuned.jobs,
                    "waste_gbh": tuned.waste_gbh,
                    "requested_gbh": tuned.requested_gbh,
                    "over": tuned.over_share,
                },
                "test": {
                    "jobs": scored.jobs,
                    "waste_gbh": scored.waste_gbh,
                    "requested_gbh": scored.requested_gbh,
                    "over": scored.over_share,
                },
                "test_waste_vs_users": scored.waste_gbh / reference if reference else math.nan,
            }
        )
    print(
        f"\n{len(jobs)} jobs with used memory ({len({j.user for j in jobs})} users); tuning part: first {split}, scored: {len(jobs) - split}"
    )
    print(
        "\n| source | chosen on the tuning part | tuning: waste GB-h | tuning: over | scored: waste GB-h | scored: over | scored waste / users' |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in out:
        t, s = r["tune"], r["test"]
        print(
            f"| {r['source']} | {r['chosen']} | {t['waste_gbh']:,.0f} | {t['over']:.1%} | {s['waste_gbh']:,.0f} | {s['over']:.1%} | {r['test_waste_vs_users']:.2f} |"
        )
    cpu = time.process_time() - began
    print(f"\nCPU {cpu:.1f} s; {load_note()}")
    return {
        "log": str(args.log),
        "jobs": len(jobs),
        "tune_jobs": split,
        "rows": out,
        "cpu_seconds": cpu,
        "load": load_note(),
    }


def held_node_hours(result: SimResult, node: tuple[int, int], truth: bool) -> dict[str, float]:
    """Node-hours each run held, by outcome: per node the larger of its share of the CPUs and of the memory (the limit's,
    or with ``truth`` the peak's), times the run's length."""
    memory, cpus = node
    jobs = {j.id: j for j in result.jobs}
    out: dict[str, float] = {}
    for s in result.segments:
        job = jobs[s.job]
        bytes_ = job.true_memory if truth else job.memory
        held = s.nodes or ((0, 1),)
        each = (bytes_ or 0) / sum(slots for _, slots in held)
        share = sum(max(slots / cpus, slots * each / memory) for _, slots in held)
        out[s.outcome] = out.get(s.outcome, 0.0) + share * (s.end - s.start) / 3600
    return out


def inject(w: Workload, share: float, seed: int) -> tuple[Workload, int, int]:
    """``w`` with a seeded ``share`` of its jobs with a known peak given a memory limit below it, and another ``share``
    a time limit below their run (each drawn uniformly from 25 % to 95 % of the truth)."""
    rng = random.Random(seed)
    jobs, oom, timeout = [], 0, 0
    for spec in w.jobs:
        draw = rng.random()
        if draw < share and spec.true_memory:
            spec = replace(spec, memory=int(spec.true_memory * rng.uniform(0.25, 0.95)))
            oom += 1
        elif share <= draw < 2 * share:
            run = next(iter(spec.true_times.values()))
            spec = replace(spec, params=dict(spec.params, requested_time=max(run * rng.uniform(0.25, 0.95), 1.0)))
            timeout += 1
        jobs.append(spec)
    return replace(w, jobs=jobs), oom, timeout


def bench_retries(args: argparse.Namespace) -> dict[str, Any]:
    node = node_size(args.log)
    chosen, limits = learned_limits(args.log, args.tune)
    base = swf.replay(args.log, nodes="packed", memory=limits)
    workload, oom, timeout = inject(base, args.inject, args.seed)
    over_time = sum(
        1
        for s in workload.jobs
        if (s.params.get("requested_time") or 0) > 0 and s.params["requested_time"] < next(iter(s.true_times.values()))
    )
    over_memory = sum(
        1 for s in workload.jobs if s.memory is not None and s.true_memory is not None and s.true_memory > s.memory
    )
    print(
        f"memory limits: {chosen}; injected {oom} OOM and {timeout} TIMEOUT limits; jobs over their time limit {over_time}, over their memory {over_memory}"
    )
    runs = {}
    for label, retry in (
        ("no retry", None),
        ("double everything", RetryPolicy("double-both", 2.0, args.retries, cluster=workload.cluster)),
        ("raise only the failed resource", RetryPolicy("failed-only", 2.0, args.retries, cluster=workload.cluster)),
    ):
        cpu = time.process_time()
        result = simulate(
            workload, make_policy("easy"), LimitOracle(tuple(workload.cluster.platforms)), enforce=True, retry=retry
        )
        runs[label] = (result, time.process_time() - cpu)
    completed = {label: {j.id.split("~", 1)[0] for j in r.jobs if j.status == "done"} for label, (r, _) in runs.items()}
    common = completed["double everything"] & completed["raise only the failed resource"]
    rows = []
    for label, (result, cpu) in runs.items():
        held, used = held_node_hours(result, node, False), held_node_hours(result, node, True)
        killed = sum(held.get(k, 0.0) for k in KILLS)
        over_reserved = held.get("done", 0.0) - used.get("done", 0.0)
        jobs = {j.id: j for j in result.jobs}
        memory_unused = (
            sum(
                max((jobs[s.job].memory or 0) - (jobs[s.job].true_memory or 0), 0) * (s.end - s.start)
                for s in result.segments
                if s.outcome == "done"
            )
            / 2**30
            / 3600
        )
        kills = {k: sum(1 for s in result.segments if s.outcome == k) for k in KILLS}
        first_submit = {j.id: j.submit for j in result.jobs if "~" not in j.id}
        done = [j for j in result.jobs if j.status == "done" and j.end is not None and j.start is not None]
        bsld = [
            max(1.0, (j.end - first_submit[j.id.split("~", 1)[0]]) / max(j.end - j.start, 10.0))
            for j in done
            if j.id.split("~", 1)[0] in common
        ]
        rows.append(
            {
                "policy": label,
                "jobs": len(first_submit),
                "completed": len(completed[label]),
                "never_placed": sum(1 for j in result.jobs if j.status == "pending"),
                "retries": sum(1 for j in result.jobs if "~" in j.id),
                "oom_kills": kills["oom"],
                "timeout_kills": kills["timeout"],
                "killed_node_hours": killed,
                "over_reserved_node_hours": over_reserved,
                "wasted_node_hours": killed + over_reserved,
                "memory_unused_gbh": memory_unused,
                "avebsld_common": sum(bsld) / len(bsld) if bsld else 0.0,
                "cpu_seconds": cpu,
            }
        )
    print(
        f"\nAVEbsld from each job's first submission to its completion, over the {len(common):,} jobs both retry policies complete"
    )
    print(
        "\n| retries | completed | never placed (memory above a node's) | retries | OOM kills | TIMEOUT kills | node-h in killed runs "
        "| node-h held beyond use (completed runs) | wasted node-h | memory unused, completed runs (GB-h) | AVEbsld | CPU s |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['policy']} | {r['completed']:,} / {r['jobs']:,} | {r['never_placed']} | {r['retries']} | {r['oom_kills']:,} | {r['timeout_kills']:,} | "
            f"{r['killed_node_hours']:,.0f} | {r['over_reserved_node_hours']:,.1f} | {r['wasted_node_hours']:,.0f} | {r['memory_unused_gbh']:,.0f} | "
            f"{r['avebsld_common']:.2f} | {r['cpu_seconds']:.1f} |"
        )
    print(f"\n{load_note()}")
    return {
        "log": str(args.log),
        "memory_limits": chosen,
        "injected": {"oom": oom, "timeout": timeout, "share": args.inject, "seed": args.seed},
        "over_time_limit": over_time,
        "over_memory_limit": over_memory,
        "rows": rows,
        "load": load_note(),
    }


def bench_backfill(args: argparse.Namespace) -> dict[str, Any]:
    chosen, limits = learned_limits(args.log, args.tune)
    sources: list[tuple[str, swf.MemorySource]] = [
        ("no memory anywhere (as before)", "none"),
        ("memory ignored by the scheduler", "ignored"),
        (f"learned limits ({chosen})", limits),
        ("true peaks", "used"),
    ]
    rows = []
    for policy in args.policies:
        for label, memory in sources:
            workload = swf.replay(args.log, nodes="packed", memory=memory)
            cpu = time.process_time()
            result = simulate(
                workload, make_policy(policy), parse_estimates("requested").oracle(workload), estimates="requested"
            )
            cpu = time.process_time() - cpu
            m = compute(result)
            rows.append(
                {
                    "policy": policy,
                    "memory": label,
                    "avebsld": m.avebsld,
                    "mean_wait": m.mean_waiting,
                    "utilisation": m.utilisation,
                    "overcommits": m.overcommits,
                    "jobs": m.jobs,
                    "cpu_seconds": cpu,
                }
            )
    node = node_size(args.log)
    print(f"\nhpc2n on its nodes: 120 x {node[1]} CPUs, {node[0] / 2**30:g} GiB each; requested times planned")
    print(
        "\n| policy | memory the scheduler plans with | AVEbsld | mean wait (h) | utilisation | starts that overcommit a node | CPU s |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['policy']} | {r['memory']} | {r['avebsld']:.2f} | {r['mean_wait'] / 3600:.2f} | {r['utilisation']:.3f} | {r['overcommits']} | {r['cpu_seconds']:.1f} |"
        )
    print(f"\n{load_note()}")
    return {"log": str(args.log), "memory_limits": chosen, "rows": rows, "load": load_note()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("limits", "retries", "backfill"):
        p = sub.add_parser(name)
        p.add_argument("log", type=Path)
        p.add_argument(
            "--tune",
            type=float,
            default=0.3,
            help="share of the jobs with memory (in submit order) that settings are chosen on",
        )
        if name == "retries":
            p.add_argument(
                "--inject",
                type=float,
                default=0.05,
                help="share of jobs given a memory limit below their peak (and as many a time limit below their run)",
            )
            p.add_argument("--retries", type=int, default=3)
            p.add_argument("--seed", type=int, default=0)
        if name == "backfill":
            p.add_argument("--policies", nargs="+", default=["easy", "conservative"])
    args = parser.parse_args()
    result = {"limits": bench_limits, "retries": bench_retries, "backfill": bench_backfill}[args.command](args)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"peak_memory_{args.command}.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
