"""The scheduler's state: jobs, their runs, machines, and the plan of deferred jobs."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import PlainSerializer, TypeAdapter

from scheduler.nodes import Allocation, Room, SlotNeeds, capacity, node_needs

if TYPE_CHECKING:
    from scheduler.sites import DataStores

INF = math.inf
# a run past its estimate is expected to need this fraction of its estimate again
OVERRUN_MARGIN = 0.5


class JobStatus(str, Enum):
    """Where a job is in its life; the last four are final."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    DROPPED = "dropped"
    CANCELLED = "cancelled"

    @property
    def final(self) -> bool:
        return self in FINAL


FINAL = frozenset({JobStatus.DONE, JobStatus.FAILED, JobStatus.DROPPED, JobStatus.CANCELLED})


@dataclass(slots=True)
class Run:
    """One attempt of a job on one machine; ``estimate`` is the expected seconds of the work left at ``start``."""

    machine: str
    start: float
    attempt: int
    estimate: float | None
    progress0: float = 0.0
    orphan: bool = False
    # (node, slots) it holds on a machine of nodes (scheduler/nodes.py); empty on a pool
    nodes: Allocation = ()
    # bytes it holds with each slot, on a machine with a memory size (0: memory not counted)
    memory: int = 0

    def end_after(self, now: float) -> float:
        """Expected end seen at ``now``: as estimated, or, once overdue, ``OVERRUN_MARGIN`` of the estimate from now."""
        if self.estimate is None:
            return INF
        end = self.start + self.estimate
        return end if end > now else now + OVERRUN_MARGIN * self.estimate

    def progress_at(self, now: float) -> float:
        """The job's believed fraction done at ``now``: elapsed over estimated, capped below 1."""
        if not self.estimate:
            return self.progress0
        return self.progress0 + (1.0 - self.progress0) * min((now - self.start) / self.estimate, 0.99)


def requested_seconds(params: Mapping[str, Any]) -> float | None:
    """The time the user requested (``params['requested_time']``, an SWF log's), None where absent or not positive."""
    asked = params.get("requested_time")
    return float(asked) if asked is not None and float(asked) > 0 else None


# field metadata: the submitter gives it (the other fields are what the scheduler decides)
ASKED = {"asked": True}
# field metadata: no sched_jobs column (runs have their table; inputs: simulations)
KEPT_ELSEWHERE = {"stored": False}
NameSet = Annotated[frozenset[str], PlainSerializer(sorted, return_type=list[str], when_used="json")]
"""A set of names, written as a sorted list (a JSON column, an API body), so the same set is always the same text."""


@dataclass(slots=True)
class Job:
    """A request to run an algorithm with parameters, and what the scheduler knows and decided about it.

    The one definition of a job's fields: :data:`ASKED_FIELDS` (what a submission or a workload's
    :class:`~simulator.workload.JobSpec` gives) and :data:`STORED_FIELDS` (the ``sched_jobs`` columns) are read
    from it, the store maps rows and the API its schemas by name (through pydantic's :data:`JOB_ADAPTER`), and ``tests/scheduler/test_job_fields.py``
    checks the table, the migrations, the job spec and the API schemas against it.
    """

    id: str = field(metadata=ASKED)
    algorithm: str = field(metadata=ASKED)
    submit: float = field(metadata=ASKED)
    params: dict[str, Any] = field(default_factory=dict, metadata=ASKED)
    features: dict[str, float] | None = field(default=None, metadata=ASKED)
    deadline: float | None = field(default=None, metadata=ASKED)
    priority: int = field(default=0, metadata=ASKED)
    depends_on: tuple[str, ...] = field(default=(), metadata=ASKED)
    stream_from: str | None = field(default=None, metadata=ASKED)
    size: int = field(default=1, metadata=ASKED)
    platforms: tuple[str, ...] | None = field(default=None, metadata=ASKED)
    checkpoint: NameSet = field(default=frozenset(), metadata=ASKED)
    data: str | None = field(default=None, metadata=ASKED)
    # Santos-Neto et al. 2004: (name, bytes), see scheduler/sites.py
    inputs: tuple[tuple[str, int], ...] = field(default=(), metadata=ASKED | KEPT_ELSEWHERE)
    # bytes it may use, as its user asked (None: not given)
    memory: int | None = field(default=None, metadata=ASKED)
    seq: int = 0
    estimates: dict[str, float | None] = field(default_factory=dict)
    # without ``memory``: the oracle's memory limit per platform
    planned_memory: dict[str, int] = field(default_factory=dict)
    status: JobStatus = JobStatus.PENDING
    runs: dict[str, Run] = field(default_factory=dict, metadata=KEPT_ELSEWHERE)
    progress: float = 0.0
    attempts: int = 0
    planned_machine: str | None = None
    planned_start: float | None = None
    started: float | None = None
    ended: float | None = None
    message: str = ""

    def remaining(self, platform: str) -> float | None:
        """Estimated seconds of the work left on ``platform``: a checkpoint's progress counts only where it can resume."""
        seconds = self.estimates.get(platform)
        if seconds is None:
            return None
        return seconds * (1.0 - self.progress) if platform in self.checkpoint else seconds

    def memory_on(self, platform: str) -> int | None:
        """The bytes it is placed with on ``platform``: the user's ``memory``, else the memory limit planned there (None: unknown)."""
        return self.memory if self.memory is not None else self.planned_memory.get(platform)

    def active_runs(self) -> list[Run]:
        """Runs on machines the scheduler can reach (not orphaned by a lost machine)."""
        return [r for r in self.runs.values() if not r.orphan]


ASKED_FIELDS = tuple(f.name for f in fields(Job) if f.metadata.get("asked"))
STORED_FIELDS = tuple(f.name for f in fields(Job) if f.metadata.get("stored", True))
JOB_ADAPTER = TypeAdapter(Job)
"""pydantic over the Job dataclass: its fields to JSON values and back, each by its declared type."""


def plain(job: Job, names: Iterable[str]) -> dict[str, Any]:
    """The fields ``names`` of ``job`` as JSON holds them (a table's JSON columns, an API body): lists for tuples and
    sets, an enum's value."""
    return JOB_ADAPTER.dump_python(job, mode="json", include=set(names))


def job_from_plain(values: Mapping[str, Any]) -> Job:
    """A job from plain values by field name (a ``sched_jobs`` row, a submission), each validated into its field's type."""
    return JOB_ADAPTER.validate_python(dict(values))


@dataclass(slots=True)
class Machine:
    """One node (or one pool of ``slots`` CPUs) of one platform."""

    id: str
    platform: str
    slots: int = 1
    power_watts: float = 0.0
    online: bool = True
    running: dict[str, None] = field(default_factory=dict)
    used: int = 0
    warm: str | None = None
    idle_since: float = 0.0
    busy_until: float = 0.0
    overrun: float = 0.0
    # what the grid's information agent says (gridinfo)
    attributes: dict[str, Any] = field(default_factory=dict)
    # > 0: the slots are nodes of this many, and jobs are placed on them (scheduler/nodes.py)
    node_slots: int = 0
    # slots taken on each node (empty on a pool)
    node_used: list[int] = field(default_factory=list)
    # bytes of each node (of the pool, on a pool); None: memory never limits
    node_memory: int | None = None
    # bytes taken on each node (one entry on a pool)
    memory_used: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.node_slots and not self.node_used:
            self.node_used = [0] * (self.slots // self.node_slots)
        if self.node_memory is not None and not self.memory_used:
            self.memory_used = [0] * max(len(self.node_used), 1)

    def free_after(self, now: float) -> float:
        """When a one-slot machine's run is expected to end, seen at ``now`` (see :meth:`Run.end_after`)."""
        return self.busy_until if self.busy_until > now else now + self.overrun

    @property
    def free(self) -> int:
        return self.slots - self.used if self.online else 0

    def node_free(self) -> list[int]:
        """Free slots per node (one entry, :attr:`free`, on a pool)."""
        if not self.node_slots:
            return [self.free]
        return [self.node_slots - used if self.online else 0 for used in self.node_used]

    def memory_free(self) -> list[int] | None:
        """Free bytes per node (one entry on a pool); None when the machine has no memory size."""
        if self.node_memory is None:
            return None
        return [self.node_memory - used for used in self.memory_used]

    def room(self) -> Room:
        """Its free slots and memory per node, for one scheduling pass to take from."""
        return Room(self.node_free(), self.memory_free())

    def needs(self, job: Job) -> SlotNeeds:
        """The slots ``job`` needs on each of the nodes it would take here, largest first, with its memory per slot
        where both the machine's and the job's memory are known."""
        return node_needs(
            job.size,
            job.params,
            self.node_slots,
            job.memory_on(self.platform) if self.node_memory is not None else None,
        )

    def allot(self, job: Job, nodes: Allocation = ()) -> Allocation | None:
        """The nodes ``job`` would hold here: ``nodes`` if they are free and fit its needs, else a best fit;
        None if it does not fit now; () on a pool."""
        if not self.node_slots:
            if self.node_memory is None or job.memory_on(self.platform) is None:
                return () if self.free >= job.size else None
            return () if self.room().place(self.needs(job)) is not None else None
        needs = self.needs(job)
        if not nodes:
            return self.room().place(needs)
        free = capacity(self.node_free(), self.memory_free(), needs.memory)
        fits = len({n for n, _ in nodes}) == len(nodes) and all(0 <= n < len(free) and s <= free[n] for n, s in nodes)
        return nodes if fits and sorted((s for _, s in nodes), reverse=True) == list(needs) else None


def hold_memory(machine: Machine, run: Run, size: int, sign: int) -> None:
    """Take (``sign`` 1) or give back (-1) the memory ``run`` holds on its nodes (the pool's one entry on a pool)."""
    if not run.memory or machine.node_memory is None:
        return
    for node, slots in run.nodes or ((0, size),):
        machine.memory_used[node] += sign * slots * run.memory


class State:
    """Every job and machine the scheduler knows, the pending queue in arrival order, and the plan per machine.

    Mutations go through the methods so that ``dirty_jobs`` and ``dirty_machines``
    name what a persistent owner must write back.
    """

    def __init__(self) -> None:
        self.jobs: dict[str, Job] = {}
        self.machines: dict[str, Machine] = {}
        self.platforms: dict[str, list[Machine]] = {}
        self.pending: dict[str, None] = {}
        self.plan: dict[str, list[str]] = {}
        self.dependents: dict[str, list[str]] = {}
        self.consumers: dict[str, list[str]] = {}
        self.dirty_jobs: set[str] = set()
        self.dirty_machines: set[str] = set()
        self._seq = 0
        # Santos-Neto et al. 2004: what each site's data server holds (scheduler/sites.py)
        self.sites: DataStores | None = None

    def add_job(self, job: Job) -> None:
        """Register a job (pending or restored in any status)."""
        if job.id in self.jobs:
            raise ValueError(f"job {job.id!r} is already known")
        self._seq = max(self._seq, job.seq) + 1
        if job.seq == 0:
            job.seq = self._seq
        self.jobs[job.id] = job
        for dep in job.depends_on:
            self.dependents.setdefault(dep, []).append(job.id)
        if job.stream_from is not None:
            self.consumers.setdefault(job.stream_from, []).append(job.id)
        if job.status is JobStatus.PENDING:
            self.pending[job.id] = None
        self.dirty_jobs.add(job.id)

    def add_machine(self, machine: Machine) -> None:
        """Register a machine."""
        self.machines[machine.id] = machine
        self.platforms.setdefault(machine.platform, []).append(machine)
        self.dirty_machines.add(machine.id)

    def touch(self, job: Job) -> None:
        self.dirty_jobs.add(job.id)

    def touch_machine(self, machine: Machine) -> None:
        self.dirty_machines.add(machine.id)

    def ready(self, job: Job) -> bool:
        """Dependencies done, and a streaming producer running or done."""
        jobs = self.jobs
        for dep in job.depends_on:
            other = jobs.get(dep)
            if other is None or other.status is not JobStatus.DONE:
                return False
        if job.stream_from is not None:
            producer = jobs.get(job.stream_from)
            if producer is None or producer.status not in (JobStatus.RUNNING, JobStatus.DONE):
                return False
        return True

    def start_run(self, job: Job, machine: Machine, now: float, nodes: Allocation = ()) -> Run:
        """Record a new run of ``job`` on ``machine`` (on ``nodes``, or a best fit, where it has nodes)."""
        allocation = machine.allot(job, nodes) if machine.node_slots else ()
        if allocation is None:
            raise ValueError(f"job {job.id} does not fit the free nodes of {machine.id}")
        job.attempts += 1
        memory = machine.needs(job).memory
        run = Run(
            machine.id,
            now,
            job.attempts,
            job.remaining(machine.platform),
            job.progress,
            nodes=allocation,
            memory=memory,
        )
        job.runs[machine.id] = run
        job.status = JobStatus.RUNNING
        if job.started is None:
            job.started = now
        job.planned_machine = job.planned_start = None
        self.pending.pop(job.id, None)
        machine.running[job.id] = None
        machine.used += sum(slots for _, slots in allocation) if allocation else job.size
        for node, slots in allocation:
            machine.node_used[node] += slots
        hold_memory(machine, run, job.size, 1)
        self.refresh(machine)
        self.touch(job)
        return run

    def end_run(self, job: Job, machine_id: str, now: float) -> Run:
        """Remove a run and give its slots back."""
        run = job.runs.pop(machine_id)
        machine = self.machines.get(machine_id)
        if machine is not None and job.id in machine.running:
            del machine.running[job.id]
            machine.used -= sum(slots for _, slots in run.nodes) if run.nodes else job.size
            for node, slots in run.nodes:
                machine.node_used[node] -= slots
            hold_memory(machine, run, job.size, -1)
            if machine.used == 0:
                machine.idle_since = now
            self.refresh(machine)
        self.touch(job)
        return run

    def refresh(self, machine: Machine) -> None:
        """Recompute when the machine's runs are expected to end (their latest end, INF if one has no estimate)."""
        machine.busy_until, machine.overrun = 0.0, 0.0
        for job_id in machine.running:
            run = self.jobs[job_id].runs[machine.id]
            end = INF if run.estimate is None else run.start + run.estimate
            if end >= machine.busy_until:
                machine.busy_until, machine.overrun = end, OVERRUN_MARGIN * (run.estimate or 0.0)
        self.touch_machine(machine)

    def requeue(self, job: Job) -> None:
        """Put a job back in the pending queue."""
        job.status = JobStatus.PENDING
        self.pending[job.id] = None
        self.touch(job)

    def finish(self, job: Job, status: JobStatus, now: float, message: str = "") -> None:
        """Give a job its final status."""
        job.status = status
        job.ended = now
        if message:
            job.message = message
        job.planned_machine = job.planned_start = None
        self.pending.pop(job.id, None)
        self.touch(job)

    def replan(self, deferrals: list[tuple[Job, str, float]]) -> None:
        """Replace the plan: each (job, machine, expected start) holds a pending job for a machine, in order."""
        old, self.plan = self.plan, {}
        planned: set[str] = set()
        for job, machine_id, at in deferrals:
            if job.planned_machine != machine_id or job.planned_start != at:
                job.planned_machine, job.planned_start = machine_id, at
                self.touch(job)
            self.plan.setdefault(machine_id, []).append(job.id)
            planned.add(job.id)
        for queue in old.values():
            for job_id in queue:
                job = self.jobs[job_id]
                if job_id not in planned and job.planned_machine is not None:
                    job.planned_machine = job.planned_start = None
                    self.touch(job)
