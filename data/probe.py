"""Probing: the candidate jobs of a plan ranked by what measuring them would teach, and running them by hand.

The candidate space of an (algorithm, platform) is a sweep plan's jobs of the pair (their inputs made
by :mod:`data.datagen`, the parameters from the plan's grid, checked against the catalog's
schema), one run each. :func:`rank_candidates` scores them against the pair's stored runs with a rule
of :mod:`data.acquisition`; :func:`run_probes` runs the best one for real through the profile
wrapper, stores it (source ``probe``), ranks again and goes on until its budget is spent. A probe's
run id is derived from the plan and the job, so a second call skips what the store already holds.
:func:`profile_probe_command` is how an executor of the scheduler's probe orders runs one.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from data.acquisition import AcquisitionPick, Rule, rank
from data.profile import profile_command
from data.sweep import PlanError, SweepPlan, SweepRun, check_jobs, command_for, expand, materialise_inputs
from predictor.catalog import Catalog
from predictor.domain import Measurement, Source
from predictor.jobfeatures import job_features
from predictor.store import MeasurementStore

# run ids of probes: probe-<digest of plan seed and job>
PREFIX = "probe"


@dataclass(frozen=True)
class ProbeCandidate:
    """A job probing could run, and its features (read from its inputs)."""

    run: SweepRun
    features: dict[str, float]

    def run_id(self, seed: int) -> str:
        return self.run.run_id(seed, PREFIX)


@dataclass(frozen=True)
class Ranked:
    """A candidate with its place in the ranking."""

    candidate: ProbeCandidate
    pick: AcquisitionPick


def pairs_of(plan: SweepPlan) -> list[tuple[str, str]]:
    """The (algorithm, platform) pairs a plan has jobs for, in the plan's order."""
    return list(dict.fromkeys((job.algorithm, p) for job in plan.jobs for p in job.platforms))


def restrict(plan: SweepPlan, algorithm: str, platform: str) -> SweepPlan:
    """The plan's jobs of one pair, one run each, with only the input sets they read (and the sets those sample)."""
    jobs = [
        job.model_copy(update={"platforms": [platform]})
        for job in plan.jobs
        if job.algorithm == algorithm and platform in job.platforms
    ]
    if not jobs:
        raise PlanError(
            f"the plan has no job of {algorithm} on {platform}; it has {', '.join(f'{a}@{p}' for a, p in pairs_of(plan))}"
        )
    needed = {name for job in jobs for name in job.files.values()}
    needed |= {source for name in needed if (source := plan.inputs[name].source)}
    inputs = {name: spec for name, spec in plan.inputs.items() if name in needed}
    return plan.model_copy(update={"jobs": jobs, "inputs": inputs, "repeats": 1})


def candidates(plan: SweepPlan, catalog: Catalog, workdir: Path, algorithm: str, platform: str) -> list[ProbeCandidate]:
    """Every job of the pair in ``plan``, its inputs generated (or reused) in ``workdir`` and its features read."""
    pair_plan = restrict(plan, algorithm, platform)
    check_jobs(pair_plan, catalog)
    definition = catalog.algorithm(algorithm)
    runs = expand(pair_plan, catalog, materialise_inputs(pair_plan, workdir))
    return [ProbeCandidate(run, job_features(definition, run.params)) for run in runs]


def rank_candidates(
    pool: list[ProbeCandidate],
    store: MeasurementStore,
    *,
    seed: int,
    rule: Rule,
    n: int,
    cost_weight: float = 1.0,
) -> list[Ranked]:
    """The ``n`` candidates not measured yet that are most worth a run, best first, given the pair's stored runs."""
    if not pool:
        return []
    algorithm, platform = pool[0].run.algorithm, pool[0].run.platform
    known = store.known_run_ids(c.run_id(seed) for c in pool)
    left = [c for c in pool if c.run_id(seed) not in known]
    if not left:
        return []
    features = pd.DataFrame([c.features for c in left])
    frame = store.frame(algorithm, platform)
    if len(frame):
        measured, seconds = frame.reindex(columns=features.columns), frame["wall_seconds"].to_numpy(dtype="float64")
        submitted = frame[frame["source"] == Source.PRODUCTION.value].reindex(columns=features.columns)
    else:
        measured, seconds, submitted = features.iloc[:0], np.empty(0), None
    picks = rank(features, measured, seconds, rule=rule, n=n, cost_weight=cost_weight, submitted=submitted)
    return [Ranked(left[p.index], p) for p in picks]


def run_probes(
    plan: SweepPlan,
    catalog: Catalog,
    store: MeasurementStore,
    workdir: Path,
    *,
    budget_s: float,
    rule: Rule,
    cap_s: float | None = None,
    pairs: list[tuple[str, str]] | None = None,
    cost_weight: float = 1.0,
    on_run: Callable[[Measurement, float], None] | None = None,
) -> list[Measurement]:
    """Run the best-ranked candidate of each pair in turn, for real, until ``budget_s`` is spent; store each as it ends.

    The budget counts the probes' own wall seconds (not the ranking between them); a probe starts while
    some budget is left, so the last one may overrun it by at most its cap. Each run is killed at ``cap_s`` (or the plan's timeout), and stored censored if it was. A pair whose
    candidates are all measured drops out; runs already stored (an earlier call) are not repeated.
    """
    chosen = pairs or pairs_of(plan)
    pools = {pair: candidates(plan, catalog, workdir, *pair) for pair in chosen}
    timeout = min(cap_s, plan.timeout_s) if cap_s is not None else plan.timeout_s
    spent = 0.0
    done: list[Measurement] = []
    while pools and spent < budget_s:
        for pair in list(pools):
            if spent >= budget_s:
                break
            best = rank_candidates(pools[pair], store, seed=plan.seed, rule=rule, n=1, cost_weight=cost_weight)
            if not best:
                del pools[pair]
                continue
            run = best[0].candidate.run
            measurement = profile_command(
                command_for(run, catalog),
                catalog=catalog,
                algorithm=run.algorithm,
                platform=run.platform,
                params=run.params,
                run_id=best[0].candidate.run_id(plan.seed),
                source=Source.PROBE,
                timeout=timeout,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            store.add([measurement])
            done.append(measurement)
            spent += measurement.wall_seconds
            if on_run:
                on_run(measurement, spent)
    return done


def profile_probe_command(
    catalog: Catalog, run_id: str, algorithm: str, platform: str, params: dict[str, Any], cap_s: float
) -> list[str]:
    """The command that runs one probe of the scheduler: ``predictor profile`` (with this interpreter) of the catalog's
    command on ``platform``, killed at ``cap_s``; it stores the run under ``run_id`` with source ``probe``."""
    command = command_for(SweepRun(algorithm, platform, params, 0), catalog)
    words = [f"--param={name}={value}" for name, value in sorted(params.items())]
    return [
        sys.executable,
        "-m",
        "predictor",
        "profile",
        f"--algorithm={algorithm}",
        f"--platform={platform}",
        *words,
        f"--run-id={run_id}",
        f"--timeout={cap_s:g}",
        "--",
        *command,
    ]
