"""The scheduler inside the service: events in, orders out, every step committed to the database.

Each event (a submission, a machine or job event from the API, or a row a resource
manager put in ``sched_events``) is applied to the in-memory state under one lock
and committed with the orders it produced in one transaction. A crash loses at most
an event whose transaction had not committed: its orders were never visible, the
state on disk is the one before it, and the sender (or the inbox row, still
unprocessed) brings it again. Nothing is issued twice: every order names the run it
starts or stops, and the database refuses a second (job, kind, run).

Idle-time probes (:mod:`scheduler.probing`, given an ``IdleProber``): after each step the service asks the prober
which idle machines may probe and issues a PROBE order for each, in the step's transaction; a machine a real job
took (or that was lost) has its probe cancelled by a CANCEL_PROBE order in the very step that took it, before the
real job's orders. The executor stores the probe's measurement (source ``probe``) and reports its end with a
``probe_ended`` inbox row; probes that became possible with no event (a new clock hour's budget) start at the
poller's next pass.

A backfilling policy given ``planned=true`` (``easy:planned=true``, ``conservative:planned=true``) plans with the order
and correction of the newest planning decision of its family in the store (``predictor plan choose``,
:mod:`scheduler.planning`): read when the service starts and again, at most every few seconds, before each pass over
the inbox (the poller's every second, and every call), so a new decision serves within seconds of being recorded. Its
estimates stay the oracle's: the service has no users' history of its own to plan with the last two runs.

One scheduler process per database: the in-memory state is the writer's cache. The lease
(:mod:`scheduler.leader`) makes it so: a service given a ``fence`` commits each step only
while its process still holds the lease, so one that lost it can issue nothing.
"""

from __future__ import annotations

import copy
import itertools
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from predictor.catalog import Catalog
from predictor.domain import Measurement, ServedEstimate, Source
from predictor.store import MeasurementStore
from scheduler.events import EventLoop, OrderError
from scheduler.orders import Order, cancel_probe, probe
from scheduler.planning import FollowedDecision
from scheduler.policies.backfill import Backfilling
from scheduler.policies.edf import EDFDeferral
from scheduler.policy import Policy
from scheduler.probing import HOUR, IdleProber, ProbeRecord, ProbeRun
from scheduler.run_times import Oracle
from scheduler.state import Job, JobStatus, Machine, Run, State
from scheduler.store import Fence, SchedulerStore

log = logging.getLogger("scheduler")
MACHINE_EVENTS = ("gained", "lost")
JOB_EVENTS = ("ended", "failed")
PROBE_EVENTS = ("probe_ended",)
# slots of one machine (the API's bound too)
MAX_SLOTS = 1_000_000
# job ids one returning machine may report healthy
MAX_HEALTHY = 100_000
# bytes of one node or one job (1 PiB; the API's bound too)
MAX_MEMORY = 2**50
# the database is down or busy: retry, never reject
UNAVAILABLE = (OperationalError, InterfaceError, PoolTimeout)
OUTCOME_CHARS = 1000


class EventError(ValueError):
    """An event that cannot apply (missing platform, wrong kind, unknown dependency, ...)."""


class UnknownEntity(EventError):
    """An event about a job or machine the scheduler does not know."""


Ident = Annotated[str, Field(strict=True, min_length=1, max_length=200)]


class InboxPayload(BaseModel):
    """The ``payload`` of an inbox row, checked like the API's event bodies before anything applies (other keys are ignored)."""

    model_config = ConfigDict(extra="ignore")

    platform: Ident | None = None
    slots: int = Field(default=1, ge=1, le=MAX_SLOTS, strict=True)
    healthy: list[Ident] = Field(default_factory=list, max_length=MAX_HEALTHY)
    node_memory: int | None = Field(default=None, ge=1, le=MAX_MEMORY, strict=True)  # a new machine's bytes per node
    reason: str = Field(default="", max_length=4096, strict=True)
    # the run an end is about (a probe's: its order's attempt)
    attempt: int | None = Field(default=None, ge=1, strict=True)


class InboxEvent(BaseModel):
    """One inbox row as the scheduler applies it: the ids must be text (SQLite stores whatever it is given)."""

    kind: str = Field(strict=True)
    machine_id: Ident | None = None
    job_id: Ident | None = None
    payload: InboxPayload


class SchedulerService:
    """Thread-safe front of the scheduler for the API and for resource managers that use the database."""

    def __init__(
        self,
        store: MeasurementStore,
        oracle: Oracle,
        catalog: Catalog,
        *,
        policy: Policy | None = None,
        threshold: float = 0.25,
        clock: Callable[[], float] = time.time,
        fence: Fence | None = None,
        prober: IdleProber | None = None,
    ) -> None:
        self.store = store
        self.db = SchedulerStore(store.engine)
        self.prober = prober
        self.fence = fence
        self.catalog = catalog
        self.oracle = oracle
        self.clock = clock
        self._lock = threading.RLock()
        self._observed: list[Measurement] = []
        self._served: list[ServedEstimate] = []
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None
        self._inbox_error: str | None = None
        self.scheduler = EventLoop(
            policy or EDFDeferral(),
            oracle,
            self.db.load(),
            threshold=threshold,
            on_observation=self._observe,
            on_notify=lambda job, text: log.warning("job %s: %s", job.id, text),
        )
        self._restore_probes()
        chosen = self.scheduler.policy
        self._planning = (
            FollowedDecision(store, (chosen.family,), clock=clock)
            if isinstance(chosen, Backfilling) and chosen.planned
            else None
        )
        # the planning decision planned with (None: none yet; -1: not looked yet)
        self._followed: int | None = -1
        self._follow_planning()

    @property
    def state(self) -> State:
        return self.scheduler.state

    def submit(self, jobs: Sequence[Job]) -> list[Job]:
        """N: new jobs (ids already known are left as they are: a retried submission is harmless); copies of all of them."""
        with self._lock:
            self._catch_up()
            known = self.state.jobs
            ids = [j.id for j in jobs]
            if len(set(ids)) != len(ids):
                raise EventError("job ids repeat within the submission")
            new = [j for j in jobs if j.id not in known]
            batch = {j.id: j for j in new}
            for job in new:
                missing = [
                    d for d in (*job.depends_on, job.stream_from) if d is not None and d not in known and d not in batch
                ]
                if missing:
                    raise EventError(f"job {job.id}: unknown dependency {missing[0]}")
                self._check_algorithm(job)
            _check_acyclic(batch)
            if new:
                now = self.clock()
                for job in new:
                    job.submit = now
                    if job.memory is None:
                        job.planned_memory = self._memory_limits(job)
                    job.checkpoint = frozenset(
                        p
                        for p, impl in self.catalog.algorithm(job.algorithm).implementations.items()
                        if impl.checkpoint
                    )
                with self._step(now) as step:
                    step.orders = self.scheduler.submit(new, now)
            return [copy.deepcopy(known[i]) for i in ids]

    def machine_event(
        self,
        machine_id: str,
        kind: str,
        *,
        platform: str | None = None,
        slots: int = 1,
        healthy: Sequence[str] = (),
        node_memory: int | None = None,
    ) -> list[Order]:
        """G or L for one machine; a new machine's ``node_memory`` (bytes, None: memory never limits it) is what its
        jobs' memory may take."""
        with self._lock:
            self._catch_up()
            now = self.clock()
            with self._step(now) as step:
                step.orders = self._machine(machine_id, kind, platform, slots, healthy, now, node_memory)
            return step.orders

    def job_event(self, job_id: str, kind: str, *, machine: str, reason: str = "") -> list[Order]:
        """E or T for one job's run on ``machine``."""
        with self._lock:
            self._catch_up()
            now = self.clock()
            with self._step(now) as step:
                step.orders = self._job(job_id, kind, machine, reason, now)
            return step.orders

    def start_probes(self) -> list[Order]:
        """Start the probes that became possible without an event (a new clock hour's budget); their orders."""
        with self._lock:
            self._catch_up()
            if self.prober is None:
                return []
            with self._step(self.clock(), quiet=True) as step:
                pass
            return step.orders

    def sync(self) -> int:
        """Apply every unprocessed event of the database inbox, in order; returns how many were taken."""
        with self._lock:
            return self._sync()

    def job(self, job_id: str) -> Job | None:
        """A copy of the job as it stands (events waiting in the inbox are applied first)."""
        with self._lock:
            self._catch_up()
            job = self.state.jobs.get(job_id)
            return None if job is None else copy.deepcopy(job)

    def jobs(self, statuses: Sequence[JobStatus] = (), after: int = 0, limit: int = 100) -> list[Job]:
        """Copies of up to ``limit`` jobs submitted after the one numbered ``after`` (oldest first), of ``statuses`` if given."""
        with self._lock:
            self._catch_up()
            chosen = (j for j in self.state.jobs.values() if j.seq > after and (not statuses or j.status in statuses))
            return [copy.deepcopy(j) for j in itertools.islice(chosen, limit)]  # jobs are kept in seq order

    def orders(self, after: int = 0, limit: int = 1000, machine: str | None = None) -> list[dict[str, Any]]:
        """Issued orders after the cursor ``after`` (events waiting in the inbox are applied first)."""
        with self._lock:
            self._catch_up()
        return self.db.orders(after, limit, machine)

    @property
    def inbox_error(self) -> str | None:
        """Why the last pass over the inbox failed (None when it went through): the scheduler is stuck until it does."""
        return self._inbox_error

    def start_polling(self, interval_s: float = 1.0) -> None:
        """Apply inbox events in a background thread every ``interval_s`` (for resource managers that only use SQL)."""
        if self._poller is not None:
            return
        self._stop.clear()
        self._poller = threading.Thread(target=self._poll, args=(interval_s,), name="scheduler-inbox", daemon=True)
        self._poller.start()

    def stop(self) -> None:
        """Stop the background thread, if any."""
        self._stop.set()
        if self._poller is not None:
            self._poller.join(timeout=10)
            self._poller = None

    # --- internals ----------------------------------------------------------------------------------------------

    def _poll(self, interval_s: float) -> None:
        while not self._stop.is_set():
            try:
                self.sync()
                self.start_probes()
            # a database hiccup must not kill the poller; the next round retries
            except Exception:
                log.exception("applying inbox events failed")
            self._stop.wait(interval_s)

    def _catch_up(self) -> None:
        """Apply the inbox before serving a call; a failing inbox is logged and shown by readiness, the call goes on."""
        try:
            self._sync()
        except Exception:
            log.exception("applying inbox events failed")

    def _follow_planning(self) -> None:
        """Plan with the newest planning decision of a ``planned`` policy's family (the spec's own options before any),
        switching when a newer one is recorded."""
        if self._planning is None:
            return
        decision = self._planning.current()
        followed = None if decision is None else decision.id
        if followed == self._followed:
            return
        policy = self.scheduler.policy
        assert isinstance(policy, Backfilling)
        if decision is None:
            policy.follow()
            log.warning("no %s planning decision yet: planning with the policy's own options", policy.family)
        else:
            policy.follow(decision.config.order, decision.config.correction)
            log.warning(
                "planning as decision %s (%s of %s) chose: %s",
                decision.id,
                decision.decision,
                decision.site,
                decision.config.label(decision.family),
            )
        self._followed = followed

    def _sync(self) -> int:
        """Apply every unprocessed inbox row in order; a row that cannot apply is marked rejected, with its reason."""
        self._follow_planning()
        try:
            events = self.db.pending_events()
            for event in events:
                self._apply_row(event)
        except Exception as exc:
            self._inbox_error = _describe(exc)
            raise
        self._inbox_error = None
        return len(events)

    def _apply_row(self, event: dict[str, Any]) -> None:
        """Apply one inbox row with the orders it produces, or reject it; only an unavailable database is raised (retried later)."""
        now = self.clock()
        try:
            row = _inbox_event(event)
            with self._step(now, event["seq"]) as step:
                payload = row.payload
                if row.kind in MACHINE_EVENTS:
                    step.orders = self._machine(
                        row.machine_id,
                        row.kind,
                        payload.platform,
                        payload.slots,
                        payload.healthy,
                        now,
                        payload.node_memory,
                    )
                elif row.kind in JOB_EVENTS:
                    step.orders = self._job(row.job_id, row.kind, row.machine_id, payload.reason, now)
                elif row.kind in PROBE_EVENTS:
                    step.closed += self._probe_ended(row.job_id, row.machine_id, payload.attempt, now)
                else:
                    raise EventError(
                        f"unknown event kind {row.kind!r}; use {', '.join(MACHINE_EVENTS + JOB_EVENTS + PROBE_EVENTS)}"
                    )
        except UNAVAILABLE:
            raise
        except Exception as exc:
            if isinstance(exc, (EventError, OrderError)):
                reason = str(exc)
                log.warning("inbox event %s rejected: %s", event["seq"], reason)
            else:
                reason = _describe(exc)
                log.exception("inbox event %s rejected: applying it failed", event["seq"])
            self.db.reject_event(event["seq"], now, f"rejected: {reason}"[:OUTCOME_CHARS])

    def _machine(
        self,
        machine_id: str | None,
        kind: str,
        platform: str | None,
        slots: int,
        healthy: Sequence[str],
        now: float,
        node_memory: int | None = None,
    ) -> list[Order]:
        state = self.state
        if not machine_id:
            raise EventError("a machine event needs a machine")
        if kind == "lost":
            if machine_id not in state.machines:
                raise UnknownEntity(f"unknown machine {machine_id!r}")
            return self.scheduler.machine_lost(machine_id, now)
        if kind != "gained":
            raise EventError(f"machine event must be one of {', '.join(MACHINE_EVENTS)}, got {kind!r}")
        known = state.machines.get(machine_id)
        if node_memory is not None and not self.scheduler.policy.plans_memory:
            raise EventError(
                f"policy {self.scheduler.policy.name!r} does not plan memory: a machine with a node memory needs "
                "one that does (edf, fcfs, easy, conservative)"
            )
        if known is None:
            if platform is None:
                raise EventError(f"new machine {machine_id!r} needs its platform")
            try:
                power = self.catalog.platform(platform).power_watts
            except KeyError as exc:
                raise EventError(str(exc).strip('"')) from None
            known = Machine(machine_id, platform, slots, power, node_memory=node_memory)
        elif platform is not None and platform != known.platform:
            raise EventError(f"machine {machine_id!r} is of platform {known.platform!r}, not {platform!r}")
        elif node_memory is not None and node_memory != known.node_memory:
            raise EventError(f"machine {machine_id!r} has {known.node_memory} bytes of node memory, not {node_memory}")
        return self.scheduler.machine_gained(known, now, healthy=healthy)

    def _job(self, job_id: str | None, kind: str, machine: str | None, reason: str, now: float) -> list[Order]:
        job = self.state.jobs.get(job_id or "")
        if job is None:
            raise UnknownEntity(f"unknown job {job_id!r}")
        if not machine or machine not in job.runs:
            raise EventError(f"job {job_id!r} has no run on machine {machine!r}")
        if kind == "ended":
            return self.scheduler.job_ended(job.id, machine, now)
        if kind == "failed":
            return self.scheduler.job_failed(job.id, machine, now, reason)
        raise EventError(f"job event must be one of {', '.join(JOB_EVENTS)}, got {kind!r}")

    def _probe_ended(
        self, probe_id: str | None, machine: str | None, token: int | None, now: float
    ) -> list[ProbeRecord]:
        """A probe's program ended: done or capped as its stored measurement says, failed when it stored none (or a
        failed run); nothing when that probe was cancelled before (its machine went to a real job)."""
        if self.prober is None:
            raise EventError("this scheduler runs no probes")
        if not probe_id or not machine or token is None:
            raise EventError("a probe's end needs its machine, its probe (job_id) and its order's attempt")
        run = self.prober.running.get(machine)
        if run is None or run.token != token or run.probe.id != probe_id:
            return []
        measured = self.store.measurement(probe_id)
        failed = measured is None or not (measured.succeeded or measured.censored)
        record = self.prober.ended(
            machine, token, now, capped=measured is not None and measured.censored, failed=failed
        )
        return [record] if record is not None else []

    def _probes(self, step: _Step, now: float) -> None:
        """The prober's part of a step: cancel the probes of machines no longer idle (first: the real job's orders must
        find the machine free) and those overdue, then start probes on the idle ones."""
        assert self.prober is not None
        closed = self.prober.reclaim(self.state, now)
        started = self.prober.fill(self.state, now)
        step.closed += closed
        step.started += started
        cancels = [
            cancel_probe(
                r.probe,
                r.machine,
                r.token,
                "its machine is no longer idle" if r.outcome == "cancelled" else "overdue: lost",
            )
            for r in closed
        ]
        step.orders = cancels + step.orders + [probe(r.probe.id, r.machine, r.token) for r in started]

    def _restore_probes(self) -> None:
        """Load the prober's state as last committed (at start, and after a step that was not)."""
        if self.prober is not None:
            self.prober.restore(*self.db.probes(since=self.clock() - HOUR))

    def _memory_limits(self, job: Job) -> dict[str, int]:
        """Platform -> bytes to plan a job that asked for no memory with: the oracle's memory limit (its memory
        champion's upper estimate, as the Slurm plugin's ``--raise-missing-memory`` sets it), rounded up; platforms
        without a memory champion are absent, and the job's memory counts nowhere there."""
        platforms = list(job.platforms) if job.platforms else None
        estimates = self.oracle.estimate(job.algorithm, job.params, platforms, job.features)
        return {p: math.ceil(e.memory_limit) for p, e in estimates.items() if e.memory_limit is not None}

    def _check_algorithm(self, job: Job) -> None:
        try:
            self.catalog.algorithm(job.algorithm)
        except KeyError as exc:
            raise EventError(str(exc).strip('"')) from None

    def _observe(self, job: Job, run: Run, machine: Machine, wall: float) -> None:
        """A cleanly finished run becomes a measurement, stored with the step that saw it end, beside the estimate the
        scheduler planned it with (what scores the model live)."""
        run_id = f"sched-{job.id}-{run.attempt}"
        self._observed.append(
            Measurement(
                run_id=run_id,
                algorithm=job.algorithm,
                platform=machine.platform,
                machine=machine.id,
                params=job.params,
                features=job.features or {},
                wall_seconds=max(wall, 0.0),
                source=Source.PRODUCTION,
                context={"scheduler_estimate": run.estimate},
            )
        )
        if run.estimate is not None and run.estimate > 0:
            self._served.append(
                ServedEstimate(
                    run_id=run_id,
                    algorithm=job.algorithm,
                    platform=machine.platform,
                    seconds=run.estimate,
                    origin="scheduler",
                )
            )

    @contextmanager
    def _step(self, now: float, event: int | None = None, *, quiet: bool = False) -> Iterator[_Step]:
        """Apply one event and commit it with its orders and probes; on any failure reload the last committed state.
        ``quiet``: no event, so nothing is written unless the prober started or cancelled a probe."""
        step = _Step()
        try:
            yield step
            if self.prober is not None:
                self._probes(step, now)
            if quiet and not (step.orders or step.started or step.closed):
                return
            sent = [o for o in step.orders if o.sent]
            self.db.save(
                self.state,
                sent,
                now,
                self._observed,
                event,
                served=self._served,
                fence=self.fence,
                probes_started=step.started,
                probes_closed=step.closed,
            )
        except BaseException:
            self.scheduler.state = self.db.load()
            self._restore_probes()
            raise
        finally:
            self._observed.clear()
            self._served.clear()


def _describe(exc: BaseException) -> str:
    """An unexpected exception in one bounded line: its type and the first line of its message."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"[:OUTCOME_CHARS]


def _inbox_event(row: dict[str, Any]) -> InboxEvent:
    """An inbox row (its payload as the JSON text stored) checked; EventError saying what is wrong with it."""
    raw = row["payload"]
    try:
        payload = {} if raw is None else json.loads(raw)
    except ValueError as exc:
        raise EventError(f"payload is not JSON: {exc}") from None
    if payload is not None and not isinstance(payload, dict):
        raise EventError(f"payload must be a JSON object, got {type(payload).__name__}")
    try:
        return InboxEvent.model_validate({**row, "payload": payload or {}})
    except ValidationError as exc:
        raise EventError("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())) from None


def _check_acyclic(batch: dict[str, Job]) -> None:
    """EventError when new jobs need each other in a circle (they could never start); known jobs cannot need new ones."""
    done: set[str] = set()
    for root in batch:
        path, stack = set(), [(root, False)]
        while stack:
            name, leaving = stack.pop()
            if leaving:
                path.discard(name)
                done.add(name)
                continue
            if name in path:
                raise EventError(f"job {name}: its dependencies lead back to it")
            if name in done or name not in batch:
                continue
            path.add(name)
            stack.append((name, True))
            job = batch[name]
            stack += [(d, False) for d in (*job.depends_on, job.stream_from) if d is not None]


class _Step:
    """The orders of one applied event, and the probes it started and closed."""

    def __init__(self) -> None:
        self.orders: list[Order] = []
        self.started: list[ProbeRun] = []
        self.closed: list[ProbeRecord] = []
