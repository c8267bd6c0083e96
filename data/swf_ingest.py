"""Import a Standard Workload Format log (a real cluster's job log) as measurements with job-history features.

One measurement per job, validated like a CSV row (:func:`predictor.records.validate_record`):

- ``run_id`` ``swf-<log>-<job number>``, where ``<log>`` is the file's stem: importing a log again stores nothing new;
- ``algorithm``, the job class: ``<log>-<queue name>`` when the log names queues (extended SWF), else
  ``<log>-q<queue number>`` when it numbers them, else the ``algorithm`` option, else ``<log>-all``;
- ``platform``, the cluster the job ran on when the log tells it: a node belongs to cluster X when most jobs that
  ran on it with a ``cl_X`` property in their node request asked for X (``^cl_X`` excludes X and is no vote),
  and a job whose nodes all belong to X ran on X. Otherwise (no node data, nodes of several clusters, a node no
  such request reached) the ``platform`` option, else ``<log>``;
- ``machine`` ``node<id>`` for a job on one node, else the ``machine`` option;
- ``wall_seconds`` the run time; ``exit_status`` 0 completed, 1 failed, 2 cancelled (SWF status 1, 0, 5);
- ``censored`` when the run time reached the requested time (known, > 0): the scheduler's limit stopped the job,
  so its run time is a lower bound on the time it needed, whatever status the log gives it (logs record such
  kills as completed, failed or cancelled; a grace period lets the run exceed the request a little). A job that
  failed or was cancelled before its limit is not censored: it stopped for its own reasons, not for lack of time;
- ``recorded_at`` the end time, when the run was over and could be learned from: the header's ``UnixStartTime`` plus
  the job's end offset (submit + wait + run; submit + run when the wait is unknown; Unix times when the header has
  none). Forward validation orders a pair's runs by it (:mod:`training.folds`);
- ``features`` from :func:`features.history.history_features`; ``context`` the job's other known fields.

Every valid job, measurement or not, is also recorded in the job history (:func:`history_records`), the live
store of submissions its users' later jobs are estimated from: cluster the log's stem, user and group their
numbers, partition the queue (as in the job class), requested time and processors, submit, start and end times.

Valid jobs that are not measurements (run time unknown, or a status other than completed, failed or cancelled)
are skipped, and still count as their users' submissions. Lines the parser refuses and jobs whose class or
platform the catalog does not know are rejected: reported by line and written, as they were in the log, to
``<stem>.rejects.csv`` (column ``swf_line``). ``rows == stored + duplicates + skipped + rejected``.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from data.ingest import IngestError, IngestReport, Reject, check_options, write_rejects
from features import FeatureError
from features.history import history_features
from features.swf import UNKNOWN, SwfJob, SwfLog, read_swf
from predictor.catalog import Catalog
from predictor.domain import Source
from predictor.records import RowError, validate_record
from predictor.store import MeasurementStore
from predictor.store.job_history import JobHistory, JobRecord

# SWF status -> exit status: completed, failed, cancelled
EXIT_STATUS = {1: 0, 0: 1, 5: 2}
STATUS_NAMES = {0: "failed", 1: "completed", 2: "partial", 3: "partial", 4: "partial", 5: "cancelled"}  # SWF 2.2
# a positive cluster property in a node request
_CLUSTER = re.compile(r"(?:^|[:+#])cl_(\w+)")
_CONTEXT = {
    "user": "user",
    "group": "group",
    "executable": "executable",
    "partition": "partition",
    "requested_procs": "requested_procs",
    "requested_time": "requested_seconds",
    "requested_memory": "requested_memory",
    "allocated_procs": "allocated_procs",
    "avg_cpu": "avg_cpu_seconds",
    "used_memory": "used_memory",
    "wait": "wait_seconds",
    "preceding_job": "preceding_job",
    "think_time": "think_seconds",
}


def ingest_swf(
    path: str | Path,
    store: MeasurementStore,
    catalog: Catalog,
    *,
    algorithm: str | None = None,
    platform: str | None = None,
    machine: str | None = None,
    source: Source = Source.IMPORT,
    rejects_dir: Path | None = None,
) -> IngestReport:
    """Store every job of an SWF log with its history features; skip jobs that are no measurement, reject bad lines."""
    path = Path(path)
    check_options(catalog, algorithm, platform)
    log = _read(path)
    clusters = node_clusters(log.jobs)
    history = history_features(log.jobs, log.start_time, log.timezone)
    good, skipped = [], []
    rejected = [Reject(p.line, p.field, p.message) for p in log.problems]
    for job, job_features in zip(log.jobs, history, strict=True):
        if job.run == UNKNOWN:
            skipped.append(Reject(job.line, "run", "run time unknown (-1): not a measurement"))
        elif job.status not in EXIT_STATUS:
            skipped.append(Reject(job.line, "status", f"status {job.status}: not completed, failed or cancelled"))
        else:
            record = {
                "run_id": f"swf-{log.name}-{job.job}",
                "algorithm": job_class(log.name, job) or algorithm or f"{log.name}-all",
                "platform": job_platform(job, clusters) or platform or log.name,
                "machine": f"node{job.nodes[0]}" if len(job.nodes) == 1 else machine,
                **_run(log, job),
                "features": job_features,
            }
            try:
                good.append(validate_record(record, catalog, source=source))
            except RowError as exc:
                rejected.append(Reject(job.line, exc.field, exc.message))
    rejected.sort(key=lambda r: r.line)
    texts = _lines(path, {r.line for r in rejected})
    rejects_path = write_rejects(path, ["swf_line"], [([texts[r.line]], r) for r in rejected], rejects_dir)
    result = store.add(good)
    JobHistory(store.engine).record(history_records(log))
    return IngestReport(
        path=path,
        rows=len(log.jobs) + len(log.problems),
        stored=len(result.stored),
        duplicates=len(result.duplicates),
        rejected=rejected,
        rejects_path=rejects_path,
        skipped=tuple(skipped),
    )


def job_class(log: str, job: SwfJob) -> str | None:
    """``<log>-<queue name>`` or ``<log>-q<queue number>``; None when the log does not say."""
    queue = queue_label(job)
    return None if queue is None else f"{log}-{queue}"


def queue_label(job: SwfJob) -> str | None:
    """The job's queue: its name, else ``q<number>``, else None (the log does not say)."""
    if job.queue_name:
        return job.queue_name
    return None if job.queue == UNKNOWN else f"q{job.queue}"


def history_records(log: SwfLog) -> list[JobRecord]:
    """Every job of the log as the job history keeps it, keyed like its measurement's run_id, in log order.

    A job whose end the log does not know gets no start either: the replay counts it as a submission only, never
    as running (:func:`features.history.history_features`), and so does the history read back.
    """
    return [
        JobRecord(
            key=f"swf-{log.name}-{job.job}",
            cluster=log.name,
            user=str(job.user),
            seq=job.line,
            group=None if job.group == UNKNOWN else str(job.group),
            partition=queue_label(job),
            time_limit_s=None if job.requested_time == UNKNOWN else job.requested_time,
            min_cpus=job.procs,
            submit_at=_at(log, job.submit),
            start_at=None if job.start is None or job.end is None else _at(log, job.start),
            end_at=None if job.end is None else _at(log, job.end),
            state=STATUS_NAMES.get(job.status),
        )
        for job in log.jobs
    ]


def _at(log: SwfLog, offset: float) -> datetime:
    """The instant of a time in the log (seconds since its ``UnixStartTime``)."""
    return datetime.fromtimestamp(log.start_time + offset, UTC)


def node_clusters(jobs: list[SwfJob]) -> dict[int, str]:
    """The cluster of each node, by majority of the ``cl_<name>`` properties of the jobs that ran on it."""
    votes: defaultdict[int, Counter[str]] = defaultdict(Counter)
    for job in jobs:
        named = set(_CLUSTER.findall(job.node_request or ""))
        if len(named) == 1:
            (cluster,) = named
            for node in job.nodes:
                votes[node][cluster] += 1
    return {node: counts.most_common(1)[0][0] for node, counts in votes.items()}


def job_platform(job: SwfJob, clusters: dict[int, str]) -> str | None:
    """The one cluster all the job's nodes belong to, or None."""
    found = {clusters.get(node) for node in job.nodes}
    return found.pop() if len(found) == 1 else None


def _read(path: Path) -> SwfLog:
    """The parsed log, or IngestError when it cannot be read or has no job lines."""
    try:
        log = read_swf(path)
    except OSError as exc:
        raise IngestError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except FeatureError as exc:
        raise IngestError(str(exc)) from exc
    if not log.jobs and not log.problems:
        raise IngestError(f"{path}: no job lines (an SWF log has one job per line after its ';' header)")
    return log


def _run(log: SwfLog, job: SwfJob) -> dict[str, Any]:
    """What the log says of the run itself: wall time, exit status, submit time and the other known fields."""
    return {
        "wall_seconds": job.run,
        "exit_status": EXIT_STATUS[job.status],
        "censored": killed_by_limit(job),
        "recorded_at": _at(log, job.end if job.end is not None else job.submit + job.run),
        "context": _context(job),
    }


def killed_by_limit(job: SwfJob) -> bool:
    """Whether the job ran until its requested time: the limit stopped it, so its run time is a lower bound (censored)."""
    return job.requested_time != UNKNOWN and job.requested_time > 0 and job.run >= job.requested_time


def _context(job: SwfJob) -> dict[str, Any]:
    """The job's known SWF fields besides the run time (-1s left out), for the measurement's context."""
    context: dict[str, Any] = {"job": job.job, "swf_status": job.status}
    context.update({key: getattr(job, name) for name, key in _CONTEXT.items() if getattr(job, name) != UNKNOWN})
    if job.queue_name or job.queue != UNKNOWN:
        context["queue"] = job.queue_name or job.queue
    if job.nodes:
        context["nodes"] = list(job.nodes)
    if job.node_request:
        context["node_request"] = job.node_request
    return context


def _lines(path: Path, numbers: set[int]) -> dict[int, str]:
    """The text of the given line numbers of a file."""
    if not numbers:
        return {}
    with path.open(encoding="utf-8", errors="replace") as fh:
        return {n: line.rstrip("\r\n") for n, line in enumerate(fh, start=1) if n in numbers}
