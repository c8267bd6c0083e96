"""``predictor slurm follow``: completions of the ``jobcomp/filetxt`` log into the store as they are written.

Each pass reads the complete lines written since the last one, turns them into measurements
(:mod:`slurm.ingest`) and stores them, with every ended job as its user's history, then saves how far it
read to a cursor file (the log's inode and byte offset). Killed at any point and started again it reads on from the
cursor; lines read again after a kill between the store's commit and the cursor's write are stored once, since a
run's id (and a job's history key) is fixed. A log that was rotated (another inode, or shorter than the cursor) is
read from its start.

With ``queue`` (``squeue``), each pass first records the jobs waiting and running as their users' history
(:mod:`slurm.history`; those whose state changed since the last pass), so that a new job's history
features count them as the replay's do; their completions, read after, fill in their ends.

The completion log does not hold the job's comment in Slurm 22.05, and so not the plugin's tag: each pass asks
slurmctld (``squeue --json``) about the jobs it read, which it holds for ``MinJobAge`` seconds after they end, and takes
their comments from it. It also reads and confirms the records by it: the log writes a job's name (and working
directory) raw, so one holding a line break spans lines, and its later lines could pass for another job's record; a
job slurmctld holds is read over as many lines as its name and folder have breaks, and a record whose job slurmctld
holds under another user or name is rejected, never stored nor handed to the guard. A job it has forgotten is mapped by
the rules on its name and partition alone, unconfirmed.

With a :class:`~slurm.resource_guard.ResourceGuard`, each run read that Slurm stopped (timed out, killed for
memory, preempted, its node failed) is handed to it after the pass's runs are stored and before the cursor moves on.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from data.ingest import Reject
from predictor.atomic import read_state, write_json_atomically
from predictor.catalog import Catalog
from predictor.domain import Source
from predictor.passes import every_interval
from predictor.store import MeasurementStore
from predictor.store.job_history import JobHistory
from slurm.accounting import AccountingError, SlurmJob, jobcomp_id, read_jobcomp
from slurm.control import QueuedJob, SlurmError
from slurm.history import history_records
from slurm.ingest import NO_INPUTS, Inputs, convert
from slurm.resource_guard import RESOURCES, ResourceGuard
from slurm.rules import JobFacts, MappingError, Rules, map_job

log = logging.getLogger(__name__)
Held = Callable[[Sequence[str]], dict[str, QueuedJob]]
"""The jobs of the ids given that slurmctld still holds, by id (:meth:`slurm.control.Slurm.held`)."""


@dataclass(frozen=True)
class Cursor:
    """How far the log was read: its inode, the byte offset after the last complete line, and that line's number."""

    inode: int = 0
    offset: int = 0
    line: int = 0


@dataclass(frozen=True)
class FollowPass:
    """What one pass read and did."""

    jobs: int
    stored: int
    duplicates: int
    skipped: tuple[Reject, ...]
    rejected: tuple[Reject, ...]


class Follower:
    """Reads a completion log into the store from a saved cursor (see the module docstring)."""

    def __init__(
        self,
        log_path: Path,
        cursor_path: Path,
        store: MeasurementStore,
        catalog: Catalog,
        rules: Rules,
        *,
        cluster: str = "slurm",
        slurmctld: Held | None = None,
        guard: ResourceGuard | None = None,
        queue: Callable[[], list[SlurmJob]] | None = None,
        inputs: Inputs = NO_INPUTS,
    ) -> None:
        self.log_path = log_path
        self.cursor_path = cursor_path
        self.store = store
        self.catalog = catalog
        self.rules = rules
        self.cluster = cluster
        self.slurmctld = slurmctld
        self.guard = guard
        self.queue = queue
        self.inputs = inputs
        # job id -> state of the queued jobs recorded, to record only changes
        self._queued: dict[str, str] = {}

    def cursor(self) -> Cursor:
        """The saved cursor (the start when there is none, or it is unreadable)."""
        return read_state(self.cursor_path, Cursor)

    def poll(self) -> FollowPass:
        """Store the completions written since the cursor and move the cursor past them."""
        # before the log is read: a job that ends meanwhile has its end recorded after
        self._record_queue()
        cursor = self.cursor()
        try:
            stat = self.log_path.stat()
        except FileNotFoundError:
            return FollowPass(0, 0, 0, (), ())
        if stat.st_ino != cursor.inode or stat.st_size < cursor.offset:
            cursor = Cursor(stat.st_ino)
        with self.log_path.open("rb") as fh:
            fh.seek(cursor.offset)
            data = fh.read()
        complete = data[: data.rfind(b"\n") + 1]
        lines = complete.decode("utf-8", errors="replace").split("\n")[:-1]
        held = self._held([job_id for line in lines if (job_id := jobcomp_id(line))])
        breaks = {job_id: job.line_breaks for job_id, job in held.items()}
        parsed = [
            (n, confirmed(job, held.get(job.job_id)) if isinstance(job, SlurmJob) else job)
            for n, job in read_jobcomp(lines, first_line=cursor.line + 1, breaks=breaks)
        ]
        history = JobHistory(self.store.engine)
        history.record(history_records(parsed, self.cluster, self.rules))
        out = convert(
            parsed,
            self.rules,
            self.catalog,
            cluster=self.cluster,
            source=Source.PRODUCTION,
            history=history,
            inputs=self.inputs,
        )
        result = self.store.add(out.measurements, out.served)
        if self.guard is not None:
            self._guard(parsed)
        self._save(Cursor(stat.st_ino, cursor.offset + len(complete), cursor.line + len(lines)))
        for reject in out.rejected:
            log.warning("%s line %d, %s: %s", self.log_path, reject.line, reject.field, reject.message)
        jobs = sum(isinstance(job, SlurmJob) for _, job in parsed)
        return FollowPass(jobs, len(result.stored), len(result.duplicates), tuple(out.skipped), tuple(out.rejected))

    def run(
        self, interval_s: float, stop: threading.Event, on_pass: Callable[[FollowPass], None] | None = None
    ) -> None:
        """Poll every ``interval_s`` until ``stop`` is set; a failing pass is logged and retried on the next."""
        every_interval(self.poll, interval_s, stop, what=f"following {self.log_path}", log=log, on_pass=on_pass)

    def _record_queue(self) -> None:
        """Record the waiting and running jobs whose state changed since the last pass (all of them at the first)."""
        if self.queue is None:
            return
        try:
            jobs = self.queue()
        except SlurmError as exc:
            log.warning("cannot read the queue (its jobs are recorded when they end): %s", exc)
            return
        changed = [job for job in jobs if self._queued.get(job.job_id) != job.state]
        JobHistory(self.store.engine).record(history_records(((0, job) for job in changed), self.cluster, self.rules))
        self._queued = {job.job_id: job.state for job in jobs}

    def _guard(self, parsed: list) -> None:
        """Let the guard decide about each stopped run read, then finish any requeue it left half done."""
        assert self.guard is not None
        for _, job in parsed:
            if isinstance(job, SlurmJob) and job.state in RESOURCES:
                facts = JobFacts(name=job.name, comment=job.comment, partition=job.partition, work_dir=job.work_dir)
                try:
                    mapping = map_job(self.rules, facts, self.catalog)
                except MappingError:
                    mapping = None
                self.guard.consider(job, mapping)
        self.guard.resume()

    def _held(self, ids: list[str]) -> dict[str, QueuedJob]:
        """What slurmctld still holds of the jobs ``ids`` ({} without it, or when it does not answer)."""
        if self.slurmctld is None or not ids:
            return {}
        try:
            return self.slurmctld(ids)
        except SlurmError as exc:
            log.warning("cannot ask slurmctld about the jobs read (mapped by the rules alone): %s", exc)
            return {}

    def _save(self, cursor: Cursor) -> None:
        """Write the cursor atomically (a kill leaves the old one or the new one, never half of one)."""
        write_json_atomically(self.cursor_path, asdict(cursor))


def confirmed(job: SlurmJob, held: QueuedJob | None) -> SlurmJob | AccountingError:
    """``job`` as a completion line tells it, with its comment from slurmctld's record ``held``; AccountingError when
    that record is another user's or names the job otherwise (the line is not that job's); unchanged without one."""
    if held is None:
        return job
    if held.user != (job.user or "") or held.name.strip() != job.name:
        return AccountingError(
            "JobId",
            f"slurmctld holds job {job.job_id} as user {held.user!r}'s, named {held.name[:80]!r}; the completion line "
            f"says user {job.user!r}, named {job.name[:80]!r} (a job name holding a line break?): not stored",
        )
    return job.with_comment(held.comment)
