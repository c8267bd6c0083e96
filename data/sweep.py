"""Parameter sweeps of real programs: generate inputs, run every job through the profiler, store each run.

A plan (YAML) names input sets made by :mod:`data.datagen` and jobs over
them; the sweep runs jobs in a seeded random order, stores each measurement the
moment it finishes (an interrupted sweep loses nothing) and gives every run a
deterministic id, so running a plan again only runs what is missing.

Input sets, one file (or BLAST database) per point of their grid, named by set,
alphabet, grid point, options and plan seed:

- ``random`` / ``family``: FASTA of unrelated or related sequences;
- ``blastdb`` / ``bwa``: BLAST databases or bwa-indexed reference FASTA of
  ``n_sequences`` each, every one the first records of one random pool, so smaller
  ones are parts of larger ones;
- ``hmm``: files of the first ``n_models`` profiles of one pool of families;
- ``sampled`` / ``fastq``: FASTA (queries, targets) or reads sampled from the
  ``source`` set's shared sequences (the smallest database or reference, the
  families in every profile file), so searches find real hits, and reads map, in
  every file of the source.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from data import datagen
from data.profile import profile_command, require_programs
from predictor.catalog import Catalog
from predictor.domain import Measurement, Source
from predictor.store import MeasurementStore


class PlanError(ValueError):
    """The sweep plan is unreadable or invalid."""


Generator = Literal["family", "random", "blastdb", "bwa", "hmm", "sampled", "fastq"]
_SAMPLERS = ("sampled", "fastq")  # generators that draw from a source set
_GENERATOR_TOOLS = {
    "blastdb": ("makeblastdb",),
    "bwa": ("bwa",),
    "hmm": ("mafft", "hmmbuild"),
}  # programs data.datagen runs
_GRID_ONLY = {
    "blastdb": {"n_sequences"},
    "bwa": {"n_sequences"},
    "hmm": {"n_models"},
}  # nested sets vary only their size


class InputSet(BaseModel):
    """A family of generated inputs: one per point of ``grid``, ``options`` held constant."""

    model_config = ConfigDict(extra="forbid")

    generator: Generator = "family"
    alphabet: Literal["dna", "protein"] = "protein"
    grid: dict[str, list[Any]]
    options: dict[str, Any] = Field(default_factory=dict, description="Generator arguments shared by every point.")
    source: str | None = Field(default=None, description="For sampled and fastq sets: the set sampled from.")

    @model_validator(mode="after")
    def _consistent(self) -> InputSet:
        if (self.source is None) == (self.generator in _SAMPLERS):
            raise ValueError(f"a {self.generator} set {'needs' if self.source is None else 'takes no'} 'source'")
        allowed = _GRID_ONLY.get(self.generator)
        if allowed is not None and set(self.grid) != allowed:
            raise ValueError(
                f"a {self.generator} set's grid varies exactly {', '.join(allowed)}; put the rest in options"
            )
        if self.generator in ("bwa", "fastq") and self.alphabet != "dna":
            raise ValueError(f"a {self.generator} set is DNA: set alphabet: dna")
        return self


class SweepJob(BaseModel):
    """Runs of one algorithm: every input of the named sets x every parameter combination x platform."""

    model_config = ConfigDict(extra="forbid")

    algorithm: str
    platforms: list[str]
    files: dict[str, str] = Field(description="File parameter -> input set name.")
    grid: dict[str, list[Any]] = Field(default_factory=dict)


class SweepPlan(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seed: int = 0
    repeats: int = Field(default=1, ge=1, description="Identical runs of each job, to measure noise.")
    timeout_s: float = Field(default=600, gt=0)
    inputs: dict[str, InputSet]
    jobs: list[SweepJob]

    @model_validator(mode="after")
    def _references(self) -> SweepPlan:
        for name, spec in self.inputs.items():
            source = self.inputs.get(spec.source) if spec.source else None
            if spec.source and (source is None or source.generator in _SAMPLERS):
                raise ValueError(f"inputs.{name}.source: {spec.source!r} is not a non-sampled input set of this plan")
        for job in self.jobs:
            unknown = sorted(set(job.files.values()) - set(self.inputs))
            if unknown:
                raise ValueError(f"jobs.{job.algorithm}.files: unknown input set(s) {', '.join(unknown)}")
        return self


@dataclass(frozen=True)
class SweepRun:
    """One run to make: algorithm, platform, parameters and the repeat index."""

    algorithm: str
    platform: str
    params: dict[str, Any]
    repeat: int

    def run_id(self, seed: int, prefix: str = "sweep") -> str:
        """The run's id, the same whenever the same plan asks for it: ``prefix`` (who asked) and a digest."""
        key = json.dumps([seed, self.algorithm, self.platform, self.params, self.repeat], sort_keys=True, default=str)
        return f"{prefix}-" + hashlib.sha256(key.encode()).hexdigest()[:24]


def load_plan(path: Path) -> SweepPlan:
    """The plan in a YAML file; any problem is a one-line PlanError naming the file (and the line, for bad YAML)."""
    try:
        return SweepPlan.model_validate(yaml.safe_load(path.read_text()))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise PlanError(f"{where}: cannot read plan: {exc.problem or exc.context}") from exc
    except (OSError, yaml.YAMLError) as exc:
        raise PlanError(f"{path}: cannot read plan: {exc}") from exc
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise PlanError(f"{path}: invalid plan: {problems}") from exc


def _grid(grid: dict[str, list[Any]]) -> Iterator[dict[str, Any]]:
    names = sorted(grid)
    for values in itertools.product(*(grid[n] for n in names)):
        yield dict(zip(names, values))


@dataclass(frozen=True)
class _Built:
    """An input set on disk: one path per grid point, and the FASTA of the sequences all of them share."""

    files: list[Path]
    shared: Path


@dataclass(frozen=True)
class _Namer:
    """Paths of one input set's files, carrying the set, alphabet, parameters and plan seed in their names."""

    workdir: Path
    set_name: str
    spec: InputSet
    seed: int

    def path(self, point: dict[str, Any], suffix: str) -> Path:
        label = "-".join(f"{k}{v}" for k, v in sorted({**self.spec.options, **point}.items()))
        return self.workdir / f"{self.set_name}-{self.spec.alphabet}-{label}-s{self.seed}{suffix}"


def _seed_of(path: Path) -> int:
    """A file's generator seed, derived from its name."""
    return int(hashlib.sha256(path.name.encode()).hexdigest()[:8], 16)


def _once(path: Path, build: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Path:
    """Make ``path`` (a file or a folder) by ``build(temporary sibling, *args, **kwargs)`` and a rename, unless it exists."""
    if not path.exists():
        tmp = path.with_name(path.name + ".tmp")
        if tmp.is_dir():
            shutil.rmtree(tmp)
        tmp.unlink(missing_ok=True)
        build(tmp, *args, **kwargs)
        tmp.rename(path)
    return path


def _fasta_set(names: _Namer, _: Path | None) -> _Built:
    """One random or family FASTA file per grid point."""
    spec = names.spec
    write = datagen.write_family_fasta if spec.generator == "family" else datagen.write_fasta
    files = []
    for point in _grid(spec.grid):
        path = names.path(point, ".fa")
        files.append(_once(path, write, alphabet=spec.alphabet, seed=_seed_of(path), **spec.options, **point))
    return _Built(files, files[0])


def _sampled_set(names: _Namer, source: Path | None) -> _Built:
    """One FASTA (sampled) or FASTQ (fastq) file per grid point, drawn from ``source``."""
    spec = names.spec
    files = []
    for point in _grid(spec.grid):
        fastq = spec.generator == "fastq"
        path = names.path(point, ".fq" if fastq else ".fa")
        kwargs = {"seed": _seed_of(path), **spec.options, **point}
        if fastq:
            files.append(_once(path, datagen.write_fastq, source, **kwargs))
        else:
            files.append(_once(path, datagen.write_sampled_fasta, source, alphabet=spec.alphabet, **kwargs))
    return _Built(files, files[0])


def _indexed_set(names: _Namer, _: Path | None) -> _Built:
    """BLAST databases or bwa-indexed references of the first ``n_sequences`` records of one random pool.

    Each is a folder holding ``seqs.fa`` and its index: ``db.*`` (makeblastdb; the job names the prefix
    ``db``) or ``seqs.fa.*`` (bwa index; the job names ``seqs.fa``).
    """
    spec = names.spec
    sizes = sorted(spec.grid["n_sequences"])
    pool = names.path({"pool": sizes[-1]}, ".fa")
    _once(pool, datagen.write_fasta, sizes[-1], alphabet=spec.alphabet, seed=_seed_of(pool), **spec.options)

    def build(folder: Path, n: int) -> None:
        folder.mkdir()
        fasta = datagen.head_fasta(pool, folder / "seqs.fa", n)
        if spec.generator == "blastdb":
            datagen.make_blast_db(fasta, folder / "db", spec.alphabet)
        else:
            datagen.make_bwa_index(fasta)

    folders = {n: _once(names.path({"n_sequences": n}, f".{spec.generator}"), build, n) for n in sizes}
    name = "db" if spec.generator == "blastdb" else "seqs.fa"
    return _Built([folders[n] / name for n in spec.grid["n_sequences"]], folders[sizes[0]] / "seqs.fa")


def _hmm_set(names: _Namer, _: Path | None) -> _Built:
    """Profile files of the first ``n_models`` profiles of one pool of families, each built by mafft + hmmbuild."""
    spec = names.spec
    counts = sorted(spec.grid["n_models"])
    profiles, members = [], []
    for i in range(1, counts[-1] + 1):
        member_path = names.path({"family": i}, ".fa")
        path = names.path({"family": i}, ".hmm")
        profiles.append(
            _once(path, datagen.write_profile, member_path, alphabet=spec.alphabet, seed=_seed_of(path), **spec.options)
        )
        members.append(member_path)

    def concatenate(tmp: Path, parts: list[Path]) -> None:
        tmp.write_bytes(b"".join(part.read_bytes() for part in parts))

    files = {n: _once(names.path({"n_models": n}, ".hmm"), concatenate, profiles[:n]) for n in counts}
    shared = _once(names.path({"n_models": counts[0]}, "-members.fa"), concatenate, members[: counts[0]])
    return _Built([files[n] for n in spec.grid["n_models"]], shared)


_BUILDERS: dict[str, Callable[[_Namer, Path | None], _Built]] = {
    "family": _fasta_set,
    "random": _fasta_set,
    "sampled": _sampled_set,
    "fastq": _sampled_set,
    "blastdb": _indexed_set,
    "bwa": _indexed_set,
    "hmm": _hmm_set,
}


def materialise_inputs(plan: SweepPlan, workdir: Path) -> dict[str, list[Path]]:
    """Generate (or reuse) every input of the plan, sources before the sets sampled from them; paths per set."""
    workdir.mkdir(parents=True, exist_ok=True)
    built: dict[str, _Built] = {}
    for set_name in sorted(plan.inputs, key=lambda n: (plan.inputs[n].source is not None, n)):
        spec = plan.inputs[set_name]
        source = built[spec.source].shared if spec.source else None
        try:
            built[set_name] = _BUILDERS[spec.generator](_Namer(workdir, set_name, spec, plan.seed), source)
        except (TypeError, ValueError) as exc:
            raise PlanError(f"inputs.{set_name}: cannot generate: {exc}") from exc
    return {name: b.files for name, b in built.items()}


def check_jobs(plan: SweepPlan, catalog: Catalog) -> None:
    """Refuse jobs the catalog cannot run (unknown algorithm, platform or parameter, a required one unset) as a PlanError."""
    for job in plan.jobs:
        where = f"jobs.{job.algorithm}"
        try:
            algo = catalog.algorithm(job.algorithm)
            for platform in job.platforms:
                catalog.platform(platform)
        except KeyError as exc:
            raise PlanError(f"{where}: {exc.args[0]}") from None
        missing = [p for p in job.platforms if p not in algo.implementations]
        if missing:
            raise PlanError(f"{where}: {job.algorithm} has no implementation on {', '.join(missing)}")
        unknown = sorted((set(job.files) | set(job.grid)) - set(algo.parameters))
        if unknown:
            raise PlanError(f"{where}: unknown parameter(s) {', '.join(unknown)}; known: {', '.join(algo.parameters)}")
        unset = [n for n, p in algo.parameters.items() if p.required and n not in job.files and n not in job.grid]
        if unset:
            raise PlanError(f"{where}: required parameter(s) {', '.join(unset)} set neither in files nor in grid")


def expand(plan: SweepPlan, catalog: Catalog, inputs: dict[str, list[Path]]) -> list[SweepRun]:
    """Every run of the plan, in the plan's seeded random order."""
    runs = []
    for job in plan.jobs:
        file_choices = {param: inputs[set_name] for param, set_name in job.files.items()}
        for files in _grid({k: [str(p) for p in v] for k, v in file_choices.items()}):
            for point in _grid(job.grid):
                for platform in job.platforms:
                    for repeat in range(plan.repeats):
                        runs.append(SweepRun(job.algorithm, platform, {**files, **point}, repeat))
    random.Random(plan.seed).shuffle(runs)
    return runs


def programs_of(plan: SweepPlan, catalog: Catalog) -> list[str]:
    """Every program the plan runs: its input generators' tools, each job's program and its platforms' launchers."""
    programs = [tool for spec in plan.inputs.values() for tool in _GENERATOR_TOOLS.get(spec.generator, ())]
    for job in plan.jobs:
        algo = catalog.algorithm(job.algorithm)
        for platform in job.platforms:
            programs += [*catalog.platform(platform).launcher[:1], algo.implementations[platform].command[0]]
    return list(dict.fromkeys(programs))


def command_for(run: SweepRun, catalog: Catalog) -> list[str]:
    """The implementation's command template filled with the run's parameters and the platform's threads."""
    return catalog.algorithm(run.algorithm).command(run.platform, run.params, catalog.platform(run.platform).threads)


def run_sweep(
    plan: SweepPlan,
    catalog: Catalog,
    store: MeasurementStore,
    workdir: Path,
    *,
    budget_s: float | None = None,
    on_run: Callable[[Measurement | None, int, int], None] | None = None,
) -> list[Measurement]:
    """Run what the store does not hold yet, storing each run as it finishes, until done or out of budget.

    Jobs the catalog cannot run are refused (PlanError), and a program that is not installed (MissingProgram), before
    any input is generated.
    """
    check_jobs(plan, catalog)
    require_programs(programs_of(plan, catalog))
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
