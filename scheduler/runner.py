"""One simulation from text specs (what ``predictor simulate`` takes): workload, cluster, policy, estimates.

Workloads: ``fig11``..``fig14``; ``ncbi[:hours=25,seed=0,per_type=20,deadline_factor=F]``;
``walker[:net=2,jobs=40,util=0.6,...]`` (seed 002's grid, see ``walker_grid.generate``);
``bot[:granularity=15,app=vis,sites=4,warm=true,...]`` (seed 003's data-intensive bag of tasks,
see ``bag_of_tasks.generate``);
``dataset[:load=0.8,copies=1,per_platform=2]`` (the bundled measurements, or a CSV
path); a path to an SWF log ``LOG.swf[:limit=N,train=0.3,speedup=1]`` (its cluster
from ``LOG.swf.machines``). Clusters (default: the workload's own):
``ncbi[:per_type=20]``, ``ncbi-homo[:per_type=N]`` (machine type 6 only),
``catalog[:N]`` (N machines per catalog platform), an Alea ``.machines`` file, or a
YAML file ``{platforms: {name: {power_watts: W}}, machines: {platform: count} or
[{id, platform, slots}]}``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from predictor.catalog import Catalog
from predictor.settings import BUNDLED_DATA
from scheduler.estimates import oracle_for
from scheduler.metrics import Metrics, compute
from scheduler.oracles import Oracle
from scheduler.policy import make_policy, split_spec
from scheduler.simulate import SimResult, simulate
from scheduler.workload import Cluster, MachineSpec, PlatformSpec, Workload
from scheduler.workloads import bag_of_tasks, dataset, ncbi, swf, walker_grid
from scheduler.workloads.figures import FIGURES


def load_workload(spec: str, catalog: Catalog, seed: int = 0) -> Workload:
    """The workload named by ``spec`` (see the module docstring)."""
    name, options = split_spec(spec)
    if name in FIGURES and not options:
        return FIGURES[name]()
    if name == "ncbi":
        return ncbi.generate(seed=options.pop("seed", seed), **options)
    if name == "walker":
        return walker_grid.generate(seed=options.pop("seed", seed), **options)
    if name == "bot":
        return bag_of_tasks.generate(seed=options.pop("seed", seed), **options)
    if name == "dataset" or name.endswith(".csv"):
        paths = sorted((BUNDLED_DATA / "measurements").glob("*.csv")) if name == "dataset" else [Path(name)]
        return dataset.from_measurements(paths, catalog, seed=options.pop("seed", seed), **options)
    if name.endswith(".swf"):
        if not Path(name).exists():
            raise FileNotFoundError(f"no such log: {name}")
        train = options.pop("train", 0.3)
        return swf.replay(name, train_fraction=train, **options)
    raise ValueError(f"unknown workload {spec!r}: use fig11..fig14, ncbi, walker, bot, dataset, a .csv of measurements or a .swf log")


def load_cluster(spec: str, catalog: Catalog) -> Cluster:
    """The cluster named by ``spec`` (see the module docstring)."""
    name, options = split_spec(spec)
    if name == "ncbi":
        return ncbi.cluster(**options)
    if name == "ncbi-homo":
        return ncbi.cluster(types=("type6",), **options)
    if name.startswith("catalog"):
        _, _, count = name.partition(":")
        return dataset.catalog_cluster(catalog, int(count or options.get("per_platform", 2)))
    path = Path(name)
    if path.suffix == ".machines":
        lines = swf.read_machines(path)
        return Cluster({c.name: PlatformSpec(c.name) for c in lines}, [MachineSpec(c.name, c.name, c.cpus) for c in lines])
    if path.suffix in (".yaml", ".yml"):
        return cluster_file(path, catalog)
    raise ValueError(f"unknown cluster {spec!r}: use ncbi, ncbi-homo, catalog:N, a .machines file or a .yaml file")


def cluster_file(path: Path, catalog: Catalog) -> Cluster:
    """A YAML cluster: platforms (else the catalog's) and machines as counts per platform or a list."""
    raw = yaml.safe_load(path.read_text()) or {}
    declared = raw.get("platforms") or {}
    platforms = {n: PlatformSpec(n, float((v or {}).get("power_watts", 0.0))) for n, v in declared.items()}
    machines_raw = raw.get("machines")
    if isinstance(machines_raw, dict):
        machines = [MachineSpec(f"{p}-{i}", p) for p, n in machines_raw.items() for i in range(int(n))]
    elif isinstance(machines_raw, list):
        machines = [MachineSpec(str(m["id"]), str(m["platform"]), int(m.get("slots", 1))) for m in machines_raw]
    else:
        raise ValueError(f"{path}: 'machines' must be a mapping of platform -> count or a list of machines")
    for m in machines:
        if m.platform not in platforms:
            if m.platform not in catalog.platforms:
                raise ValueError(f"{path}: machine {m.id}: platform {m.platform!r} is neither declared nor in the catalog")
            platforms[m.platform] = PlatformSpec(m.platform, catalog.platforms[m.platform].power_watts)
    return Cluster(platforms, machines)


def estimates_oracle(
    workload: Workload, estimates: str, seed: int = 0, champions: Callable[[], Oracle] | None = None
) -> Oracle:
    """The oracle an ``--estimates`` value names, ``champions`` being the service's registered models."""
    if estimates == "champions":
        if champions is None:
            raise ValueError("estimates 'champions' needs the service's runtime oracle")
        return champions()
    return oracle_for(workload, estimates, seed)


def run(
    workload: Workload,
    policy: str,
    estimates: str,
    *,
    seed: int = 0,
    champions: Callable[[], Oracle] | None = None,
    threshold: float = 0.25,
    oracle: Oracle | None = None,
) -> tuple[SimResult, Metrics]:
    """Simulate ``workload`` under ``policy`` with ``estimates`` (``oracle``: one already built for them, to reuse)."""
    if oracle is None:
        oracle = estimates_oracle(workload, estimates, seed, champions)
    result = simulate(workload, make_policy(policy), oracle, estimates=estimates, threshold=threshold)
    return result, compute(result)
