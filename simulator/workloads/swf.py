"""Replay of a real cluster log in the Standard Workload Format (the path is an argument; the tests find the real
logs through ``tests/traces.py``).

Real arrivals, real run times as the truth, and the time each user requested as the
estimate users give. The cluster comes from the Alea machine file beside the log
(``<log>.machines``: id, name, nodes, CPUs per node, speed, memory): each line is one
platform, simulated as one machine. With ``nodes="pooled"`` (the default) its slots are
all its CPUs and a job asks for its processors anywhere in it, ignoring node boundaries
(a 12-CPU job may span 2-CPU nodes) and exclusive-node requests. With ``nodes="packed"``
the machine is its nodes (:mod:`scheduler.nodes`): a job with a node request (``N:ppn=P``
parts, MetaCentrum's) takes N nodes with P free CPUs each, the whole nodes with ``#excl``;
any other job has its processors packed onto whole nodes and one more. Either way the
log's heterogeneity stays: which cluster a MetaCentrum job may use (``cl_<name>`` in its
node request, and whether its processors per node fit the cluster's nodes) and each
cluster's speed.

Each job's algorithm is its job class, named as the service's import names it (``<log>-<queue>``, else
``<log>-all``: :func:`data.swf_ingest.job_class`), so a replayed service trains the classes a site's would.
The first ``train_fraction`` of the log (by submit time) is history: its jobs are not
replayed, and a model learns from them (Tsafrir-style job-history features from
:mod:`features.history`, which only look at what was known at each submit time).
Jobs the log marks failed or cancelled end with an error at their logged run time.

Memory (``memory``, off by default so every replay without it is as before): SWF gives used and requested memory
per processor in KB (fields 7 and 10); times the job's processors they are its peak and its request. With memory
on, each node gets the machine file's memory (KB per node), each job its peak as the truth the simulator checks
(``JobSpec.true_memory``) and, as the memory it plans with, the number ``memory`` names: ``"requested"``,
``"used"`` (a perfect estimate), a mapping of log job numbers to bytes (an estimate source's), or ``"ignored"``
(none: the scheduler places by cores alone, and the simulator counts the overcommits).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from data.swf_ingest import job_class
from features.history import history_features
from features.swf import UNKNOWN, SwfJob, SwfLog, read_swf
from predictor.domain import Measurement, Source
from simulator.workload import Cluster, JobSpec, MachineSpec, PlatformSpec, Workload

_REQUEST = re.compile(r"^(\d+)(?::ppn=(\d+))?")
_CLUSTER = re.compile(r"(?:^|[:+#])cl_(\w+)")
FAILED = {0, 5}  # SWF status: failed, cancelled
KB = 1024
MemorySource = Literal["none", "ignored", "requested", "used"] | Mapping[int, int]
MEMORY_SOURCES: tuple[str, ...] = ("none", "ignored", "requested", "used")


@dataclass(frozen=True)
class ClusterLine:
    """One line of an Alea machine file."""

    name: str
    nodes: int
    cpus_per_node: int
    memory_kb: int | None = None  # per node

    @property
    def node_memory(self) -> int | None:
        """Bytes per node, None when the file does not say."""
        return None if self.memory_kb is None else self.memory_kb * KB

    @property
    def cpus(self) -> int:
        return self.nodes * self.cpus_per_node


def read_machines(path: str | Path) -> list[ClusterLine]:
    """Parse ``id name nodes cpus_per_node speed [memory]`` lines (tabs or spaces; memory in KB per node); speed is not
    used."""
    out = []
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        fields = line.split()
        if not fields or line.lstrip().startswith(("#", ";")):
            continue
        if len(fields) < 5:
            raise ValueError(f"{path}:{number}: expected 'id name nodes cpus speed [memory]', got {line!r}")
        out.append(ClusterLine(fields[1], int(fields[2]), int(fields[3]), int(fields[5]) if len(fields) > 5 else None))
    return out


def node_request(job: SwfJob) -> list[tuple[int, int]]:
    """The (nodes, CPUs per node) parts of the job's node request (``2:ppn=6+1:ppn=4``); empty without one."""
    parts = (_REQUEST.match(part) for part in (job.node_request or "").split("+"))
    return [(int(m.group(1)), int(m.group(2) or 1)) for m in parts if m]


def eligible(job: SwfJob, clusters: list[ClusterLine]) -> tuple[int, tuple[str, ...]]:
    """(processors the job needs, clusters it may run on): its ``cl_`` property, per-node fit, total size."""
    size = job.procs or 0
    if size <= 0:
        return 0, ()
    named = set(_CLUSTER.findall(job.node_request or ""))
    parts = node_request(job)
    nodes, ppn = sum(n for n, _ in parts), max((p for _, p in parts), default=0)
    fits = []
    for c in clusters:
        if named and c.name not in named:
            continue
        if size > c.cpus or (ppn and (ppn > c.cpus_per_node or nodes > c.nodes)):
            continue
        fits.append(c.name)
    return size, tuple(fits)


def job_memory(per_processor_kb: float, job: SwfJob) -> int | None:
    """A per-processor memory field (KB, -1 unknown) as bytes for the whole job (times its processors), or None."""
    procs = job.procs or 0
    return int(per_processor_kb * KB * procs) if per_processor_kb != UNKNOWN and procs > 0 else None


def planned_memory(job: SwfJob, source: MemorySource) -> int | None:
    """The memory ``source`` (see the module docstring) plans ``job`` with, bytes; None when it has none."""
    if isinstance(source, Mapping):
        return source.get(job.job)
    if source == "requested":
        return job_memory(job.requested_memory, job)
    if source == "used":
        return job_memory(job.used_memory, job)
    return None


def ended_at(log: SwfLog, job: SwfJob) -> datetime:
    """When a job of the log ended (submit + wait + run; + run alone when its wait is unknown), as an instant."""
    end = job.end if job.end is not None else job.submit + job.run
    return datetime.fromtimestamp(log.start_time + end, UTC)


def replay(
    path: str | Path,
    machines: str | Path | None = None,
    *,
    train_fraction: float = 0.3,
    stop_fraction: float = 1.0,
    limit: int | None = None,
    speedup: float = 1.0,
    nodes: Literal["pooled", "packed"] = "pooled",
    memory: MemorySource = "none",
    after: float | None = None,
) -> Workload:
    """The log at ``path`` after its first ``train_fraction`` and before its last ``1 - stop_fraction`` (at most ``limit``
    jobs), on the cluster of ``machines``: ``train_fraction=0.15, stop_fraction=0.3`` replays the jobs of the log's
    past that a choice made at its 30 % mark may look at. ``after`` (the log's own seconds) replaces
    ``train_fraction``: the jobs submitted after that instant, every one before it the history (what came after a
    decision made then).

    ``speedup`` divides the gaps between arrivals (the usual load scaling of trace replays); ``nodes`` says whether
    a cluster is one pool of CPUs or its nodes, ``memory`` whether and how memory counts (see the module docstring).
    """
    if nodes not in ("pooled", "packed"):
        raise ValueError(f"nodes must be 'pooled' or 'packed', got {nodes!r}")
    if not isinstance(memory, Mapping) and memory not in MEMORY_SOURCES:
        raise ValueError(
            f"memory must be one of {', '.join(MEMORY_SOURCES)} or a mapping of job numbers to bytes, got {memory!r}"
        )
    with_memory = isinstance(memory, Mapping) or memory != "none"
    path = Path(path)
    clusters = read_machines(machines or path.with_name(path.name + ".machines"))
    log = read_swf(path)
    jobs = sorted((j for j in log.jobs if j.run != UNKNOWN), key=lambda j: (j.submit, j.job))
    features = history_features(jobs, log.start_time, log.timezone)
    if not 0 <= train_fraction < stop_fraction <= 1:
        raise ValueError(f"need 0 <= train_fraction < stop_fraction <= 1, got {train_fraction} and {stop_fraction}")
    split, stop = int(len(jobs) * train_fraction), int(len(jobs) * stop_fraction)
    if after is not None:
        split = sum(j.submit <= after for j in jobs)
    name = path.stem
    history: list[Measurement] = []
    specs: list[JobSpec] = []
    ended: dict[str, float] = {}
    skipped = 0
    for index, (job, feats) in enumerate(zip(jobs, features)):
        size, fits = eligible(job, clusters)
        if not fits:
            skipped += 1
            continue
        true_times = dict.fromkeys(fits, job.run)
        if index < split:
            history += [
                Measurement(
                    run_id=f"{name}-{job.job}-{c}",
                    algorithm=job_class(name, job) or f"{name}-all",
                    platform=c,
                    features=feats,
                    wall_seconds=t,
                    exit_status=1 if job.status in FAILED else 0,
                    source=Source.IMPORT,
                    recorded_at=ended_at(log, job),
                )
                for c, t in true_times.items()
            ]
            continue
        if index >= stop or (limit is not None and len(specs) >= limit):
            break
        requested = job.requested_time if job.requested_time != UNKNOWN else -1.0
        params: dict[str, float | bool | list[tuple[int, int]]] = {
            "job": job.job,
            "user": job.user,
            "requested_time": requested,
        }
        if nodes == "packed" and node_request(job):
            params |= {"node_request": node_request(job), "exclusive": "#excl" in (job.node_request or "")}
        ended[f"{name}-{job.job}"] = job.end if job.end is not None else job.submit + job.run
        specs.append(
            JobSpec(
                id=f"{name}-{job.job}",
                submit=job.submit,
                algorithm=job_class(name, job) or f"{name}-all",
                true_times=true_times,
                params=params,
                features=feats,
                size=size,
                fails=job.status in FAILED,
                memory=planned_memory(job, memory) if with_memory else None,
                true_memory=job_memory(job.used_memory, job) if with_memory else None,
            )
        )
    t0 = specs[0].submit if specs else 0.0
    for spec in specs:
        spec.submit = (spec.submit - t0) / speedup
    ended = {key: (end - t0) / speedup for key, end in ended.items()}
    per_node = {c.name: c.cpus_per_node if nodes == "packed" else 0 for c in clusters}
    cluster = Cluster(
        {c.name: PlatformSpec(c.name) for c in clusters},
        [
            MachineSpec(
                c.name,
                c.name,
                c.cpus,
                node_slots=per_node[c.name],
                node_memory=_machine_memory(c, nodes) if with_memory else None,
            )
            for c in clusters
        ],
    )
    return Workload(
        name,
        specs,
        cluster,
        history=history,
        ended=ended,
        origin=datetime.fromtimestamp(log.start_time + t0, UTC) if speedup == 1 else None,
        notes=f"{len(specs)} jobs replayed after {split} history jobs, arrivals x{speedup:g}, clusters {nodes}; {skipped} fit no cluster",
    )


def _machine_memory(cluster: ClusterLine, nodes: str) -> int | None:
    """Bytes per node on a machine of nodes, the whole cluster's on a pool (None when the file does not say)."""
    each = cluster.node_memory
    return None if each is None else each * (1 if nodes == "packed" else cluster.nodes)
