"""Santos-Neto et al. 2004's comparison (Table 2): Storage Affinity vs XSufferage vs WQR on data-intensive bags.

Each scenario is one draw of the paper's setting (``simulator.workloads.bag_of_tasks``:
grid heterogeneity, U(2, 12) sites, application type and heterogeneity; the
granularity cycles through ``--granularities``) run as a sequence of ``--executions``
executions of the same job, each starting from the data servers the previous one
left. Every policy meets the same scenarios. Per policy: the mean makespan over all
executions (with a 95 % t-interval over scenarios), the first (cold) execution and
the later ones, and the CPU and bandwidth waste of killed replicas. Run once per
``--costs`` value (ms of reference CPU per KB of input: the paper's 1.602171, and a
compute-heavy 1640.6 = the same figure per byte).

    .venv/bin/python benchmarks/seed003_data_aware.py [--scenarios 8] [--granularities 15 75] [--costs 1.602171 1640.6]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from scheduler.specs import make_policy
from simulator.compare import markdown, plot, summarize, table
from simulator.grid import Waste, waste
from simulator.metrics import compute
from simulator.scenarios import parse_estimates
from simulator.simulate import simulate
from simulator.workload import Workload
from simulator.workloads import bag_of_tasks

RESULTS = Path(__file__).parent / "results"
# (label, policy spec, estimates): WQR and Storage Affinity know nothing of run times; XSufferage the truth or not
POLICIES = (
    ("storage-affinity", "storage-affinity", "none"),
    ("xsufferage", "xsufferage", "oracle"),
    ("xsufferage-noisy", "xsufferage", "noisy:0.5"),  # run times known within a lognormal factor (sigma 0.5)
    ("wqr", "wqr", "none"),
    ("workqueue", "wqr:copies=1", "none"),
)
METRICS = ("makespan", "first", "later", "cpu_waste", "bandwidth_waste", "sim_seconds")


def executions(first: Workload, spec: str, estimates: str, count: int, seed: int) -> dict[str, float]:
    """Run ``count`` successive executions under one policy; their makespans and the summed waste."""
    workload, spans, spent = first, [], Waste(0.0, 0.0, 0.0, 0.0)
    began = time.perf_counter()
    for k in range(count):
        # WQR draws its random processor order afresh in each execution (a fixed order would reuse data by accident)
        policy = f"{spec}{',' if ':' in spec else ':'}seed={seed * 100 + k}" if spec.startswith("wqr") else spec
        result = simulate(
            workload, make_policy(policy), parse_estimates(estimates).oracle(workload), estimates=estimates
        )
        metrics = compute(result)
        if metrics.done != len(workload.jobs):
            raise RuntimeError(f"{policy} left {len(workload.jobs) - metrics.done} tasks undone on {workload.name}")
        assert result.grid is not None
        spans.append(metrics.makespan)
        spent = spent + waste(result.grid)
        workload = bag_of_tasks.next_execution(workload, result.grid)
    return {
        "makespan": sum(spans) / len(spans),
        "first": spans[0],
        "later": sum(spans[1:]) / max(len(spans) - 1, 1),
        "cpu_waste": 100 * spent.cpu,
        "bandwidth_waste": 100 * spent.bandwidth,
        "sim_seconds": time.perf_counter() - began,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=8)
    parser.add_argument("--executions", type=int, default=6)
    parser.add_argument("--granularities", type=float, nargs="+", default=[15.0, 75.0], help="MB; 3 is slow")
    parser.add_argument("--costs", type=float, nargs="+", default=[bag_of_tasks.COST_MS_PER_KB, 1640.6])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    rows = []
    began = time.perf_counter()
    for cost in args.costs:
        for seed in range(args.scenarios):
            granularity = args.granularities[seed % len(args.granularities)]
            first = bag_of_tasks.generate(seed=seed, granularity=granularity, cost_ms_per_kb=cost)
            for label, spec, estimates in POLICIES:
                row = executions(first, spec, estimates, args.executions, seed)
                rows.append(
                    {"policy": label, "estimates": f"{cost:g} ms/KB", "seed": seed, "granularity": granularity, **row}
                )
                print(f"  {cost:g} ms/KB  {first.name}  {label}: {row['makespan']:.0f} s", flush=True)
    runs = pd.DataFrame(rows)
    summary = summarize(runs.drop(columns="granularity"))
    header, lines = table(summary, METRICS, "makespan")
    header[0] = "cost"
    print(
        f"\n{args.scenarios} scenarios x {args.executions} executions, granularities {args.granularities} MB; "
        f"makespan = mean over executions (95 % CI over scenarios); waste in % ({time.perf_counter() - began:.0f} s)\n"
    )
    print(markdown(header, lines))
    by_granularity = runs.pivot_table(
        index=["estimates", "granularity"], columns="policy", values="makespan", sort=False
    )
    print("\nmean makespan (s) by granularity (MB)\n")
    print(
        markdown(
            ["cost", "MB", *by_granularity.columns],
            [[c, f"{g:g}", *(f"{v:,.0f}" for v in r)] for (c, g), r in by_granularity.iterrows()],
        )
    )
    args.out.mkdir(parents=True, exist_ok=True)
    runs.to_csv(args.out / "seed003_data_aware-runs.csv", index=False)
    png = plot(
        summary, "makespan", args.out / "seed003_data_aware-makespan.png", "seed 003: mean makespan per execution"
    )
    print(f"\nwrote {png} and {args.out / 'seed003_data_aware-runs.csv'}")


if __name__ == "__main__":
    main()
