"""Batches for the benchmark: independent tasks on related machines, or on CPU/GPU-style unrelated ones.

- ``related``: each machine one speed (0.5x to 4x of a reference, log-uniform), each task
  one amount of work (log-normal): ``times[j, i] = work[j] / speed[i]`` (Q||Cmax).
- ``unrelated``: as on Brandstätter-Müller et al. 2011's meta-heterogeneous cluster, a quarter of the machines
  (at least one) are accelerators. Each task belongs to one of ``programs`` programs; a
  program runs on an accelerator ``0.5x to 20x`` as fast as on a reference CPU
  (log-uniform per program), perturbed per task (log-normal, sigma 0.2) and scaled by the
  machine's own speed (0.7x to 1.5x, CPUs and accelerators alike). A program lacks an
  accelerator implementation with probability ``cpu_only`` (INF there).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from simulator.workload import Cluster, JobSpec, MachineSpec, PlatformSpec, Workload

KINDS = ("related", "unrelated")


class Instance(NamedTuple):
    """A batch to plan: ``times`` (tasks x machines, INF where a task cannot run), machines free at 0."""

    kind: str
    times: np.ndarray
    ready: np.ndarray


def generate(kind: str, tasks: int, machines: int, seed: int, programs: int = 8, cpu_only: float = 0.1) -> Instance:
    """A reproducible batch of ``kind`` (``related`` or ``unrelated``) with ``tasks`` tasks on ``machines`` machines."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if tasks < 1 or machines < 1:
        raise ValueError("a batch needs at least one task and one machine")
    rng = np.random.default_rng([KINDS.index(kind), tasks, machines, seed])
    work = rng.lognormal(np.log(60.0), 1.0, tasks)  # seconds on the reference CPU
    if kind == "related":
        speed = np.exp(rng.uniform(np.log(0.5), np.log(4.0), machines))
        return Instance(kind, work[:, None] / speed[None, :], np.zeros(machines))
    accelerator = np.zeros(machines, dtype=bool)
    accelerator[rng.permutation(machines)[: max(1, machines // 4)]] = True
    speed = rng.uniform(0.7, 1.5, machines)
    program = rng.integers(0, programs, tasks)
    gain = np.exp(rng.uniform(np.log(0.5), np.log(20.0), programs))
    gain[rng.random(programs) < cpu_only] = 0.0  # no accelerator version
    task_gain = gain[program] * rng.lognormal(0.0, 0.2, tasks)
    factor = np.where(accelerator[None, :], task_gain[:, None], 1.0) * speed[None, :]
    with np.errstate(divide="ignore"):
        times = work[:, None] / factor
    return Instance(kind, times, np.zeros(machines))


def as_workload(instance: Instance, name: str = "batch") -> Workload:
    """The batch as a workload: every task submitted at 0, one platform per machine (``p<i>`` / ``M<i>``), no history.

    So the registered policies, which read platforms and estimates, can plan it; machine
    ``M<i>`` is column i of ``times``.
    """
    machines = range(instance.times.shape[1])
    platforms = {f"p{i}": PlatformSpec(f"p{i}") for i in machines}
    jobs = [
        JobSpec(
            f"t{j}", 0.0, "task", {f"p{i}": float(t) for i, t in enumerate(row) if np.isfinite(t)}, params={"task": j}
        )
        for j, row in enumerate(instance.times)
    ]
    return Workload(name, jobs, Cluster(platforms, [MachineSpec(f"M{i}", f"p{i}") for i in machines]))
