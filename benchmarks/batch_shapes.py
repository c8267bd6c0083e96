"""Batches shaped unlike the project's generator, planned by ``ga-strong`` and ``batch-search`` in the simulator.

    python benchmarks/batch_shapes.py                      # 2 families x 4 shapes x 3 seeds, a few minutes on 2 busy cores
    python benchmarks/batch_shapes.py --seeds 1 --policies "ga-strong;ga-strong:window=100"

``benchmarks.instances.batches.generate`` draws log-normal work (sigma 1), machine speeds within 8x and
per-program accelerator gains: the shapes its numbers were tuned on. These families are drawn otherwise:

- ``cpu-gpu``: heavy-tailed work (log-normal, sigma 2), a third of the machines accelerators, each task's
  accelerator gain its own (log-uniform 1/100x to 100x: strongly unrelated), machine speeds up to 10x apart;
- ``related``: heavy-tailed work (sigma 2) on machines up to 30x apart (Q||Cmax).

Shapes range from a dozen tasks on 3 machines to 300 on 8. Each batch runs as a workload (every task
submitted at 0, true times as estimates) under each policy through ``simulator.simulate``, which re-plans at
every event, as ``predictor compare`` does; its makespan is divided by the LP bound
(``scheduler.batch.relaxations.batch_lower_bound``). Prints the mean and the worst ratio per family and policy.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks.instances, when run as a script

from benchmarks.instances.batches import Instance, as_workload
from scheduler.batch.relaxations import batch_lower_bound
from scheduler.specs import make_policy
from simulator import compare
from simulator.scenarios import parse_estimates
from simulator.simulate import simulate

FAMILIES = ("cpu-gpu", "related")
SHAPES = ((12, 3), (40, 4), (150, 4), (300, 8))  # tasks x machines
POLICIES = ("batch-search", "ga-strong")


def shaped(family: str, tasks: int, machines: int, seed: int) -> Instance:
    """A reproducible batch of ``family`` (see the module docstring) with ``tasks`` tasks on ``machines`` machines."""
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {', '.join(FAMILIES)}, got {family!r}")
    rng = np.random.default_rng([FAMILIES.index(family), tasks, machines, seed])
    work = rng.lognormal(np.log(60.0), 2.0, tasks)
    if family == "related":
        speed = np.exp(rng.uniform(0.0, np.log(30.0), machines))
        return Instance(family, work[:, None] / speed[None, :], np.zeros(machines))
    accelerator = np.zeros(machines, dtype=bool)
    accelerator[rng.permutation(machines)[: max(1, machines // 3)]] = True
    speed = np.exp(rng.uniform(0.0, np.log(10.0), machines))
    gain = np.exp(rng.uniform(np.log(0.01), np.log(100.0), tasks))
    factor = np.where(accelerator[None, :], gain[:, None], 1.0) * speed[None, :]
    return Instance(family, work[:, None] / factor, np.zeros(machines))


def simulated_ratio(instance: Instance, spec: str) -> float:
    """The simulated makespan of the batch under policy ``spec``, over the batch's LP bound."""
    workload = as_workload(instance)
    result = simulate(workload, make_policy(spec), parse_estimates("oracle").oracle(workload))
    makespan = max(job.end for job in result.jobs if job.end is not None)
    return makespan / batch_lower_bound(instance.times, instance.ready)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--policies", default=";".join(POLICIES), help="policy specs, ';'-separated")
    args = parser.parse_args()
    specs = args.policies.split(";")
    ratios: dict[tuple[str, str], list[float]] = {}
    seconds: dict[tuple[str, str], float] = {}
    for family in FAMILIES:
        for tasks, machines in SHAPES:
            for seed in range(args.seeds):
                instance = shaped(family, tasks, machines, seed)
                for spec in specs:
                    began = time.perf_counter()
                    ratios.setdefault((family, spec), []).append(simulated_ratio(instance, spec))
                    seconds[family, spec] = seconds.get((family, spec), 0.0) + time.perf_counter() - began
                print(
                    f"  {family} {tasks}x{machines} seed {seed}: "
                    + ", ".join(f"{s} {ratios[family, s][-1]:.3f}" for s in specs),
                    flush=True,
                )
    rows = [
        [family, spec, str(len(r)), f"{np.mean(r):.3f}", f"{np.max(r):.3f}", f"{seconds[family, spec]:.0f}"]
        for (family, spec), r in ratios.items()
    ]
    print()
    print(compare.markdown(["family", "policy", "batches", "mean ratio", "worst ratio", "wall seconds"], rows))


if __name__ == "__main__":
    main()
