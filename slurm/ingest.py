"""Finished Slurm jobs as measurements: the algorithm from the job's tag or the site rules, the outcome from its state.

One measurement per run of a job that ran and ended, validated like any row (:func:`predictor.records.validate_record`):

- ``run_id`` ``slurm-<cluster>-<job id>-<start>``: a requeued job's runs are distinct, a run imported twice (from
  ``sacct`` and from the completion log alike) is stored once;
- ``algorithm``, ``platform`` and ``params`` from :func:`slurm.rules.map_job` (the plugin's tag in the
  comment, else the rules on the job's name and partition); features are read from the input files it names, but
  only regular files under the data roots, each within a size and a time budget (:class:`Inputs`): a job's words
  are its user's, and could name a FIFO (a read that never ends), a gzip bomb or any file of the importing user. A
  job neither maps is a run of its job class (:func:`slurm.rules.class_of`) when the catalog has one,
  with its history features at its submit time (:func:`slurm.submit_history.submit_features`: the jobs read are
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

Every ended job but the excluded, mapped or not, is also its user's history (:mod:`slurm.history`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from data.ingest import IngestError, IngestReport, Reject, RejectsFile
from features.history import FEATURE_NAMES
from predictor.catalog import Catalog
from predictor.domain import Measurement, ServedEstimate, Source
from predictor.jobfeatures import known_feature_names
from predictor.paths import PathRefused, resolve_under_roots
from predictor.records import RowError, validate_record
from predictor.store import MeasurementStore
from predictor.store.job_history import JobHistory
from slurm.accounting import (
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
from slurm.history import history_records, submission_of
from slurm.rules import JobFacts, JobMapping, MappingError, Rules, class_of, map_job
from slurm.settings import SlurmSettings
from slurm.submit_history import submit_features_of_many

SlurmFormat = Literal["sacct", "jobcomp"]
# as the SWF import stores a cancelled job
CANCELLED_EXIT = 2
# what a job class's runs are described by
HISTORY_FEATURES = frozenset(FEATURE_NAMES)


@dataclass(frozen=True)
class Inputs:
    """Which input files a job's words may make accounting read: regular files (or a database's) under ``roots``, each
    of at most ``max_bytes`` and read within ``budget_s`` seconds. A run naming another is rejected, saying why."""

    roots: tuple[Path, ...]
    max_bytes: int
    budget_s: float

    @classmethod
    def of(cls, roots: list[Path], slurm: SlurmSettings) -> Inputs:
        """The site's: its data roots, Slurm's input budgets."""
        return cls(tuple(roots), slurm.input_max_bytes, slurm.input_budget_s)

    def locate(self, value: str) -> Path:
        """The real path of an input ``value`` names; ValueError saying why it is not read."""
        if not self.roots:
            raise PathRefused("accounting reads no input files here (no data roots given)")
        return resolve_under_roots(value, list(self.roots), self.max_bytes)


NO_INPUTS = Inputs((), 0, 0.0)  # no input file is read


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
    inputs: Inputs = NO_INPUTS,
) -> Converted:
    """Each parsed line as a measurement (with its served estimate), a skip or a reject; job steps are dropped.

    A run of a job class gets its history features at its submit time from ``history`` (where the jobs read were
    recorded first), every such run of a user read in one pass; without a history it is skipped.
    """
    out = Converted()
    planned: list[tuple[int, SlurmJob, JobMapping]] = []
    for line, job in parsed:
        if job is None:
            continue
        if isinstance(job, AccountingError):
            out.rejected.append(Reject(line, job.field, job.message))
            continue
        try:
            mapping = mapping_of(job, rules, catalog, cluster)
        except MappingError as exc:
            out.rejected.append(Reject(line, "Comment", str(exc)))
            continue
        if isinstance(mapping, str):
            out.skipped.append(Reject(line, "State", mapping))
        elif _is_class(catalog, mapping) and (history is None or submission_of(job, cluster) is None):
            out.skipped.append(
                Reject(line, "State", "a job class's run needs its user and submit time, and the history")
            )
        else:
            planned.append((line, job, mapping))
    features = _class_features(planned, catalog, cluster, history)
    for line, job, mapping in planned:
        try:
            measurement, served = measured(job, mapping, catalog, cluster, source, features.get(line), inputs)
        except RowError as exc:
            out.rejected.append(Reject(line, exc.field, exc.message))
            continue
        # a value no check above foresaw: this line alone is set aside
        except (ValueError, ArithmeticError) as exc:
            out.rejected.append(Reject(line, "(row)", f"{type(exc).__name__}: {str(exc)[:300]}"))
            continue
        out.measurements.append(measurement)
        if served is not None:
            out.served.append(served)
    return out


def mapping_of(job: SlurmJob, rules: Rules, catalog: Catalog, cluster: str) -> JobMapping | str:
    """What the job's run is a run of (its words or rules, else its job class), or why it is no measurement (a skip);
    MappingError when its words name what the catalog does not have."""
    if rules.exclude.excludes(job.user, job.account, job.partition):
        return "excluded by the rule file"
    if job.state not in ENDED:
        return f"{job.state}: the run did not end"
    if job.state not in FINISHED and job.elapsed <= 0:
        return f"{job.state} before it ran"
    facts = JobFacts(name=job.name, comment=job.comment, partition=job.partition, work_dir=job.work_dir)
    mapping = map_job(rules, facts, catalog) or class_of(rules, catalog, cluster, job.partition)
    return "no rule or predictor: words name its algorithm" if mapping is None else mapping


def measured(
    job: SlurmJob,
    mapping: JobMapping,
    catalog: Catalog,
    cluster: str,
    source: Source,
    features: dict[str, float] | None,
    inputs: Inputs,
) -> tuple[Measurement, ServedEstimate | None]:
    """The job's run as a measurement (``features`` a job class's; None: read from its inputs) and the estimate it was
    served; RowError for a value the store refuses."""
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
    measurement = validate_record(record, catalog, source=source, locate=inputs.locate, budget_s=inputs.budget_s)
    return measurement, _served(run_id, mapping.algorithm, mapping.platform, mapping.served)


def _is_class(catalog: Catalog, mapping: JobMapping) -> bool:
    """Whether the mapping is a job class (described by its user's history, not by inputs)."""
    return known_feature_names(catalog.algorithm(mapping.algorithm)) == HISTORY_FEATURES


def _class_features(
    planned: list[tuple[int, SlurmJob, JobMapping]], catalog: Catalog, cluster: str, history: JobHistory | None
) -> dict[int, dict[str, float]]:
    """The history features of every planned run of a job class, by line: each user's read in one pass."""
    if history is None:
        return {}
    runs = [(line, s) for line, job, m in planned if _is_class(catalog, m) and (s := submission_of(job, cluster))]
    found = submit_features_of_many(history, [s for _, s in runs])
    return {line: features for (line, _), features in zip(runs, found, strict=True)}


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
    """The estimate the tag says was served at submission; None when it says none. RowError (field ``Comment``) for
    a tag whose estimate or limit is no positive, finite number of seconds, or whose model is not one a service
    names (``estimate=inf``, ``limit=-5``): the run is refused rather than scored against it. Its memory words are
    kept where they are usable (a job tagged before memory was served has none)."""
    if "estimate" not in served:
        return None
    try:
        return ServedEstimate(
            run_id=run_id,
            algorithm=algorithm,
            platform=platform,
            seconds=_seconds(served, "estimate"),
            limit=_seconds(served, "limit") if "limit" in served else None,
            model_name=served.get("model"),
            model_version=served.get("version"),
            origin="service",
            **_served_memory(served),
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        raise RowError("Comment", f"the tag's {error['loc'][0]}: {error['msg']}") from None


def _seconds(served: dict[str, str], key: str) -> float:
    """The tag's ``key`` as a positive, finite number of seconds; RowError otherwise."""
    text = served[key]
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise RowError("Comment", f"the tag's {key}={text[:40]} is no positive, finite number of seconds")
    return seconds


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
    inputs: Inputs = NO_INPUTS,
) -> IngestReport:
    """Store every finished job of a ``sacct -P`` output file or a ``jobcomp/filetxt`` log; skip and reject as above.

    The file is streamed twice, :data:`CHUNK_LINES` lines at a time (memory stays flat whatever its size): first every
    job is recorded as its user's history, then the runs are stored, each chunk's job-class runs with the history
    features of their submit times (the whole file's jobs known, as in one read).
    """
    path = Path(path)
    history = JobHistory(store.engine)
    rows = 0
    for chunk in _chunks(path, file_format):
        rows += sum(job is not None for _, job, _ in chunk)
        history.record(history_records([(n, job) for n, job, _ in chunk], cluster, rules))
    if not rows:
        raise IngestError(f"{path}: no jobs (give `sacct -P -X` output with its header, or a jobcomp/filetxt log)")
    stored = duplicates = 0
    rejected: list[Reject] = []
    skipped: list[Reject] = []
    with RejectsFile(path, ["slurm_line"], rejects_dir) as rejects:
        for chunk in _chunks(path, file_format):
            out = convert(
                [(n, job) for n, job, _ in chunk],
                rules,
                catalog,
                cluster=cluster,
                source=source,
                history=history,
                inputs=inputs,
            )
            texts = {n: text for n, _, text in chunk}
            for reject in out.rejected:
                rejects.add([texts[reject.line]], reject)
            result = store.add(out.measurements, out.served)
            stored, duplicates = stored + len(result.stored), duplicates + len(result.duplicates)
            rejected += out.rejected
            skipped += out.skipped
    return IngestReport(
        path=path,
        rows=rows,
        stored=stored,
        duplicates=duplicates,
        rejected=rejected,
        rejects_path=rejects.written,
        skipped=tuple(skipped),
    )


# lines of an accounting file read, recorded and stored at a time
CHUNK_LINES = 5000


def _chunks(path: Path, file_format: SlurmFormat) -> Iterator[list[tuple[int, SlurmJob | AccountingError | None, str]]]:
    """The file's parsed lines with their text, :data:`CHUNK_LINES` at a time; IngestError when it cannot be read or
    its header lacks columns. Lines end at line feeds only (a name's other breaks stay in it)."""
    try:
        with path.open(encoding="utf-8", errors="replace", newline="\n") as fh:
            texts: dict[int, str] = {}

            def lines() -> Iterator[str]:
                for number, line in enumerate(fh, start=1):
                    texts[number] = line = line.rstrip("\n")
                    yield line

            if file_format == "sacct":
                parsed: Iterator[Parsed] = read_sacct(lines())
            else:
                parsed = (item for number, line in enumerate(lines(), start=1) for item in read_jobcomp([line], number))
            chunk: list[tuple[int, SlurmJob | AccountingError | None, str]] = []
            for number, job in parsed:
                chunk.append((number, job, texts[number]))
                if len(chunk) >= CHUNK_LINES:
                    yield chunk
                    _forget(texts, chunk[-1][0])
                    chunk = []
            if chunk:
                yield chunk
    except OSError as exc:
        raise IngestError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except AccountingError as exc:
        raise IngestError(f"{path}: {exc.message}") from None


def _forget(texts: dict[int, str], through: int) -> None:
    """Drop the texts of lines up to ``through`` (given already): those read ahead stay."""
    for number in [n for n in texts if n <= through]:
        del texts[number]
