"""The resource guard (opt-in): a job Slurm stopped is requeued, raising only the resource that ran out, at most N times.

What a stopped run gets, by its state (:data:`RESOURCES`):

- ``TIMEOUT``: a larger time limit only, the first quantile of the job's estimate past its served limit
  (:data:`QUANTILES`, e.g. 0.99 then 0.999) whose upper estimate exceeds the limit it timed out at, rounded up to
  whole minutes and capped by the partition's ``MaxTime``;
- ``OUT_OF_MEMORY``: a larger memory request only (``MinMemoryNode``), the first quantile whose memory limit
  (:attr:`~predictor.domain.Estimate.memory_limit`, where the pair has a memory model) exceeds the request it was
  killed at, else that request times :data:`MEMORY_FACTOR`; whole megabytes, capped by the smallest memory of the
  partition's nodes;
- ``PREEMPTED``, ``NODE_FAIL``: requeued with neither changed (nothing of the job ran out).

The guard acts only on a job slurmctld confirms: it must still hold a job of that id, of the user and with the name the
accounting line gives (a completion line can be forged by a job name holding a line break); else it declines.
Declined, and recorded as such: a job requeued N times already for that resource, a timed-out one whose algorithm
nobody knows (no tag, no rule: nothing to estimate its time from), one at its partition's maximum, one no quantile
would give more time, one back in the queue already (Slurm requeues a requeueable job after ``NODE_FAIL`` itself, and
one preempted with ``PreemptMode=REQUEUE``), and one Slurm refuses to requeue (submitted ``--no-requeue``, or
``JobRequeue=0``: "Requested operation is presently disabled").

Every decision is a JSON line in the decisions file, appended before it is carried out, and its run's id makes it
happen once. A requeue is ``scontrol requeuehold`` then ``scontrol update TimeLimit=...|MinMemoryNode=...
StartTime=now`` then ``scontrol release`` (:data:`RELAUNCH_DELAY_S` later): a guard killed half way leaves the job
held, never running with its old limits, and the next guard finishes what the file says it started.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path

from features import FeatureError
from predictor.domain import Estimate
from predictor.memsize import MIB
from predictor.oracle import RuntimeOracle
from slurm.accounting import QUEUED, SlurmJob
from slurm.control import QueuedJob, Slurm, SlurmError, partition_max_memory, partition_max_time
from slurm.ingest import run_id_of
from slurm.rules import JobMapping

log = logging.getLogger(__name__)
QUANTILES = (0.99, 0.999, 0.9999)
MEMORY_FACTOR = 2.0
RESOURCES = {"TIMEOUT": "time", "OUT_OF_MEMORY": "memory", "PREEMPTED": "none", "NODE_FAIL": "none"}
"""The ended states the guard requeues, and the resource each raises (``none``: requeued as it was)."""
# waiting or running again (REQUEUED is a requeue on its way, the guard's own too)
BACK = QUEUED - {"REQUEUED"}
REFUSED = "presently disabled"
"""What scontrol answers for a job that may not be requeued: a refusal for good, not a failure to try again."""
Uppers = Callable[[JobMapping, float], "Estimate | None"]
"""A mapped job's estimate with its limits (time and, with a memory model, memory) at a quantile; None without one."""


def oracle_uppers(oracle: RuntimeOracle) -> Uppers:
    """Estimates from ``oracle`` (the champions) with both limits, time and memory, at any quantile; None when the job
    cannot be estimated."""

    def upper(mapping: JobMapping, quantile: float) -> Estimate | None:
        try:
            job = oracle.prepare(mapping.algorithm, mapping.params, [mapping.platform])
        except (FeatureError, KeyError, ValueError) as exc:
            log.warning("cannot estimate %s for the guard: %s", mapping.algorithm, exc)
            return None
        return oracle.estimate_jobs([job], limit_quantile=quantile, memory_limit_quantile=quantile)[0].get(
            mapping.platform
        )

    return upper


RELAUNCH_DELAY_S = 2.0
"""Seconds a requeued job stays held before its release (a guard's pass takes that much longer per requeue).
Slurm's own requeue waits out the job credential's lifetime (minutes); releasing at once instead, slurmd can refuse
the launch when it falls in the second the killed run's credential was revoked ("Job credential revoked": the job
ends FAILED; about half the runs of tests/slurm/test_resource_guard.py did). A start time in the future is no
cure: only the backfill pass (every 30 s) would start the job then."""


@dataclass(frozen=True)
class GuardDecision:
    """One decision about one stopped run: ``requeue`` (started), ``requeued`` (done) or ``declined``, and why; the
    ``resource`` raised (``time``, ``memory`` or ``none``) and its old and new value."""

    run_id: str
    job_id: str
    action: str
    reason: str
    old_limit_s: float | None = None
    new_limit_s: float | None = None
    quantile: float | None = None
    at: str = ""
    resource: str = "time"
    old_memory_mb: int | None = None
    new_memory_mb: int | None = None

    def scontrol_fields(self) -> dict[str, str]:
        """What ``scontrol update`` changes for this requeue besides its start: the raised resource only."""
        if self.resource == "time":
            return {"TimeLimit": str(math.ceil((self.new_limit_s or 0) / 60))}
        if self.resource == "memory":
            return {"MinMemoryNode": str(self.new_memory_mb)}
        return {}


KNOWN = frozenset(f.name for f in fields(GuardDecision))


class ResourceGuard:
    """Decides and carries out requeues of stopped jobs (see the module docstring)."""

    def __init__(
        self,
        slurm: Slurm,
        uppers: Uppers,
        decisions: Path,
        *,
        cluster: str = "slurm",
        max_requeues: int = 1,
        quantiles: tuple[float, ...] = QUANTILES,
        memory_factor: float = MEMORY_FACTOR,
    ) -> None:
        self.slurm = slurm
        self.uppers = uppers
        self.decisions = decisions
        self.cluster = cluster
        self.max_requeues = max_requeues
        self.quantiles = quantiles
        self.memory_factor = memory_factor

    def history(self) -> list[GuardDecision]:
        """Every decision recorded, oldest first (a line of an older guard, without a resource, raised time)."""
        if not self.decisions.exists():
            return []
        lines = (json.loads(line) for line in self.decisions.read_text().splitlines() if line.strip())
        return [GuardDecision(**{k: v for k, v in line.items() if k in KNOWN}) for line in lines]

    def resume(self) -> list[GuardDecision]:
        """Finish every requeue started and not recorded done (a guard stopped half way, or Slurm did not answer)."""
        history = self.history()
        closed = {d.run_id for d in history if d.action != "requeue"}  # requeued, or refused by Slurm
        return [self._carry_out(d) for d in history if d.action == "requeue" and d.run_id not in closed]

    def consider(self, job: SlurmJob, mapping: JobMapping | None) -> GuardDecision | None:
        """Decide about one ended run (only the states of :data:`RESOURCES` concern the guard) and carry the decision
        out; once per run."""
        resource = RESOURCES.get(job.state)
        if resource is None:
            return None
        run_id = run_id_of(job, self.cluster)
        history = self.history()
        if any(d.run_id == run_id for d in history):
            # decided before; a requeue left half done is finished by resume()
            return None
        requeued = sum(d.job_id == job.job_id and d.resource == resource and d.action == "requeued" for d in history)

        def declined(reason: str) -> GuardDecision:
            return GuardDecision(
                run_id,
                job.job_id,
                "declined",
                f"{job.state}: {reason}",
                old_limit_s=job.time_limit,
                resource=resource,
                old_memory_mb=job.req_mem_mb,
            )

        held, unconfirmed = self._confirm(job)
        if unconfirmed:
            decision = declined(unconfirmed)
        elif back := _back(held):
            decision = declined(back)
        elif requeued >= self.max_requeues:
            decision = declined(f"requeued {requeued} times for {resource} already (at most {self.max_requeues})")
        elif resource == "time":
            decision = self._more_time(job, run_id, mapping)
        elif resource == "memory":
            decision = self._more_memory(job, run_id, mapping)
        else:
            decision = GuardDecision(
                run_id,
                job.job_id,
                "requeue",
                f"{job.state}: requeued as it was",
                job.time_limit,
                job.time_limit,
                resource="none",
                old_memory_mb=job.req_mem_mb,
                new_memory_mb=job.req_mem_mb,
            )
        self._record(decision)
        return self._carry_out(decision) if decision.action == "requeue" else decision

    def _more_time(self, job: SlurmJob, run_id: str, mapping: JobMapping | None) -> GuardDecision:
        old = job.time_limit

        def declined(reason: str) -> GuardDecision:
            return GuardDecision(run_id, job.job_id, "declined", reason, old_limit_s=old)

        if mapping is None:
            return declined("no tag or rule names its algorithm: nothing to estimate a larger limit from")
        try:
            ceiling = partition_max_time(self.slurm, job.partition) if job.partition else None
        except SlurmError as exc:
            return declined(f"cannot read the partition's MaxTime: {exc}")
        current = old or 0.0
        if ceiling is not None and current >= ceiling:
            return declined(f"its limit is the partition's maximum ({ceiling:.0f} s)")
        for quantile in self.quantiles:
            estimate = self.uppers(mapping, quantile)
            upper = None if estimate is None else estimate.limit
            if upper is not None and math.ceil(upper / 60) * 60 > current:
                new = float(math.ceil(upper / 60) * 60)
                capped = ceiling is not None and new > ceiling
                new = min(new, ceiling) if ceiling is not None else new
                why = f"timed out at {current:.0f} s; the {quantile:g} quantile of its estimate is {upper:.0f} s"
                return GuardDecision(
                    run_id,
                    job.job_id,
                    "requeue",
                    why + (" (capped by the partition)" if capped else ""),
                    old,
                    new,
                    quantile,
                )
        return declined(f"no quantile up to {self.quantiles[-1]:g} of its estimate exceeds {current:.0f} s")

    def _more_memory(self, job: SlurmJob, run_id: str, mapping: JobMapping | None) -> GuardDecision:
        old = job.req_mem_mb

        def decided(action: str, reason: str, new: int | None = None, quantile: float | None = None) -> GuardDecision:
            return GuardDecision(
                run_id,
                job.job_id,
                action,
                reason,
                job.time_limit,
                job.time_limit,
                quantile,
                resource="memory",
                old_memory_mb=old,
                new_memory_mb=new,
            )

        if not old:
            return decided("declined", "its memory request is unknown (no ReqMem or mem= in its accounting)")
        try:
            ceiling = partition_max_memory(self.slurm, job.partition) if job.partition else None
        except SlurmError as exc:
            return decided("declined", f"cannot read the partition's node memory: {exc}")
        if ceiling is not None and old >= ceiling:
            return decided("declined", f"its request is its nodes' whole memory ({ceiling} MB)")
        new, why, quantile = (
            math.ceil(old * self.memory_factor),
            f"x{self.memory_factor:g} (no memory estimate above it)",
            None,
        )
        for q in self.quantiles:
            estimate = None if mapping is None else self.uppers(mapping, q)
            upper = (
                None if estimate is None or estimate.memory_limit is None else math.ceil(estimate.memory_limit / MIB)
            )
            if upper is not None and upper > old:
                new, why, quantile = upper, f"the {q:g} quantile of its memory estimate", q
                break
        capped = ceiling is not None and new > ceiling
        new = min(new, ceiling) if ceiling is not None else new
        return decided(
            "requeue",
            f"killed for memory at {old} MB; {new} MB: {why}" + (" (capped by its nodes)" if capped else ""),
            new,
            quantile,
        )

    def _state(self, job_id: str) -> str:
        """The job's state now ('' when slurmctld has forgotten it or does not answer: the requeue will tell)."""
        try:
            return next((j.state for j in self.slurm.jobs([job_id])), "")
        except SlurmError:
            return ""

    def _confirm(self, job: SlurmJob) -> tuple[QueuedJob | None, str]:
        """slurmctld's record of the job and '' when it confirms the job's id, user and name; else None and why not."""
        try:
            held = self.slurm.held([job.job_id]).get(job.job_id)
        except SlurmError as exc:
            return None, f"slurmctld does not answer ({exc}): its id and user are not confirmed"
        if held is None:
            return None, "slurmctld no longer holds the job: its id and user are not confirmed"
        if held.user != (job.user or "") or held.name.strip() != job.name:
            return None, (
                f"slurmctld holds job {job.job_id} as user {held.user!r}'s, named {held.name[:80]!r}, not "
                f"{job.user!r}'s named {job.name[:80]!r}: not the job the accounting line tells of"
            )
        return held, ""

    def _back_in_queue(self, job_id: str) -> str:
        """Why there is nothing to requeue when the job waits or runs again (see :func:`_back`); '' otherwise, or when
        squeue does not answer."""
        try:
            return _back(self.slurm.held([job_id]).get(job_id))
        except SlurmError:
            return ""

    def _carry_out(self, decision: GuardDecision) -> GuardDecision:
        """Requeue held, raise the resource, release; each step again is harmless, so a half-done requeue is finished."""
        state = self._state(decision.job_id)
        # its processes are still being killed: Slurm takes no requeue yet
        if state == "COMPLETING":
            log.info("job %s is still completing; requeued on the next pass", decision.job_id)
            return decision
        if back := self._back_in_queue(decision.job_id):
            closed = GuardDecision(**{**asdict(decision), "action": "declined", "reason": back})
            self._record(closed)
            return closed
        try:
            if state in RESOURCES:
                self.slurm.requeue(decision.job_id, hold=True)
            self.slurm.update(decision.job_id, **decision.scontrol_fields(), StartTime="now")
            # the run ended before its requeue: this keeps the release past its kill's second
            time.sleep(RELAUNCH_DELAY_S)
            self.slurm.release(decision.job_id)
        except SlurmError as exc:
            if REFUSED in str(exc):
                refused = GuardDecision(
                    **{**asdict(decision), "action": "declined", "reason": f"Slurm refuses to requeue it: {exc}"}
                )
                self._record(refused)
                return refused
            log.warning("requeueing job %s failed (tried again on the next pass): %s", decision.job_id, exc)
            return decision
        done = GuardDecision(**{**asdict(decision), "action": "requeued", "at": ""})
        self._record(done)
        log.info("job %s requeued (%s): %s", decision.job_id, decision.resource, decision.reason)
        return done

    def _record(self, decision: GuardDecision) -> None:
        """Append the decision as one JSON line, on disk before anything is done about it."""
        stamped = GuardDecision(**{**asdict(decision), "at": datetime.now(UTC).isoformat(timespec="seconds")})
        self.decisions.parent.mkdir(parents=True, exist_ok=True)
        with self.decisions.open("a") as fh:
            fh.write(json.dumps(asdict(stamped)) + "\n")
            fh.flush()


def _back(job: QueuedJob | None) -> str:
    """Why there is nothing to requeue when the job waits or runs again, not held by the guard (Slurm requeued it
    itself, or a guard requeued it and stopped before recording so); '' otherwise."""
    if job is None or job.state not in BACK or job.held:
        return ""
    return f"back in the queue already (now {job.state}): not requeued again"
