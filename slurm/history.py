"""Slurm jobs as their users' history (``job_history``), whatever they ran: what a job class is estimated from.

Every job accounting reports (``sacct`` or the completion log) or the queue shows is one record, keyed
``slurm-<cluster>-<job id>`` (the same from every source: a later sight of a job fills in its start, end and state;
a requeued job's last run replaces its earlier one), mapped by a rule or not:

- a run that ended (completed, failed, stopped) keeps its start and end and its state, so failed runs stay apart
  from completed ones; a ``TIMEOUT`` run is censored at its limit (its end is its start plus the limit when it ran
  over: the time it was given, not the scheduler's lag in killing it);
- a job cancelled before it started (no start, or no elapsed time) is a submission only: no start, its end kept
  (so that one the queue saw start, for less than a second, ends there and is not left running);
- a job waiting or running (``squeue``, which ``slurm follow`` reads at each pass, or a ``sacct`` line of one) is
  recorded as it stands: submitted, and started once running, until its end is read; so a new job's
  ``user.submitted_jobs`` and ``user.running_jobs`` count the user's jobs in the queue as the replay's do;
- jobs without a user or a submit time, and jobs the rule file excludes, are not recorded; nor is a job with a
  value the table cannot hold (a warning says which), but for its name, which is cut.

``seq`` orders jobs submitted in the same second: Slurm numbers jobs in submit order.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from datetime import datetime, timedelta

from predictor.store.job_history import JobRecord
from slurm.accounting import ENDED, FINISHED, QUEUED, Parsed, SlurmJob
from slurm.rules import Rules
from slurm.submit_history import Submission

log = logging.getLogger(__name__)
_NUMBER = re.compile(r"\d+")
# the longest job name the table keeps (a longer one is cut)
NAME_LENGTH = 200


def history_records(parsed: Iterable[Parsed], cluster: str, rules: Rules) -> list[JobRecord]:
    """The history records of the jobs read (lines that are steps or problems, and jobs that are none, left out)."""
    return [
        r for _, job in parsed if isinstance(job, SlurmJob) and (r := history_record(job, cluster, rules)) is not None
    ]


def submission_of(job: SlurmJob, cluster: str) -> Submission | None:
    """The job as it was submitted, in the local time Slurm reads hours and weekdays in; None without a user or a
    submit time."""
    if job.user is None or job.submit is None:
        return None
    return Submission(cluster, job.user, job.submit.astimezone(), job.time_limit, job.req_cpus, seq=_seq(job))


def _seq(job: SlurmJob) -> int:
    """The job's place among those submitted in the same second: its number (Slurm numbers jobs in submit order)."""
    found = _NUMBER.match(job.job_id)
    return int(found.group()) if found else 0


def history_record(job: SlurmJob, cluster: str, rules: Rules) -> JobRecord | None:
    """The job as its user's history, or None when it is none (see the module docstring)."""
    if job.state not in ENDED | QUEUED or job.user is None or job.submit is None:
        return None
    if rules.exclude.excludes(job.user, job.account, job.partition):
        return None
    # as it stands: submitted, perhaps started, not ended
    if job.state in QUEUED:
        start, end = job.start, None
    elif job.start is not None and job.end is not None and (job.state in FINISHED or job.elapsed > 0):
        start, end = job.start, job.end
        if job.state == "TIMEOUT" and job.time_limit:
            end = min(end, start + timedelta(seconds=job.time_limit))
    # ended before it started: a submission only (its end kept: a start the queue saw is not left running)
    else:
        start, end = None, job.end
    try:
        return _record(job, cluster, start=start, end=end)
    # a value its column cannot hold: the job is left out of the history, and said so
    except ValueError as exc:
        log.warning("job %s is not recorded as history: %s", job.job_id, exc)
        return None


def _record(job: SlurmJob, cluster: str, *, start: datetime | None, end: datetime | None) -> JobRecord:
    """The record of a job with a user and a submit time (ValueError for a value its column cannot hold)."""
    assert job.user is not None and job.submit is not None
    return JobRecord(
        key=f"slurm-{cluster}-{job.job_id}",
        cluster=cluster,
        user=job.user,
        group=job.group,
        account=job.account,
        partition=job.partition,
        qos=job.qos,
        name=job.name[:NAME_LENGTH],
        time_limit_s=job.time_limit,
        min_cpus=job.req_cpus,
        min_nodes=job.req_nodes,
        pn_min_memory_mb=job.req_mem_mb,
        array_inx=job.array_task,
        work_dir=job.work_dir,
        submit_at=job.submit,
        start_at=start,
        end_at=end,
        state=job.state,
        seq=_seq(job),
    )
