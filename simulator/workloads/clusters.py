"""Clusters described in files: an Alea ``.machines`` list, or a YAML file of platforms and machines."""

from __future__ import annotations

from pathlib import Path

import yaml

from predictor.catalog import Catalog
from simulator.workload import Cluster, MachineSpec, PlatformSpec
from simulator.workloads.swf import read_machines


def machines_file(path: Path) -> Cluster:
    """An Alea ``.machines`` file: each line a machine (its own platform) with its CPUs as slots."""
    lines = read_machines(path)
    return Cluster({c.name: PlatformSpec(c.name) for c in lines}, [MachineSpec(c.name, c.name, c.cpus) for c in lines])


def yaml_file(path: Path, catalog: Catalog) -> Cluster:
    """``{platforms: {name: {power_watts: W}}, machines: {platform: count} or [{id, platform, slots}]}``; a platform
    not declared is the catalog's."""
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
                raise ValueError(
                    f"{path}: machine {m.id}: platform {m.platform!r} is neither declared nor in the catalog"
                )
            platforms[m.platform] = PlatformSpec(m.platform, catalog.platforms[m.platform].power_watts)
    return Cluster(platforms, machines)
