"""Kontothanassis & Goddeau 2004's result on its NCBI workload: mean completion time under FCFS, Affinity, Greedy-1/2/3 (and EDF).

    .venv/bin/python benchmarks/seed000_policies.py [--hours 4] [--seeds 0 1 2] [--per-type 19] [--homogeneous 320]
                                                    [--estimates oracle model:mean] [--processes 1]

Each seed draws Kontothanassis & Goddeau 2004's NCBI-like trace (``simulator.workloads.ncbi.generate``: its
job mix and hourly Poisson arrivals from 1 pm) and replays it through the simulator on
the paper's two clusters: heterogeneous (``--per-type`` machines of each of the six
types of its Table 1) and homogeneous (``--homogeneous`` machines of type 6, the big-memory
type where caches pay most). As in the paper's section 5, each is about the smallest
size at which FCFS keeps up with the arrivals (FCFS mean waiting under a few seconds
over the first 8 hours: 19 per type, 320 of type 6).

Estimates: ``oracle`` is every job's own true time on each platform; ``model:mean`` is
the mean of 40 past runs per program and machine type, i.e. the paper's profile table
(one time per job type x machine type). Every policy runs with the first source; later
sources run only Affinity and Greedy-1/2 (the policies the paper fed its table). FCFS
and Greedy-3 never read estimates ("any"). Affinity and Greedy-2 are given the
workload's warm gains (Kontothanassis & Goddeau 2004's Figs 6-7: blastn 21% on type 6, blastp 12.5% on
type 2), as the paper's a-priori profiles; "greedy2 (learned warm)" learns them.

Per cluster: mean completion (s) with a 95% t-interval over seeds, its split into
waiting and running, the change against FCFS (paired per seed) with its interval, and
the paper's figure for the same (its Fig 12, full trace). A stacked-bar chart like
Fig 12 goes to benchmarks/results/seed000_policies.png.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from scipy.stats import t as student_t

from scheduler.policies.affinity import Affinity
from scheduler.policies.greedy import greedy2
from scheduler.policy import Policy
from scheduler.specs import make_policy
from simulator.metrics import compute
from simulator.scenarios import parse_estimates
from simulator.simulate import simulate
from simulator.workload import Workload
from simulator.workloads import ncbi

RESULTS = Path(__file__).parent / "results"
POLICIES: dict[str, Callable[[Workload], Policy]] = {
    "fcfs": lambda w: make_policy("fcfs"),
    "affinity": lambda w: Affinity(warm_gain=w.warm_gain),
    "greedy1": lambda w: make_policy("greedy1"),
    "greedy2": lambda w: greedy2(warm_gain=w.warm_gain),
    "greedy2 (learned warm)": lambda w: make_policy("greedy2"),
    "greedy3": lambda w: make_policy("greedy3"),
    "edf": lambda w: make_policy("edf"),
}
BLIND = {"fcfs", "greedy3"}  # policies whose decisions never read an estimate
PROFILED = {
    "affinity",
    "greedy1",
    "greedy2",
}  # the paper's policies fed a profile table: all that run under later sources
PAPER = {  # Kontothanassis & Goddeau 2004, section 5, Fig 12 (full trace): change of mean completion time against FCFS, in %
    "heterogeneous": {"affinity": 13.0, "greedy1": -10.5, "greedy2": -19.0, "greedy3": -19.0},
    "homogeneous": {"affinity": 9.8, "greedy1": 0.0, "greedy2": -4.6, "greedy3": -4.6},
}


def clusters(args: argparse.Namespace) -> dict[str, tuple[int, tuple[str, ...]]]:
    """Cluster name -> (machines per type, types)."""
    return {"heterogeneous": (args.per_type, tuple(ncbi.MACHINE_TYPES)), "homogeneous": (args.homogeneous, ("type6",))}


def one_seed(
    cluster: str, per_type: int, types: tuple[str, ...], hours: float, seed: int, estimates: list[str]
) -> list[dict[str, Any]]:
    """Every policy under every estimate source on one trace and cluster; one row each."""
    w = ncbi.generate(hours=hours, seed=seed, per_type=per_type, types=types)
    rows = []
    for source in estimates:
        oracle = parse_estimates(source).oracle(w, seed)
        for name, build in POLICIES.items():
            if source != estimates[0] and name not in PROFILED:
                continue
            result = simulate(w, build(w), oracle, estimates=source)
            m = compute(result)
            if m.unfinished or m.done != m.jobs:
                raise RuntimeError(
                    f"{cluster} seed {seed} {name}/{source}: {m.unfinished} unfinished, {m.done} of {m.jobs} done"
                )
            rows.append(
                {
                    "cluster": cluster,
                    "seed": seed,
                    "policy": name,
                    "estimates": "any" if name in BLIND else source,
                    "jobs": m.jobs,
                    "completion": m.mean_completion,
                    "waiting": m.mean_waiting,
                    "running": m.mean_running,
                    "sim_seconds": result.wall_seconds,
                }
            )
            print(
                f"  {cluster:13s} seed {seed} {name:22s} {source:10s} {m.mean_completion:8.1f} s  ({result.wall_seconds:4.1f} s)",
                flush=True,
            )
    return rows


def interval(values: list[float]) -> tuple[float, float]:
    """Mean and half-width of its 95% t-interval (0 with one value)."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, 0.0
    return mean, float(student_t.ppf(0.975, len(values) - 1)) * statistics.stdev(values) / len(values) ** 0.5


def summarise(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Per cluster, one line per (policy, estimates): means, intervals and the paired change against FCFS."""
    out: dict[str, list[dict[str, Any]]] = {}
    for cluster in dict.fromkeys(r["cluster"] for r in rows):
        mine = [r for r in rows if r["cluster"] == cluster]
        fcfs = {r["seed"]: r["completion"] for r in mine if r["policy"] == "fcfs"}
        lines = []
        for key in dict.fromkeys((r["policy"], r["estimates"]) for r in mine):
            group = [r for r in mine if (r["policy"], r["estimates"]) == key]
            completion = interval([r["completion"] for r in group])
            change = interval([100.0 * (r["completion"] / fcfs[r["seed"]] - 1.0) for r in group])
            lines.append(
                {
                    "policy": key[0],
                    "estimates": key[1],
                    "seeds": len(group),
                    "jobs": statistics.fmean(r["jobs"] for r in group),
                    "completion": completion,
                    "waiting": statistics.fmean(r["waiting"] for r in group),
                    "running": statistics.fmean(r["running"] for r in group),
                    "change": change,
                    "paper": PAPER.get(cluster, {}).get(key[0]),
                }
            )
        out[cluster] = lines
    return out


def markdown(cluster: str, description: str, lines: list[dict[str, Any]]) -> str:
    """One cluster's table."""
    head = [
        f"**{cluster}** ({description}; {lines[0]['jobs']:.0f} jobs per trace, {lines[0]['seeds']} seeds)",
        "",
        "| policy | estimates | mean completion (s) | waiting | running | vs FCFS | paper (Fig 12) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    body = []
    for r in lines:
        mean, half = r["completion"]
        change, change_half = r["change"]
        paper = "" if r["paper"] is None else f"{r['paper']:+.1f}%"
        versus = "-" if r["policy"] == "fcfs" else f"{change:+.1f}% ± {change_half:.1f}"
        body.append(
            f"| {r['policy']} | {r['estimates']} | {mean:.1f} ± {half:.1f} | {r['waiting']:.1f} | {r['running']:.1f} | {versus} | {paper} |"
        )
    return "\n".join(head + body)


def chart(summary: dict[str, list[dict[str, Any]]], estimates: str, path: Path) -> Path:
    """Stacked bars of waiting and running per policy, one panel per cluster (after Kontothanassis & Goddeau 2004's Fig 12)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5 * len(summary), 4.2))
    for i, (cluster, lines) in enumerate(summary.items()):
        ax = fig.add_subplot(1, len(summary), i + 1)
        shown = [r for r in lines if r["estimates"] in (estimates, "any")]
        names = [r["policy"].replace(" (learned warm)", "\n(learned)") for r in shown]
        running = [r["running"] for r in shown]
        waiting = [r["waiting"] for r in shown]
        ax.bar(names, running, label="running", color="#4c72b0")
        ax.bar(names, waiting, bottom=running, label="waiting", color="#dd8452")
        ax.errorbar(
            names,
            [r["completion"][0] for r in shown],
            yerr=[r["completion"][1] for r in shown],
            fmt="none",
            ecolor="black",
            capsize=3,
        )
        ax.set_title(f"{cluster} cluster, estimates: {estimates}")
        ax.set_ylabel("mean completion time (s)")
        ax.tick_params(axis="x", labelsize=8, rotation=30)
        ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, default=4.0, help="trace length from 1 pm (the paper's trace: 25)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--per-type", type=int, default=19, help="heterogeneous cluster: machines of each of the six types"
    )
    parser.add_argument(
        "--homogeneous", type=int, default=320, help="homogeneous cluster: machines of type 6 (0: skip)"
    )
    parser.add_argument("--estimates", nargs="+", default=["oracle", "model:mean"])
    parser.add_argument("--processes", type=int, default=1, help="simulate (cluster, seed) pairs in parallel")
    parser.add_argument("--chart", type=Path, default=RESULTS / "seed000_policies.png")
    args = parser.parse_args()
    began = time.perf_counter()
    tasks = [
        (name, per, types, args.hours, seed, args.estimates)
        for name, (per, types) in clusters(args).items()
        if per > 0
        for seed in args.seeds
    ]
    with ProcessPoolExecutor(args.processes) as pool:
        rows = [row for part in pool.map(one_seed, *zip(*tasks)) for row in part]
    summary = summarise(rows)
    simulated = sum(r["sim_seconds"] for r in rows)
    print(
        f"\nseed 000 policies: {args.hours:g} h NCBI-like traces, seeds {args.seeds}; {time.perf_counter() - began:.0f} s wall, "
        f"{simulated:.0f} s in {len(rows)} simulations, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}\n"
    )
    for cluster, lines in summary.items():
        per, types = clusters(args)[cluster]
        print(markdown(cluster, f"{per} x " + ", ".join(types), lines) + "\n")
    print(f"chart: {chart(summary, args.estimates[0], args.chart)}")


if __name__ == "__main__":
    main()
