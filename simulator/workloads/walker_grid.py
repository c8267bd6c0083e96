"""Walker 2001's testbeds and test suite as a simulated grid (sections 5.1-5.2).

Npacinet-1 (section 5.2): about 95 Linux/x86 nodes over four network levels: four dual
533 MHz Pentium nodes at Minnesota (Giganet) and a 90-node subset of Centurion at
Virginia, dual 400 MHz Pentium II nodes on 100 Mbps switches joined by gigabit
Ethernet. Npacinet-2 adds 64 533 MHz DEC Alphas (Linux, Myrinet) and six 100 MHz SGI
O2s (IRIX, Ethernet). Positions are ``site/cluster/switch/node``; the machines are
shared interactively, so each has a snapshot load (half idle, half 0.5-2.5: ours).

The test suite (section 5.1): jobs of 5 to 40 tasks, one of six communication-to-
computation ratios, the users' architecture scale factors from Fig 8's profile (an
Alpha does a quarter of a 533 MHz Pentium's work; IRIX O2s match it per clock).
Jobs arrive as a Poisson stream sized to offer ``util`` of the grid's capacity, each
submitted from a random node, where its data live; ``x86_only`` of them have an
x86/Linux binary only.

The truth is ours: the thesis counted work done in a fixed time, we time a fixed amount
of work. A task that takes ``task_seconds`` on an idle 533 MHz Pentium next to its
data takes, on machine h,

    compute = task_seconds / (1 + ratio) x 533 MHz / (speed x true relative performance x share)
    share   = min(1, processors / (true load + processors))   (background processes share the CPUs)
    comm    = task_seconds x ratio / (1 + ratio) x LINK_COST[network levels between the data and h]

times a 5% run-to-run noise; the true load is the snapshot's plus ``drift`` x a normal
draw per job and machine (the grid moves after the snapshot). Every machine is its own
platform, so its true time can differ from its neighbours'.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scheduler.gridinfo import GRID_ATTRIBUTES, Application, GridNode, levels
from simulator.simulate import SimResult
from simulator.workload import Cluster, JobSpec, MachineSpec, PlatformSpec, Workload

REFERENCE_MHZ = 533.0
# six ranges, as in section 5.3.1 (the thesis does not list them)
RATIOS = (0.0, 0.05, 0.1, 0.2, 0.35, 0.5)
# true communication time by levels apart: node, switch, cluster, site, WAN
LINK_COST = (0.5, 1.0, 1.5, 4.0, 30.0)
# Fig 8, rounded: what users tell the scheduler
USER_ASF = {"x86": 1.0, "alpha": 0.25, "mips": 1.0}
ALL_BINARIES = ("x86/linux", "alpha/linux", "mips/irix")
RUN_NOISE_SIGMA = 0.05


@dataclass(frozen=True)
class NodeGroup:
    """Identical nodes of one cluster: count, hardware, where they sit, their true relative performance per clock."""

    prefix: str
    count: int
    arch: str
    os: str
    speed: float
    processors: int
    site: str
    cluster: str
    per_switch: int
    performance: float


NPACINET_1 = (
    NodeGroup("umn", 4, "x86", "linux", 533.0, 2, "umn", "giganet", 4, 1.0),
    # Fig 8: 70% of a 533
    NodeGroup("cent", 90, "x86", "linux", 400.0, 2, "uva", "centurion", 15, 0.70 * 533.0 / 400.0),
)
NPACINET_2 = NPACINET_1 + (
    NodeGroup("alpha", 64, "alpha", "linux", 533.0, 1, "uva", "alphas", 64, 0.25),
    NodeGroup("o2", 6, "mips", "irix", 100.0, 1, "uva", "o2", 6, 0.20 * 533.0 / 100.0),
)
NETS = {1: NPACINET_1, 2: NPACINET_2}


def grid(net: int = 2, seed: int = 0) -> tuple[Cluster, dict[str, float]]:
    """Npacinet-``net`` with snapshot loads drawn from ``seed``, and each machine's true relative performance."""
    if net not in NETS:
        raise ValueError(f"net must be 1 or 2 (Npacinet-1 or -2), got {net!r}")
    rng = np.random.default_rng([seed, 2])
    machines, performance = [], {}
    for g in NETS[net]:
        for i in range(g.count):
            load = 0.0 if rng.random() < 0.5 else round(float(rng.uniform(0.5, 2.5)), 2)
            name = f"{g.prefix}{i:03d}"
            path = (g.site, g.cluster, f"sw{i // g.per_switch}", name)
            node = GridNode(g.arch, g.os, g.speed, g.processors, load, path)
            machines.append(MachineSpec(name, name, g.processors, node.attributes()))
            performance[name] = g.performance
    return Cluster({m.id: PlatformSpec(m.id) for m in machines}, machines), performance


def capacity(cluster: Cluster, performance: dict[str, float]) -> float:
    """The grid's processors in 533 MHz-Pentium equivalents, at the snapshot loads."""
    total = 0.0
    for m in cluster.machines:
        node = GridNode.parse(m.attributes, m.id)
        share = min(1.0, node.processors / (node.load + node.processors))
        total += node.processors * node.speed / REFERENCE_MHZ * performance[m.id] * share
    return total


def task_seconds_on(app: Application, node: GridNode, performance: float, true_load: float, base: float) -> float:
    """Noise-free seconds of one task of ``app`` on ``node`` (the module docstring's formula)."""
    share = min(1.0, node.processors / (true_load + node.processors))
    compute = base / (1.0 + app.ratio) * REFERENCE_MHZ / (node.speed * performance * share)
    apart = levels(app.origin, node.path) if app.origin is not None else 0
    return compute + base * app.ratio / (1.0 + app.ratio) * LINK_COST[min(apart, len(LINK_COST) - 1)]


def generate(
    seed: int = 0,
    jobs: int = 40,
    net: int = 2,
    util: float = 0.6,
    task_seconds: float = 600.0,
    min_tasks: int = 5,
    max_tasks: int = 40,
    x86_only: float = 0.25,
    drift: float = 0.5,
) -> Workload:
    """``jobs`` data-parallel jobs on Npacinet-``net``, arriving to offer ``util`` of its capacity."""
    if jobs < 1 or not 1 <= min_tasks <= max_tasks or not 0.0 < util or task_seconds <= 0:
        raise ValueError("need jobs >= 1, 1 <= min_tasks <= max_tasks, util > 0 and task_seconds > 0")
    cluster, performance = grid(net, seed)
    rng = np.random.default_rng([seed, 1])
    nodes = {m.id: GridNode.parse(m.attributes, m.id) for m in cluster.machines}
    ids = list(nodes)
    mean_gap = (min_tasks + max_tasks) / 2 * task_seconds / (util * capacity(cluster, performance))
    submit = np.cumsum(rng.exponential(mean_gap, jobs)) - mean_gap
    specs: list[JobSpec] = []
    for j in range(jobs):
        binaries = ("x86/linux",) if rng.random() < x86_only else ALL_BINARIES
        app = Application(
            job=f"g{j:03d}",
            tasks=int(rng.integers(min_tasks, max_tasks + 1)),
            binaries=frozenset(binaries),
            ratio=float(rng.choice(RATIOS)),
            asf=dict(USER_ASF),
            origin=nodes[ids[rng.integers(len(ids))]].path,
        )
        eligible = [i for i in ids if app.runs_on(nodes[i])]
        if not eligible:
            raise ValueError(f"grid job {app.job}: no machine of Npacinet-{net} runs {sorted(app.binaries)}")
        true_load = {i: max(0.0, nodes[i].load + drift * float(rng.normal())) for i in eligible}
        base = {i: task_seconds_on(app, nodes[i], performance[i], true_load[i], task_seconds) for i in eligible}
        for t in range(app.tasks):
            noise = rng.lognormal(0.0, RUN_NOISE_SIGMA, len(eligible))
            specs.append(
                JobSpec(
                    id=f"{app.job}.t{t:02d}",
                    submit=float(submit[j]),
                    algorithm="walker-suite",
                    true_times={i: base[i] * float(f) for i, f in zip(eligible, noise)},
                    params={"grid": app.params(), "task": t},
                )
            )
    return Workload(
        name=f"walker-npacinet{net}-s{seed}",
        jobs=specs,
        cluster=cluster,
        notes=f"{jobs} grid jobs, {len(specs)} tasks on Npacinet-{net} ({len(cluster.machines)} nodes), util {util:g}",
        provides=frozenset({GRID_ATTRIBUTES}),
    )


def job_completions(workload: Workload, result: SimResult) -> dict[str, float | None]:
    """Per grid job: its last task's end minus its submit time (None while any task is unfinished)."""
    group = {spec.id: spec.params["grid"]["job"] for spec in workload.jobs}
    out: dict[str, float | None] = {}
    for record in result.jobs:
        name = group[record.id]
        span = record.end - record.submit if record.status == "done" and record.end is not None else None
        if name not in out:
            out[name] = span
        elif (longest := out[name]) is not None:
            out[name] = None if span is None else max(longest, span)
    return out
