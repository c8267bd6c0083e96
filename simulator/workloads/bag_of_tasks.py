"""Santos-Neto et al. 2004's bags of data-intensive tasks on a grid of sites (sections 4.1-4.3).

The grid: processors of relative speed drawn from Table 1's distribution for its
heterogeneity (1x U(10, 10), 2x U(6.7, 13.4), 4x U(4, 16), 8x U(2.2, 17.6)) are
added until their speeds reach the grid power 1,000 (about 100 processors), then
dealt in equal shares over U(2, 12) sites; one shared 1 Mbps link joins the home
machine, where every input starts, to all sites. The application: 2 GB of input cut
into tasks of a mean size (the granularity: 3, 15 or 75 MB) spread by the application
heterogeneity H_a (sizes U(mean (1 - H_a / 2), mean (1 + H_a / 2))), one input file
per task. A task's cost on the reference processor (speed 1) is 1.602171 ms per KB of
input for the visualization application; the pattern search costs U(1, that bound).
A processor of speed s runs it s times faster (speeds rounded to 0.5, so that
processors of one speed form one platform). Every option left unset is drawn from
the seed the way the paper samples its 3,000 scenarios.

One workload is one execution of the job; :func:`next_execution` makes the next one
(the same tasks, new ids) on the data servers as the previous run left them: the
paper's inter-job reuse over a sequence of 6 executions (section 4.3). The paper's
NWS traces of CPU and network contention are not modelled: processors and the link
deliver their nominal speed.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from scheduler.sites import MB, MBPS, SITES, Grid
from simulator.grid import GridRecord
from simulator.workload import Cluster, JobSpec, MachineSpec, PlatformSpec, Workload

SPEEDS = {1: (10.0, 10.0), 2: (6.7, 13.4), 4: (4.0, 16.0), 8: (2.2, 17.6)}  # Table 1: heterogeneity -> U(low, high)
GRANULARITIES_MB = (3, 15, 75)
APP_HETEROGENEITIES = (0.0, 0.25, 0.5, 0.75, 1.0)
# visualization: cost set by the input; pattern search: bounded by it
APPLICATIONS = ("vis", "search")
COST_MS_PER_KB = 1.602171
GRID_POWER = 1000.0
SITE_RANGE = (2, 12)
# speeds are rounded so that processors of one speed share a platform (fewer estimates per task)
SPEED_STEP = 0.5


def generate(
    seed: int = 0,
    granularity: float | None = None,
    app: str | None = None,
    grid_heterogeneity: int | None = None,
    app_heterogeneity: float | None = None,
    sites: int | None = None,
    total_gb: float = 2.0,
    mbps: float = 1.0,
    cost_ms_per_kb: float = COST_MS_PER_KB,
    grid_power: float = GRID_POWER,
    warm: bool = False,
) -> Workload:
    """The first execution of one scenario (options as in the module docstring; ``granularity`` in MB).

    ``warm=True`` starts with each task's input already at one site drawn at random,
    as a data-unaware earlier execution would have left it.
    """
    rng = np.random.default_rng(seed)
    granularity = float(granularity if granularity is not None else rng.choice(GRANULARITIES_MB))
    app = app if app is not None else str(rng.choice(APPLICATIONS))
    grid_heterogeneity = int(grid_heterogeneity if grid_heterogeneity is not None else rng.choice(list(SPEEDS)))
    app_heterogeneity = float(app_heterogeneity if app_heterogeneity is not None else rng.choice(APP_HETEROGENEITIES))
    n_sites = int(sites if sites is not None else rng.integers(SITE_RANGE[0], SITE_RANGE[1] + 1))
    if app not in APPLICATIONS:
        raise ValueError(f"app must be one of {', '.join(APPLICATIONS)}, got {app!r}")
    if grid_heterogeneity not in SPEEDS:
        raise ValueError(f"grid_heterogeneity must be one of {sorted(SPEEDS)}, got {grid_heterogeneity}")
    if not 0.0 <= app_heterogeneity <= 1.0 or granularity <= 0 or n_sites < 1 or total_gb <= 0 or grid_power <= 0:
        raise ValueError("need 0 <= app_heterogeneity <= 1 and positive granularity, sites, total_gb and grid_power")

    speeds = _processors(rng, SPEEDS[grid_heterogeneity], grid_power)
    site_names = [f"site{k}" for k in range(n_sites)]
    machines = [MachineSpec(f"{site_names[i % n_sites]}-p{i}", f"speed{s:g}") for i, s in enumerate(speeds)]
    platform_speed = {m.platform: s for m, s in zip(machines, speeds)}
    members = {site: tuple(m.id for m in machines if m.id.startswith(f"{site}-")) for site in site_names}

    sizes = _input_sizes(rng, granularity * MB, app_heterogeneity, total_gb * 2**30)
    # reference seconds to process the whole input
    bound = sizes / 1024 * cost_ms_per_kb / 1000.0
    costs = bound if app == "vis" else rng.uniform(np.minimum(1.0, bound), bound)
    jobs = [
        JobSpec(
            id=f"e0-t{i}",
            submit=0.0,
            algorithm=app,
            params={"task": i, "execution": 0},
            true_times={p: float(cost) / s for p, s in platform_speed.items()},
            inputs=((f"slice{i}", int(size)),),
            data=f"slice{i}",
        )
        for i, (size, cost) in enumerate(zip(sizes, costs))
    ]
    stored: dict[str, dict[str, int]] = {}
    if warm:
        for job in jobs:
            name, size = job.inputs[0]
            stored.setdefault(site_names[int(rng.integers(n_sites))], {})[name] = size
    name = (
        f"bot-{app}-{granularity:g}MB-grid{grid_heterogeneity}x-app{app_heterogeneity:.0%}-{n_sites}sites"
        f"{'-warm' if warm else ''}-seed{seed}"
    )
    return Workload(
        name=name,
        jobs=jobs,
        cluster=Cluster({p: PlatformSpec(p) for p in platform_speed}, machines),
        provides=frozenset({SITES}),
        grid=Grid(members, mbps * MBPS, stored),
        notes=(
            f"Santos-Neto et al. 2004 bag of tasks: {len(jobs)} tasks, {sizes.sum() / 2**30:.2f} GB, {len(machines)} processors "
            f"(speeds {min(speeds):.1f}-{max(speeds):.1f}) on {n_sites} sites, home link {mbps:g} Mbps"
        ),
    )


def next_execution(workload: Workload, record: GridRecord) -> Workload:
    """The job's next execution: the same tasks under new ids, on the data servers as ``record`` left them."""
    if workload.grid is None:
        raise ValueError(f"workload {workload.name!r} has no grid")
    jobs = []
    for spec in workload.jobs:
        execution = int(spec.params["execution"]) + 1
        params = {**spec.params, "execution": execution}
        jobs.append(replace(spec, id=f"e{execution}-t{spec.params['task']}", params=params))
    grid = Grid(workload.grid.sites, workload.grid.bandwidth, record.stored)
    return replace(workload, name=f"{workload.name}-e{jobs[0].params['execution']}", jobs=jobs, grid=grid)


def _processors(rng: np.random.Generator, bounds: tuple[float, float], power: float) -> list[float]:
    """Speeds drawn one processor at a time until they sum to at least ``power``, rounded to SPEED_STEP."""
    speeds: list[float] = []
    while sum(speeds) < power:
        speeds.append(round(float(rng.uniform(*bounds)) / SPEED_STEP) * SPEED_STEP)
    return speeds


def _input_sizes(rng: np.random.Generator, mean: float, heterogeneity: float, total: float) -> np.ndarray:
    """Task input bytes U(mean (1 - H/2), mean (1 + H/2)) until they sum to ``total`` (the last one trimmed)."""
    sizes: list[float] = []
    left = total
    while left >= 1.0:
        size = min(float(rng.uniform(mean * (1 - heterogeneity / 2), mean * (1 + heterogeneity / 2))), left)
        sizes.append(size)
        left -= size
    return np.floor(np.array(sizes))
