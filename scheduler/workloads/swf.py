"""Replay of a real cluster log in the Standard Workload Format (the logs in ``../shared/data/traces``).

Real arrivals, real run times as the truth, and the time each user requested as the
estimate users give. The cluster comes from the Alea machine file beside the log
(``<log>.machines``: id, name, nodes, CPUs per node, speed, memory): each line is one
platform, simulated as one machine whose slots are all its CPUs; a job asks for its
requested processors anywhere in it. That ignores node boundaries (a 12-CPU job may
span nodes) and exclusive-node requests, and keeps the log's heterogeneity: which
cluster a MetaCentrum job may use (``cl_<name>`` in its node request, and whether its
processors per node fit the cluster's nodes) and each cluster's speed.

The first ``train_fraction`` of the log (by submit time) is history: its jobs are not
replayed, and a model learns from them (Tsafrir-style job-history features from
:mod:`features.history`, which only look at what was known at each submit time).
Jobs the log marks failed or cancelled end with an error at their logged run time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from features.history import history_features
from features.swf import UNKNOWN, SwfJob, read_swf
from predictor.domain import Measurement, Source
from scheduler.workload import Cluster, JobSpec, MachineSpec, PlatformSpec, Workload

_REQUEST = re.compile(r"^(\d+)(?::ppn=(\d+))?")
_CLUSTER = re.compile(r"(?:^|[:+#])cl_(\w+)")
FAILED = {0, 5}  # SWF status: failed, cancelled


@dataclass(frozen=True)
class ClusterLine:
    """One line of an Alea machine file."""

    name: str
    nodes: int
    cpus_per_node: int

    @property
    def cpus(self) -> int:
        return self.nodes * self.cpus_per_node


def read_machines(path: str | Path) -> list[ClusterLine]:
    """Parse ``id name nodes cpus_per_node speed memory`` lines (tabs or spaces); speed and memory are not used."""
    out = []
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        fields = line.split()
        if not fields or line.lstrip().startswith(("#", ";")):
            continue
        if len(fields) < 5:
            raise ValueError(f"{path}:{number}: expected 'id name nodes cpus speed [memory]', got {line!r}")
        out.append(ClusterLine(fields[1], int(fields[2]), int(fields[3])))
    return out


def eligible(job: SwfJob, clusters: list[ClusterLine]) -> tuple[int, tuple[str, ...]]:
    """(processors the job needs, clusters it may run on): its ``cl_`` property, per-node fit, total size."""
    size = job.procs or 0
    if size <= 0:
        return 0, ()
    named = set(_CLUSTER.findall(job.node_request or ""))
    nodes = ppn = 0
    for part in (job.node_request or "").split("+"):
        match = _REQUEST.match(part)
        if match:
            nodes += int(match.group(1))
            ppn = max(ppn, int(match.group(2) or 1))
    fits = []
    for c in clusters:
        if named and c.name not in named:
            continue
        if size > c.cpus or (ppn and (ppn > c.cpus_per_node or nodes > c.nodes)):
            continue
        fits.append(c.name)
    return size, tuple(fits)


def replay(
    path: str | Path,
    machines: str | Path | None = None,
    *,
    train_fraction: float = 0.3,
    limit: int | None = None,
    speedup: float = 1.0,
) -> Workload:
    """The log at ``path`` after its first ``train_fraction`` (at most ``limit`` jobs), on the cluster of ``machines``.

    ``speedup`` divides the gaps between arrivals (the usual load scaling of trace replays).
    """
    path = Path(path)
    clusters = read_machines(machines or path.with_name(path.name + ".machines"))
    log = read_swf(path)
    jobs = sorted((j for j in log.jobs if j.run != UNKNOWN), key=lambda j: (j.submit, j.job))
    features = history_features(jobs, log.start_time, log.timezone)
    split = int(len(jobs) * train_fraction)
    name = path.stem
    history: list[Measurement] = []
    specs: list[JobSpec] = []
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
                    run_id=f"{name}-{job.job}-{c}", algorithm=name, platform=c, features=feats, wall_seconds=t,
                    exit_status=1 if job.status in FAILED else 0, source=Source.IMPORT,
                )
                for c, t in true_times.items()
            ]  # fmt: skip
            continue
        if limit is not None and len(specs) >= limit:
            break
        requested = job.requested_time if job.requested_time != UNKNOWN else -1.0
        specs.append(
            JobSpec(
                id=f"{name}-{job.job}", submit=job.submit, algorithm=name, true_times=true_times,
                params={"job": job.job, "user": job.user, "requested_time": requested}, features=feats, size=size,
                fails=job.status in FAILED,
            )
        )  # fmt: skip
    t0 = specs[0].submit if specs else 0.0
    for spec in specs:
        spec.submit = (spec.submit - t0) / speedup
    cluster = Cluster(
        {c.name: PlatformSpec(c.name) for c in clusters}, [MachineSpec(c.name, c.name, c.cpus) for c in clusters]
    )
    return Workload(
        name, specs, cluster, history=history,
        notes=f"{len(specs)} jobs replayed after {split} history jobs, arrivals x{speedup:g}; {skipped} fit no cluster",
    )  # fmt: skip
