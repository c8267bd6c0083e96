"""The simulator's specs: an estimate source, a workload and a cluster, each named by a short text and parsed into
the object it becomes (an :class:`~simulator.estimates.EstimateSource`, a :class:`~simulator.workload.WorkloadRecipe`
or a :class:`~simulator.workload.Cluster`), in the grammar of ``scheduler/specs.py`` and with its errors
(:class:`~scheduler.specs.SpecError`). A policy's spec is ``scheduler.specs.parse_policy``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Literal

from predictor.catalog import Catalog
from predictor.settings import BUNDLED_DATA
from scheduler.run_times import Oracle
from scheduler.specs import SpecError, bind_options, existing_file, name_and_options
from simulator.estimates import (
    Blind,
    Champions,
    EstimateSource,
    Fitted,
    LastTwoMean,
    Noisy,
    Online,
    Requested,
    Service,
    Truth,
)
from simulator.workload import Cluster, Workload, WorkloadRecipe
from simulator.workloads import bag_of_tasks, clusters, dataset, ncbi, swf, walker_grid
from simulator.workloads.figures import FIGURES

GENERATORS: dict[str, Callable[..., Workload]] = {
    # Kontothanassis & Goddeau 2004's NCBI-like trace
    "ncbi": ncbi.generate,
    "walker": walker_grid.generate,  # Walker 2001's grid
    # Santos-Neto et al. 2004's data-intensive bag of tasks
    "bot": bag_of_tasks.generate,
}
# name -> (source, the option a bare value sets)
ESTIMATES: dict[str, tuple[type[EstimateSource], str | None]] = {
    "oracle": (Truth, None),
    "none": (Blind, None),
    "requested": (Requested, None),
    "last_two_mean": (LastTwoMean, None),
    "noisy": (Noisy, "sigma"),
    "model": (Fitted, "member"),
}


def parse_estimates(text: str, champions: Callable[[], Oracle] | None = None) -> EstimateSource:
    """``oracle``, ``none``, ``requested``, ``last_two_mean``, ``noisy[:SIGMA]``, ``model[:MEMBER]``, ``service[:KEY=VALUE,...]``
    (the planning options of ``simulator.learning.LearningOptions``; it learns as the settings say), ``online[:KEY=VALUE,...]`` or ``sc15[:KEY=VALUE,...]``
    (``simulator.online.OnlineOptions``, from its defaults or the SC'15 preset) or ``champions`` (what ``champions``
    loads)."""
    name, items = name_and_options(text, "estimates")
    if name in ESTIMATES:
        source, positional = ESTIMATES[name]
        return source(**bind_options("estimates", name, source, items, positional))
    if name == "service":
        from simulator.learning import LearningOptions

        return Service(LearningOptions(**bind_options("estimates", name, LearningOptions, items)))
    if name in ("online", "sc15"):
        from simulator.online import SC15, OnlineOptions

        preset = SC15 if name == "sc15" else OnlineOptions()
        return Online(replace(preset, **bind_options("estimates", name, OnlineOptions, items)))
    if name == "champions":
        bind_options("estimates", name, Champions, items, hidden={"load"})
        if champions is None:
            raise SpecError("estimates 'champions' needs the service's runtime oracle")
        return Champions(champions)
    raise SpecError(
        f"unknown estimates {name!r}; known: {', '.join(sorted([*ESTIMATES, 'service', 'online', 'sc15', 'champions']))}"
    )


def parse_workload(text: str, catalog: Catalog) -> WorkloadRecipe:
    """``fig11``..``fig14``; a generator ``ncbi``, ``walker`` or ``bot`` with its options; ``dataset`` (the bundled
    measurements) or a measurements ``.csv``, with ``from_measurements``' options; an ``.swf`` log with ``train``
    (the fraction kept as history), ``limit``, ``speedup`` and ``nodes=pooled|packed`` (its cluster from
    ``LOG.swf.machines``)."""
    name, items = name_and_options(text, "workload")
    if name in FIGURES:
        return WorkloadRecipe(FIGURES[name], bind_options("workload", name, FIGURES[name], items), seeded=False)
    if name in GENERATORS:
        return WorkloadRecipe(GENERATORS[name], bind_options("workload", name, GENERATORS[name], items))
    if name == "dataset" or name.endswith(".csv"):
        paths = sorted((BUNDLED_DATA / "measurements").glob("*.csv")) if name == "dataset" else [existing_file(name)]
        make = partial(dataset.from_measurements, paths, catalog)
        return WorkloadRecipe(make, bind_options("workload", name, make, items))
    if name.endswith(".swf"):
        make = partial(_swf_log, existing_file(name))
        return WorkloadRecipe(make, bind_options("workload", name, make, items), seeded=False)
    known = ", ".join([*FIGURES, *GENERATORS, "dataset"])
    raise SpecError(f"unknown workload {name!r}; known: {known}, a .csv of measurements or a .swf log")


def parse_cluster(text: str, catalog: Catalog) -> Cluster:
    """``ncbi[:per_type=N]``, ``ncbi-homo[:per_type=N]`` (machine type 6 only), ``catalog[:N]`` (N machines per
    catalog platform), an Alea ``.machines`` file, or a YAML file (:func:`simulator.workloads.clusters.yaml_file`)."""
    name, items = name_and_options(text, "cluster")
    if name in ("ncbi", "ncbi-homo"):
        types_ = ("type6",) if name == "ncbi-homo" else tuple(ncbi.MACHINE_TYPES)
        return ncbi.cluster(types=types_, **bind_options("cluster", name, ncbi.cluster, items, hidden={"types"}))
    if name == "catalog":
        make = partial(dataset.catalog_cluster, catalog)
        return make(**bind_options("cluster", name, make, items, "per_platform", hidden={"only"}))
    if name.endswith(".machines"):
        bind_options("cluster", name, clusters.machines_file, items, hidden={"path"})
        return clusters.machines_file(existing_file(name))
    if name.endswith((".yaml", ".yml")):
        bind_options("cluster", name, clusters.yaml_file, items, hidden={"path", "catalog"})
        return clusters.yaml_file(existing_file(name), catalog)
    raise SpecError(f"unknown cluster {name!r}; known: ncbi, ncbi-homo, catalog, a .machines file or a .yaml file")


def _swf_log(
    path: Path,
    train: float = 0.3,
    limit: int | None = None,
    speedup: float = 1.0,
    nodes: Literal["pooled", "packed"] = "pooled",
) -> Workload:
    """An SWF log replayed after its first ``train`` fraction of jobs, kept as history, its clusters pooled or as nodes
    (see ``swf.replay``)."""
    return swf.replay(path, train_fraction=train, limit=limit, speedup=speedup, nodes=nodes)
