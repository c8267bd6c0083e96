"""Finished Slurm jobs as measurements: the algorithm from the job's tag or the site rules, the outcome from its state.

One measurement per run of a job that ran and ended, validated like any row (:func:`predictor.records.validate_record`):

- ``run_id`` ``slurm-<cluster>-<job id>-<start>``: a requeued job's runs are distinct, a run imported twice (from
  ``sacct`` and from the completion log alike) is stored once;
- ``algorithm``, ``platform`` and ``params`` from :func:`scheduler.slurm.rules.map_job` (the plugin's tag in the
  comment, else the rules on the job's name and partition); features are read from the input files it names. A
  job neither maps is a run of its job class (:func:`scheduler.slurm.rules.class_of`) when the catalog has one,
  with its history features at its submit time (:func:`scheduler.slurm.submit_history.submit_features`: the jobs read are
  recorded as history first);
- ``wall_seconds`` the elapsed time; ``machine`` the node of a one-node job;
- ``max_rss_kb`` its steps' largest ``MaxRSS`` (sacct with slurmdbd; the completion log has none); for a job killed
  ``OUT_OF_MEMORY`` at least the memory it asked for (the kernel killed it on reaching that limit);
- the outcome by state: ``COMPLETED`` a finished run; ``TIMEOUT``, ``OUT_OF_MEMORY``, ``PREEMPTED`` and
  ``DEADLINE`` **censored** (the system stopped it: its time and its memory are lower bounds); ``FAILED``,
  ``NODE_FAIL``, ``BOOT_FAIL`` failed runs, and ``CANCELLED`` one with exit status 2, as the SWF import keeps them:
  censored only when they had reached their time limit (the limit stopped them, whatever the state says);
- the estimate its tag says it was served, stored beside it (what scores the model live).

Skipped (valid, but not a measurement of ours): jobs the rule file excludes, jobs no rule or word maps to an
algorithm and without a job class, jobs that never ran (ended with no elapsed time without completing) and runs that did not end
(``PENDING``, ``REQUEUED``, ...). Rejected: lines that cannot be read and jobs whose mapping or values the catalog
refuses.

Every ended job but the excluded, mapped or not, is also its user's history (:mod:`scheduler.slurm.history`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Any, Literal

from data.ingest import IngestError, IngestReport, Reject, write_rejects
from features.history import FEATURE_NAMES
from predictor.catalog import Catalog
from predictor.domain import Measurement, ServedEstimate, Source
from predictor.jobfeatures import known_feature_names
from predictor.records import RowError, validate_record
from predictor.store import MeasurementStore
from predictor.store.job_history import JobHistory
from scheduler.slurm.accounting import (
    ENDED,
    FAILED,
    FINISHED,
    STOPPED,
    AccountingError,
    Parsed,
    SlurmJob,
    read_jobcomp,
    read_sacct,
)
from scheduler.slurm.history import history_records, submission_of
from scheduler.slurm.rules import JobFacts, MappingError, Rules, class_of, map_job
from scheduler.slurm.submit_history import submit_features

SlurmFormat = Literal["sacct", "jobcomp"]
CANCELLED_EXIT = 2  # as the SWF import stores a cancelled job
HISTORY_FEATURES = frozenset(FEATURE_NAMES)  # what a job class's runs are described by


@dataclass
class Converted:
    """Jobs turned into what the store takes, and the lines that were skipped or rejected."""

    measurements: list[Measurement] = field(default_factory=list)
    served: list[ServedEstimate] = field(default_factory=list)
    skipped: list[Reject] = field(default_factory=list)
    rejected: list[Reject] = field(default_factory=list)


def convert(
    parsed: Iterable[Parsed],
    rules: Rules,
    catalog: Catalog,
    *,
    cluster: str = "slurm",
    source: Source = Source.PRODUCTION,
    history: JobHistory | None = None,
) -> Converted:
    """Each parsed line as a measurement (with its served estimate), a skip or a reject; job steps are dropped.

    A run of a job class gets its history features at its submit time from ``history`` (where the jobs read were
    recorded first); without one it is skipped.
    """
    out = Converted()
    for line, job in parsed:
        if job is None:
            continue
        if isinstance(job, AccountingError):
            out.rejected.append(Reject(line, job.field, job.message))
            continue
        try:
            result = measurement_of(job, rules, catalog, cluster=cluster, source=source, history=history)
        except (MappingError, RowError) as exc:
            out.rejected.append(Reject(line, getattr(exc, "field", "Comment"), getattr(exc, "message", str(exc))))
            continue
        if isinstance(result, str):
            out.skipped.append(Reject(line, "State", result))
            continue
        measurement, served = result
        out.measurements.append(measurement)
        if served is not None:
            out.served.append(served)
    return out


def measurement_of(
    job: SlurmJob,
    rules: Rules,
    catalog: Catalog,
    *,
    cluster: str = "slurm",
    source: Source = Source.PRODUCTION,
    history: JobHistory | None = None,
) -> tuple[Measurement, ServedEstimate | None] | str:
    """The job's run as a measurement and the estimate it was served, or why it is no measurement (a skip)."""
    if rules.exclude.excludes(job.user, job.account, job.partition):
        return "excluded by the rule file"
    if job.state not in ENDED:
        return f"{job.state}: the run did not end"
    if job.state not in FINISHED and job.elapsed <= 0:
        return f"{job.state} before it ran"
    facts = JobFacts(name=job.name, comment=job.comment, partition=job.partition, work_dir=job.work_dir)
    mapping = map_job(rules, facts, catalog) or class_of(rules, catalog, cluster, job.partition)
    if mapping is None:
        return "no rule or predictor: words name its algorithm"
    features = None
    if known_feature_names(catalog.algorithm(mapping.algorithm)) == HISTORY_FEATURES:  # a job class: its user's history
        if history is None or (submission := submission_of(job, cluster)) is None:
            return "a job class's run needs its user and submit time, and the history"
        features = submit_features(history, submission, submission.submit.tzinfo or UTC)
    run_id = run_id_of(job, cluster)
    record = {
        "run_id": run_id,
        "algorithm": mapping.algorithm,
        "platform": mapping.platform,
        "machine": job.node_list if job.node_list and "," not in job.node_list and "[" not in job.node_list else None,
        "params": mapping.params,
        "wall_seconds": job.elapsed,
        "max_rss_kb": max_rss_kb(job),
        "exit_status": _exit_status(job),
        "censored": _censored(job),
        "recorded_at": job.end,
        "context": _context(job, cluster),
        "features": features,
    }
    measurement = validate_record(record, catalog, source=source)
    return measurement, _served(run_id, mapping.algorithm, mapping.platform, mapping.served)


def run_id_of(job: SlurmJob, cluster: str) -> str:
    """``slurm-<cluster>-<job id>-<start, UTC>``: one id per run, the same from sacct and from the completion log."""
    start = f"-{job.start:%Y%m%dT%H%M%S}" if job.start else ""
    return f"slurm-{cluster}-{job.job_id}{start}"


def max_rss_kb(job: SlurmJob) -> int | None:
    """The run's peak memory in KiB as far as known: its MaxRSS, and for an OUT_OF_MEMORY run at least its request."""
    if job.state != "OUT_OF_MEMORY" or job.req_mem_mb is None:
        return job.max_rss_kb
    return max(job.req_mem_mb * 1024, job.max_rss_kb or 0)


def _exit_status(job: SlurmJob) -> int:
    if job.state in FINISHED:
        return 0
    if job.state == "CANCELLED":
        return CANCELLED_EXIT
    return job.exit_code or (128 + job.signal if job.signal else 1)


def _censored(job: SlurmJob) -> bool:
    """Stopped by the system, or ended unfinished at its time limit (the limit stopped it)."""
    if job.state in STOPPED:
        return True
    return job.state in FAILED and job.time_limit is not None and job.time_limit > 0 and job.elapsed >= job.time_limit


def _context(job: SlurmJob, cluster: str) -> dict[str, object]:
    known = {
        "cluster": cluster,
        "slurm_job": job.job_id,
        "state": job.state,
        "partition": job.partition,
        "time_limit_seconds": job.time_limit,
        "req_cpus": job.req_cpus,
        "req_mem": job.req_mem,
        "user": job.user,
        "submitted_at": job.submit.isoformat() if job.submit else None,
    }
    return {key: value for key, value in known.items() if value is not None}


def _served(run_id: str, algorithm: str, platform: str, served: dict[str, str]) -> ServedEstimate | None:
    """The estimate the tag says was served at submission; None when it says none (or nothing usable). Its memory words
    are kept where they are usable (a job tagged before memory was served has none)."""
    try:
        seconds = float(served["estimate"])
        limit = float(served["limit"]) if "limit" in served else None
    except (KeyError, ValueError):
        return None
    if not seconds > 0:
        return None
    return ServedEstimate(
        run_id=run_id,
        algorithm=algorithm,
        platform=platform,
        seconds=seconds,
        limit=limit,
        model_name=served.get("model"),
        model_version=served.get("version"),
        origin="service",
        **_served_memory(served),
    )


def _served_memory(served: dict[str, str]) -> dict[str, Any]:
    """The memory the tag says was served (bytes), its limit and model; nothing when its words are not usable."""
    try:
        memory = float(served["memory"])
        limit = float(served["memory_limit"]) if "memory_limit" in served else None
    except (KeyError, ValueError):
        return {}
    if not (math.isfinite(memory) and memory > 0) or (limit is not None and not (math.isfinite(limit) and limit >= 0)):
        return {}
    name, version = served.get("memory_model"), served.get("memory_version")
    if (name is not None and len(name) > 200) or (version is not None and len(version) > 64):
        return {}
    return {"memory": memory, "memory_limit": limit, "memory_model_name": name, "memory_model_version": version}


def ingest_slurm(
    path: str | Path,
    store: MeasurementStore,
    catalog: Catalog,
    rules: Rules,
    *,
    file_format: SlurmFormat,
    cluster: str = "slurm",
    source: Source = Source.IMPORT,
    rejects_dir: Path | None = None,
) -> IngestReport:
    """Store every finished job of a ``sacct -P`` output file or a ``jobcomp/filetxt`` log; skip and reject as above."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise IngestError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        parsed = list(read_sacct(lines) if file_format == "sacct" else read_jobcomp(lines))
    except AccountingError as exc:
        raise IngestError(f"{path}: {exc.message}") from None
    rows = sum(job is not None for _, job in parsed)
    if not rows:
        raise IngestError(f"{path}: no jobs (give `sacct -P -X` output with its header, or a jobcomp/filetxt log)")
    history = JobHistory(store.engine)
    history.record(history_records(parsed, cluster, rules))
    out = convert(parsed, rules, catalog, cluster=cluster, source=source, history=history)
    rejects_path = write_rejects(path, ["slurm_line"], [([lines[r.line - 1]], r) for r in out.rejected], rejects_dir)
    result = store.add(out.measurements, out.served)
    return IngestReport(
        path=path,
        rows=rows,
        stored=len(result.stored),
        duplicates=len(result.duplicates),
        rejected=out.rejected,
        rejects_path=rejects_path,
        skipped=tuple(out.skipped),
    )
