"""An NCBI-like BLAST workload after Kontothanassis & Goddeau 2004: its job mix, arrival process and machine types.

Kontothanassis & Goddeau 2004 gives the mix (Table 2), the six machine types (Table 1), Poisson arrivals
with a mean gap of 1.14 s whose rate varies by the hour over a 25-hour trace from
1 pm, and the shape of each program's cost: blastn and blastp scan a database and are
I/O-heavy (I/O 19-74% and 3-45% of their time by machine), blastx is CPU-heavier
(I/O under 30%), tblastn and tblastx are CPU-bound and an order of magnitude longer;
more memory caches more of the smaller protein database. It prints no per-job
times, so the cost model below is ours, tuned to land inside those ranges:

    seconds = cpu_ref x length factor x hidden complexity x 2.8 GHz / clock
            + database MB read x (1 - cached fraction(memory)) / disk MB/s

times a small run-to-run noise. The query length is a feature a model can see; the
complexity (how many hits a query has) is not, so learned estimates keep an error.
Power draws are typical of such machines, not from the seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from predictor.catalog import Catalog
from predictor.domain import Measurement, Source
from scheduler.probing import ProbeJob
from simulator.workload import Cluster, JobSpec, MachineSpec, PlatformSpec, Workload


@dataclass(frozen=True)
class MachineType:
    """A row of Kontothanassis & Goddeau 2004's Table 1, plus an assumed power draw."""

    ghz: float
    memory_gb: float
    disk: str
    disk_mb_s: float
    power_watts: float


MACHINE_TYPES = {
    "type1": MachineType(0.733, 0.25, "ide", 40.0, 60.0),
    "type2": MachineType(2.8, 1.5, "ide", 40.0, 120.0),
    "type3": MachineType(2.8, 0.25, "ide", 40.0, 110.0),
    "type4": MachineType(2.8, 1.5, "scsi", 60.0, 130.0),
    "type5": MachineType(2.8, 0.25, "scsi", 60.0, 120.0),
    "type6": MachineType(0.525, 8.0, "scsi", 60.0, 200.0),
}


@dataclass(frozen=True)
class Program:
    """One BLAST program: its share of the trace (Table 2), database, CPU seconds at 2.8 GHz and MB read per query."""

    share: float
    database: str
    cpu_ref: float
    io_mb: float


PROGRAMS = {
    "blastn": Program(0.558, "nt", 10.0, 1200.0),
    "blastp": Program(0.188, "nr", 8.0, 300.0),
    "blastx": Program(0.212, "nr", 40.0, 300.0),
    "tblastn": Program(0.014, "nt", 400.0, 1200.0),
    "tblastx": Program(0.028, "nt", 900.0, 1200.0),
}
# data plus indices (Kontothanassis & Goddeau 2004, section 3.1)
DATABASE_GB = {"nt": 15.0, "nr": 2.3}
# Kontothanassis & Goddeau 2004, section 3.2: a warm cache cuts blastn by 21% on type 6 and blastp by 12.5% on type 2.
WARM_GAIN = {("blastn", "type6"): 0.21, ("blastp", "type2"): 0.125}
# Relative arrival rate by clock hour: busy working day, quiet small hours (the shape of Kontothanassis & Goddeau 2004's Fig 9).
HOURLY_RATE = (
    0.75,
    0.65,
    0.55,
    0.5,
    0.5,
    0.55,
    0.65,
    0.8,
    0.95,
    1.1,
    1.25,
    1.3,
    1.3,
    1.3,
    1.35,
    1.35,
    1.3,
    1.2,
    1.1,
    1.0,
    0.95,
    0.9,
    0.85,
    0.8,
)
MEAN_GAP = 1.14
START_HOUR = 13
REFERENCE_LENGTH = 500.0
LENGTH_SIGMA = 0.6
COMPLEXITY_SIGMA = 0.35
RUN_NOISE_SIGMA = 0.05


def cached_fraction(database: str, memory_gb: float) -> float:
    """Share of a database's reads the page cache absorbs on a machine with ``memory_gb``."""
    return min(0.85, 0.8 * memory_gb / DATABASE_GB[database])


def true_seconds(program: str, platform: str, length: np.ndarray, complexity: np.ndarray) -> np.ndarray:
    """Noise-free seconds of queries of ``length`` residues and hidden ``complexity`` on one machine type."""
    p, m = PROGRAMS[program], MACHINE_TYPES[platform]
    cpu = p.cpu_ref * (length / REFERENCE_LENGTH) * complexity * 2.8 / m.ghz
    io = p.io_mb * (1.0 - cached_fraction(p.database, m.memory_gb)) / m.disk_mb_s
    return cpu + io


def cluster(per_type: int = 20, types: tuple[str, ...] = tuple(MACHINE_TYPES)) -> Cluster:
    """``per_type`` machines of each type: Kontothanassis & Goddeau 2004's heterogeneous cluster (or ``types=("type6",)``, its homogeneous one)."""
    platforms = {t: PlatformSpec(t, MACHINE_TYPES[t].power_watts) for t in types}
    machines = [MachineSpec(f"{t}-{i:02d}", t) for t in types for i in range(per_type)]
    return Cluster(platforms, machines)


def arrivals(hours: float, rng: np.random.Generator) -> np.ndarray:
    """Poisson arrival times over ``hours`` from 1 pm, rate varying by the hour, mean gap 1.14 s over the whole trace."""
    whole = int(np.ceil(hours))
    clock = [(START_HOUR + h) % 24 for h in range(whole)]
    weights = np.array([HOURLY_RATE[c] for c in clock])
    lengths = np.minimum(np.arange(1, whole + 1), hours) - np.arange(whole)
    mean_weight = float(np.sum(weights * lengths) / hours)
    times = []
    for h, (w, span) in enumerate(zip(weights, lengths)):
        rate = w / mean_weight / MEAN_GAP
        n = rng.poisson(rate * 3600.0 * span)
        times.append(np.sort(h * 3600.0 + rng.uniform(0.0, 3600.0 * span, n)))
    return np.concatenate(times)


def generate(
    hours: float = 25.0,
    seed: int = 0,
    per_type: int = 20,
    types: tuple[str, ...] = tuple(MACHINE_TYPES),
    deadline_factor: float | None = None,
    history_runs: int = 40,
) -> Workload:
    """An NCBI-like trace of ``hours`` on ``per_type`` machines of each type, with past runs for models to learn from.

    ``deadline_factor`` gives each job a deadline that many times its best true time after it arrives.
    """
    rng = np.random.default_rng(seed)
    submit = arrivals(hours, rng)
    n = len(submit)
    names = list(PROGRAMS)
    program = rng.choice(
        len(names), size=n, p=np.array([PROGRAMS[p].share for p in names]) / sum(PROGRAMS[p].share for p in names)
    )
    length = np.round(REFERENCE_LENGTH * rng.lognormal(0.0, LENGTH_SIGMA, n))
    length = np.maximum(length, 20.0)
    complexity = rng.lognormal(0.0, COMPLEXITY_SIGMA, n)
    times = np.empty((n, len(types)))
    for k, name in enumerate(names):
        rows = program == k
        for c, t in enumerate(types):
            times[rows, c] = true_seconds(name, t, length[rows], complexity[rows])
    times *= rng.lognormal(0.0, RUN_NOISE_SIGMA, times.shape)
    jobs = []
    for i in range(n):
        name = names[program[i]]
        true_times = dict(zip(types, times[i].tolist()))
        deadline = None if deadline_factor is None else float(submit[i] + deadline_factor * min(true_times.values()))
        jobs.append(
            JobSpec(
                id=f"q{i:06d}",
                submit=float(submit[i]),
                algorithm=name,
                true_times=true_times,
                params={"query": f"q{i:06d}"},
                features={"query.length": float(length[i])},
                deadline=deadline,
                data=PROGRAMS[name].database,
            )
        )
    return Workload(
        name=f"ncbi-{hours:g}h-s{seed}",
        jobs=jobs,
        cluster=cluster(per_type, types),
        history=history(rng, types, history_runs),
        warm_gain={k: v for k, v in WARM_GAIN.items() if k[1] in types},
        notes=f"{n} jobs over {hours:g} h; {len(types)} machine types x {per_type}",
    )


def history(rng: np.random.Generator, types: tuple[str, ...], runs: int) -> list[Measurement]:
    """Past runs (``runs`` per program and machine type) of the same cost law: what the measurement store would hold."""
    out = []
    for name in PROGRAMS:
        for t in types:
            length = np.maximum(np.round(REFERENCE_LENGTH * rng.lognormal(0.0, LENGTH_SIGMA, runs)), 20.0)
            complexity = rng.lognormal(0.0, COMPLEXITY_SIGMA, runs)
            wall = true_seconds(name, t, length, complexity) * rng.lognormal(0.0, RUN_NOISE_SIGMA, runs)
            for k in range(runs):
                out.append(
                    Measurement(
                        run_id=f"hist-{name}-{t}-{k}",
                        algorithm=name,
                        platform=t,
                        machine=f"{t}-history",
                        features={"query.length": float(length[k])},
                        wall_seconds=float(wall[k]),
                        source=Source.PROBE,
                    )
                )
    return out


def catalog(types: tuple[str, ...] = tuple(MACHINE_TYPES)) -> Catalog:
    """The workload as a service catalog: the machine types as platforms, the five programs on each."""
    platforms = {
        t: {
            "kind": "cpu",
            "cores": 1,
            "clock_ghz": m.ghz,
            "memory_gb": m.memory_gb,
            "disk": "hdd",
            "power_watts": m.power_watts,
            "description": f"Kontothanassis & Goddeau 2004 {t}, {m.disk.upper()} disk",
        }
        for t, m in MACHINE_TYPES.items()
        if t in types
    }
    algorithms = {
        name: {
            "description": f"{name} against {p.database}",
            "parameters": {"query": {"type": "string", "feature": False}},
            "implementations": {t: {"command": [name, "-query", "{query}"]} for t in platforms},
        }
        for name, p in PROGRAMS.items()
    }
    return Catalog.model_validate(
        {"platforms": platforms, "algorithms": algorithms, "source": "simulator.workloads.ncbi"}
    )


def probe_candidates(
    types: tuple[str, ...], seed: int = 0, lengths: int = 16, longest: float = 20000.0
) -> list[ProbeJob]:
    """Runs idle-time probing may choose from: each program at ``lengths`` query lengths from 20 to ``longest`` residues.

    Each candidate has its own hidden complexity and run noise (seeded), so a probe measures what a user's job would.
    """
    rng = np.random.default_rng(seed)
    grid = np.round(np.geomspace(20.0, longest, lengths))
    out = []
    for name in PROGRAMS:
        complexity = rng.lognormal(0.0, COMPLEXITY_SIGMA, lengths)
        noise = rng.lognormal(0.0, RUN_NOISE_SIGMA, (lengths, len(types)))
        for k, length in enumerate(grid):
            times = {
                t: float(true_seconds(name, t, grid[k : k + 1], complexity[k : k + 1])[0] * noise[k, c])
                for c, t in enumerate(types)
            }
            out.append(ProbeJob(f"{name}-{length:g}", name, {"query.length": float(length)}, times))
    return out
