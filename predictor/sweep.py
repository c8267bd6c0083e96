"""Parameter sweeps of real programs: generate inputs, run every job through the profiler, store each run.

A plan (YAML) names input sets made by :mod:`predictor.datagen` and jobs over
them; the sweep runs jobs in a seeded random order, stores each measurement the
moment it finishes (an interrupted sweep loses nothing) and gives every run a
deterministic id, so running a plan again only runs what is missing.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from predictor import datagen
from predictor.catalog import Catalog
from predictor.domain import Measurement, Source
from predictor.profile import profile_command
from predictor.store import MeasurementStore


class PlanError(ValueError):
    """The sweep plan is unreadable or invalid."""


class InputSet(BaseModel):
    """A family of generated FASTA inputs: one file per point of ``grid``."""

    model_config = ConfigDict(extra="forbid")

    generator: Literal["family", "random"] = "family"
    alphabet: Literal["dna", "protein"] = "protein"
    grid: dict[str, list[Any]]


class JobSpec(BaseModel):
    """Runs of one algorithm: every input of the named sets x every parameter combination x platform."""

    model_config = ConfigDict(extra="forbid")

    algorithm: str
    platforms: list[str]
    files: dict[str, str] = Field(description="File parameter -> input set name.")
    grid: dict[str, list[Any]] = Field(default_factory=dict)


class Plan(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seed: int = 0
    repeats: int = Field(default=1, ge=1, description="Identical runs of each job, to measure noise.")
    timeout_s: float = Field(default=600, gt=0)
    inputs: dict[str, InputSet]
    jobs: list[JobSpec]


@dataclass(frozen=True)
class SweepRun:
    """One run to make: algorithm, platform, parameters and the repeat index."""

    algorithm: str
    platform: str
    params: dict[str, Any]
    repeat: int

    def run_id(self, seed: int) -> str:
        key = json.dumps([seed, self.algorithm, self.platform, self.params, self.repeat], sort_keys=True, default=str)
        return "sweep-" + hashlib.sha256(key.encode()).hexdigest()[:24]


def load_plan(path: Path) -> Plan:
    try:
        return Plan.model_validate(yaml.safe_load(path.read_text()))
    except (OSError, yaml.YAMLError) as exc:
        raise PlanError(f"{path}: cannot read plan: {exc}") from exc
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise PlanError(f"{path}: invalid plan: {problems}") from exc


def _grid(grid: dict[str, list[Any]]) -> Iterator[dict[str, Any]]:
    names = sorted(grid)
    for values in itertools.product(*(grid[n] for n in names)):
        yield dict(zip(names, values))


def materialise_inputs(plan: Plan, workdir: Path) -> dict[str, list[Path]]:
    """Generate (or reuse) every input file of the plan; returns the files per input set."""
    workdir.mkdir(parents=True, exist_ok=True)
    files: dict[str, list[Path]] = {}
    for set_name, spec in sorted(plan.inputs.items()):
        files[set_name] = []
        for point in _grid(spec.grid):
            label = "-".join(f"{k}{v}" for k, v in sorted(point.items()))
            path = workdir / f"{set_name}-{spec.alphabet}-{label}-s{plan.seed}.fa"
            if not path.exists():
                seed = int(hashlib.sha256(path.name.encode()).hexdigest()[:8], 16)
                tmp = path.with_suffix(".tmp")
                if spec.generator == "family":
                    datagen.write_family_fasta(tmp, alphabet=spec.alphabet, seed=seed, **point)
                else:
                    datagen.write_fasta(tmp, alphabet=spec.alphabet, seed=seed, **point)
                tmp.rename(path)
            files[set_name].append(path)
    return files


def expand(plan: Plan, catalog: Catalog, inputs: dict[str, list[Path]]) -> list[SweepRun]:
    """Every run of the plan, in the plan's seeded random order."""
    runs = []
    for job in plan.jobs:
        algo = catalog.algorithm(job.algorithm)
        for platform in job.platforms:
            catalog.platform(platform)
            if platform not in algo.implementations:
                raise PlanError(f"{job.algorithm} has no implementation on {platform}")
        file_choices = {param: inputs[set_name] for param, set_name in job.files.items()}
        for files in _grid({k: [str(p) for p in v] for k, v in file_choices.items()}):
            for point in _grid(job.grid):
                for platform in job.platforms:
                    for repeat in range(plan.repeats):
                        runs.append(SweepRun(job.algorithm, platform, {**files, **point}, repeat))
    random.Random(plan.seed).shuffle(runs)
    return runs


def command_for(run: SweepRun, catalog: Catalog) -> list[str]:
    """The implementation's command template filled with the run's parameters and the platform's threads."""
    algo = catalog.algorithm(run.algorithm)
    values = {n: p.default for n, p in algo.parameters.items()} | run.params
    values["threads"] = catalog.platform(run.platform).threads
    return [part.format(**values) for part in algo.implementations[run.platform].command]


def run_sweep(
    plan: Plan,
    catalog: Catalog,
    store: MeasurementStore,
    workdir: Path,
    *,
    budget_s: float | None = None,
    on_run: Callable[[Measurement | None, int, int], None] | None = None,
) -> list[Measurement]:
    """Run what the store does not hold yet, storing each run as it finishes, until done or out of budget."""
    runs = expand(plan, catalog, materialise_inputs(plan, workdir))
    known = store.known_run_ids([r.run_id(plan.seed) for r in runs])
    todo = [r for r in runs if r.run_id(plan.seed) not in known]
    started = time.monotonic()
    done: list[Measurement] = []
    for index, run in enumerate(todo):
        if budget_s is not None and time.monotonic() - started > budget_s:
            break
        measurement = profile_command(
            command_for(run, catalog),
            catalog=catalog,
            algorithm=run.algorithm,
            platform=run.platform,
            params=run.params,
            run_id=run.run_id(plan.seed),
            source=Source.PROBE,
            timeout=plan.timeout_s,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        store.add([measurement])
        done.append(measurement)
        if on_run:
            on_run(measurement, index + 1, len(todo))
    return done
