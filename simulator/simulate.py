"""A trace-driven discrete-event simulator (after Kontothanassis & Goddeau 2004, section 2) around the service's own scheduler.

The simulator plays the cluster and its resource manager: it delivers arrivals,
machine outages and job ends to :class:`scheduler.events.EventLoop` and carries out
the orders it returns, timing each run with the job's *true* run time while the
scheduler only sees what its oracle tells it.

Memory: where the cluster's nodes have a size and a job its true peak, the simulator counts the starts that put a
node's true memory above its size (``overcommits``: what a scheduler that ignores memory does). With ``enforce``
it also plays a resource manager that kills at the limits (:mod:`simulator.retries`: OUT_OF_MEMORY above the job's
memory, TIMEOUT past its requested time), and with ``retry`` submits each killed job again with raised limits.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field
from enum import IntEnum
from itertools import groupby
from typing import ClassVar

from scheduler.events import EventLoop
from scheduler.orders import Order, OrderKind
from scheduler.policy import Policy
from scheduler.probing import IdleProber, ProbeRecord
from scheduler.run_times import ObservingOracle, Oracle, TerminationOracle, seconds
from scheduler.state import JobStatus, Machine, requested_seconds
from simulator.grid import GridRecord, Staging
from simulator.retries import KILLS, RetryPolicy, kill
from simulator.workload import JobSpec, MachineEvent, Workload

# the outcomes that end a job's run by itself (not the scheduler's order)
ENDED = ("done", "failed", *KILLS)


class _Kind(IntEnum):
    """What an event is; the heap orders simultaneous events by kind, so ends free machines before arrivals look."""

    END = 0  # a run's end
    MACHINE = 1  # a machine lost or gained
    ARRIVAL = 2  # jobs submitted
    # a pass the policy asked for, once the moment's ends, machine events and arrivals are in
    WAKE = 3
    # Santos-Neto et al. 2004: an input transfer over the home link may have ended (simulator/grid.py)
    STAGED = 4
    # an idle-time probe's end (scheduler/probing.py); probes never reach the scheduler
    PROBE_END = 5


@dataclass(frozen=True, slots=True)
class _RunEnd:
    """A run ends in truth: ``job`` on ``machine``, the attempt's ``token`` (stale if it was stopped), its outcome."""

    kind: ClassVar[_Kind] = _Kind.END
    job: str
    machine: str
    token: int
    outcome: str


@dataclass(frozen=True, slots=True)
class _MachineChange:
    """The workload's machine event comes due."""

    kind: ClassVar[_Kind] = _Kind.MACHINE
    event: MachineEvent


@dataclass(frozen=True, slots=True)
class _Arrival:
    """Jobs submitted at one moment, passed to the scheduler together."""

    kind: ClassVar[_Kind] = _Kind.ARRIVAL
    jobs: tuple[JobSpec, ...]


@dataclass(frozen=True, slots=True)
class _WakeUp:
    """The time the policy asked to be woken at (see EventLoop.wake_at)."""

    kind: ClassVar[_Kind] = _Kind.WAKE


@dataclass(frozen=True, slots=True)
class _Staged:
    """Santos-Neto et al. 2004: the staging's next wake-up, when a transfer may have ended."""

    kind: ClassVar[_Kind] = _Kind.STAGED


@dataclass(frozen=True, slots=True)
class _ProbeEnd:
    """An idle-time probe on ``machine`` ends, unless ``token`` was preempted before."""

    kind: ClassVar[_Kind] = _Kind.PROBE_END
    machine: str
    token: int


_Event = _RunEnd | _MachineChange | _Arrival | _WakeUp | _Staged | _ProbeEnd


@dataclass(frozen=True, slots=True)
class Segment:
    """One stretch of a job on a machine; ``outcome`` is done, failed, cancelled, paused, lost, oom or timeout."""

    job: str
    machine: str
    platform: str
    start: float
    end: float
    outcome: str
    share: float
    algorithm: str
    # the (node, slots) it held on a machine of nodes
    nodes: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """How one job went."""

    id: str
    algorithm: str
    submit: float
    deadline: float | None
    priority: int
    status: str
    start: float | None
    end: float | None
    platform: str | None
    # the seconds the scheduler was told at submission, on the platform it ran on
    estimate: float | None = None
    # the user's requested time (the kill limit), where the workload has one
    requested: float | None = None
    # the start the plan gave it right after its submission (its arrival if it started)
    predicted_start: float | None = None
    # the memory it planned with (its limit), bytes
    memory: int | None = None
    true_memory: int | None = None  # its true peak, bytes


@dataclass
class SimResult:
    """Everything a run produced, for metrics and charts."""

    workload: str
    policy: str
    estimates: str
    jobs: list[JobOutcome]
    segments: list[Segment]
    power: dict[str, float]
    slots: dict[str, int]
    platform_of: dict[str, str]
    offline: dict[str, list[tuple[float, float]]]
    passes: int
    wall_seconds: float
    orders: dict[str, int] = field(default_factory=dict)
    # Santos-Neto et al. 2004: each run's transfer and the data servers' final contents
    grid: GridRecord | None = None
    # idle-time probes, when a prober was given
    probes: list[ProbeRecord] = field(default_factory=list)
    # starts that put a node's true memory above its size (see the module docstring)
    overcommits: int = 0


@dataclass(slots=True)
class _Attempt:
    token: int
    start: float
    progress0: float
    duration: float
    nodes: tuple[tuple[int, int], ...] = ()


class Simulation:
    """One run of a workload under a policy and an oracle."""

    def __init__(
        self,
        workload: Workload,
        policy: Policy,
        oracle: Oracle,
        threshold: float = 0.25,
        prober: IdleProber | None = None,
        *,
        enforce: bool = False,
        retry: RetryPolicy | None = None,
    ) -> None:
        if any(m.node_slots for m in workload.cluster.machines) and not policy.places_nodes:
            raise ValueError(
                f"policy {policy.name!r} does not place jobs on nodes: run it on pooled machines (nodes=pooled)"
            )
        self.workload = workload
        self.prober = prober
        # events of the workload still queued: probing stops with the workload
        self._real_events = 0
        # an oracle that learns (the ``service`` estimates) hears of every cleanly finished run, as the service's store does;
        # one that follows users' recent runs (``last_two_mean``) hears of every run that ends
        self.scheduler = EventLoop(
            policy,
            oracle,
            threshold=threshold,
            on_observation=oracle.observe if isinstance(oracle, ObservingOracle) else None,
            on_termination=oracle.terminated if isinstance(oracle, TerminationOracle) else None,
        )
        self.specs: dict[str, JobSpec] = {j.id: j for j in workload.jobs}
        # (time, kind, seq, payload): seq breaks every tie
        self.events: list[tuple[float, _Kind, int, _Event]] = []
        self.active: dict[tuple[str, str], _Attempt] = {}
        self.true_progress: dict[str, float] = {}
        self.warm: dict[str, str | None] = {}
        self.held: dict[str, list[tuple[str, int, str]]] = {}
        self.segments: list[Segment] = []
        self.offline_since: dict[str, float] = {}
        self.offline: dict[str, list[tuple[float, float]]] = {}
        self.order_counts: dict[str, int] = {}
        self.platform_of = {m.id: m.platform for m in workload.cluster.machines}
        self.slots = {m.id: m.slots for m in workload.cluster.machines}
        self._seq = 0
        self._token = 0
        # the last wake-up pushed for the policy (see EventLoop.wake_at)
        self._wake: float | None = None
        # Santos-Neto et al. 2004: runs fetch inputs first (sites only)
        self.staging = Staging.attach(workload, self.scheduler.state)
        self.predicted_start: dict[str, float] = {}
        self.enforce, self.retry = enforce or retry is not None, retry
        self.retried: list[JobSpec] = []  # the retries' submissions, in order
        self.node_memory = {m.id: m.node_memory for m in workload.cluster.machines if m.node_memory is not None}
        # (machine, node): true bytes of the runs on it
        self.memory_in_use: dict[tuple[str, int], float] = {}
        self.overcommits = 0

    def run(self, estimates: str = "") -> SimResult:
        """Play every event to the end and return the record."""
        began = time.perf_counter()
        jobs = sorted(self.workload.jobs, key=lambda j: j.submit)
        t0 = min((j.submit for j in jobs), default=0.0)
        for spec in self.workload.cluster.machines:
            self.scheduler.machine_gained(self.workload.cluster.machine(spec), t0)
        for submit, group in groupby(jobs, key=lambda j: j.submit):
            self._push(submit, _Arrival(tuple(group)))
        for event in self.workload.machine_events:
            self._push(event.time, _MachineChange(event))
        state = self.scheduler.state
        while self.events:
            now, kind, _, payload = heapq.heappop(self.events)
            self._real_events -= kind is not _Kind.PROBE_END
            match payload:
                case _RunEnd(job_id, machine_id, token, outcome):
                    self._end(job_id, machine_id, token, outcome, now)
                case _Arrival(arrived):
                    self._execute(self.scheduler.submit([spec.job() for spec in arrived], now), now)
                    self._note_predictions(arrived, now)
                case _Staged():
                    self._staged(now)
                case _WakeUp():
                    wake = self.scheduler.wake_at()
                    if wake is not None and wake <= now:
                        self._execute(self.scheduler.wake(now), now)
                case _ProbeEnd(machine_id, token):
                    assert self.prober is not None  # probes are pushed only by a prober
                    self.prober.ended(machine_id, token, now)
                case _MachineChange(event):
                    self._machine(event, now)
            wake = self.scheduler.wake_at()
            if wake is not None and wake > now and wake != self._wake:
                self._wake = wake
                self._push(wake, _WakeUp())
            state.dirty_jobs.clear()
            state.dirty_machines.clear()
            self._probe(now)
        for machine, since in self.offline_since.items():
            self.offline.setdefault(machine, []).append((since, max(since, self._last_time())))
        return SimResult(
            workload=self.workload.name,
            policy=self.scheduler.policy.name,
            estimates=estimates,
            jobs=self._records(),
            segments=self.segments,
            power={m: p.power_watts for m, p in self.workload.cluster.platforms.items()},
            slots=self.slots,
            platform_of=self.platform_of,
            offline=self.offline,
            passes=self.scheduler.passes,
            wall_seconds=time.perf_counter() - began,
            orders=self.order_counts,
            grid=self.staging.record() if self.staging is not None else None,
            probes=self.prober.records if self.prober is not None else [],
            overcommits=self.overcommits,
        )

    def _push(self, at: float, payload: _Event) -> None:
        """Queue ``payload`` at ``at`` under its kind; the sequence number keeps ties in push order."""
        self._seq += 1
        self._real_events += payload.kind is not _Kind.PROBE_END
        heapq.heappush(self.events, (at, payload.kind, self._seq, payload))

    def _probe(self, now: float) -> None:
        """Once every event of this moment is handled, idle machines may probe, while the workload has events left."""
        if self.prober is None or self._real_events == 0 or (self.events and self.events[0][0] == now):
            return
        for run in self.prober.fill(self.scheduler.state, now):
            self._push(now + run.seconds, _ProbeEnd(run.machine, run.token))

    def _end(self, job_id: str, machine_id: str, token: int, outcome: str, now: float) -> None:
        """A run ends in truth (``outcome`` done, failed, oom or timeout); the scheduler hears of it unless the machine
        is unreachable (then on its return). A killed job is submitted again if the retry policy allows."""
        attempt = self.active.get((job_id, machine_id))
        if attempt is None or attempt.token != token:
            return
        if machine_id in self.offline_since:
            self.held.setdefault(machine_id, []).append((job_id, token, outcome))
            return
        self._close(job_id, machine_id, now, outcome)
        self.warm[machine_id] = self.specs[job_id].data
        if outcome == "done":
            orders = self.scheduler.job_ended(job_id, machine_id, now)
        else:
            reason = "simulated failure" if outcome == "failed" else f"killed: {outcome}"
            orders = self.scheduler.job_failed(job_id, machine_id, now, reason)
        self._execute(orders, now)
        again = (
            self.retry.retry(self.specs[job_id], outcome, now) if self.retry is not None and outcome in KILLS else None
        )
        if again is not None:
            self.specs[again.id] = again
            self.retried.append(again)
            self._push(now, _Arrival((again,)))

    def _machine(self, event: MachineEvent, now: float) -> None:
        """Outages: a lost machine's runs go on (healthy) or die; a returning one reports the survivors."""
        machine_id = event.machine
        if event.kind == "lost":
            self.offline_since[machine_id] = now
            if self.prober is not None:
                self.prober.preempt(machine_id, now)
            if not event.healthy:
                for job_id, m in [key for key in self.active if key[1] == machine_id]:
                    self._close(job_id, m, now, "lost")
            self._execute(self.scheduler.machine_lost(machine_id, now), now)
            return
        if event.kind != "gained":
            raise ValueError(f"machine event kind must be 'lost' or 'gained', got {event.kind!r}")
        since = self.offline_since.pop(machine_id, None)
        if since is not None:
            self.offline.setdefault(machine_id, []).append((since, now))
        known = self.scheduler.state.machines.get(machine_id)
        if known is None:
            if event.platform is None:
                raise ValueError(f"new machine {machine_id!r} needs a platform")
            self.platform_of[machine_id] = event.platform
            self.slots[machine_id] = event.slots
            power = self.workload.cluster.platforms[event.platform].power_watts
            known = Machine(machine_id, event.platform, event.slots, power)
        alive = [job_id for job_id, m in self.active if m == machine_id]
        self._execute(self.scheduler.machine_gained(known, now, healthy=alive), now)
        for job_id, token, outcome in self.held.pop(machine_id, []):
            self._end(job_id, machine_id, token, outcome, now)

    def _execute(self, orders: list[Order], now: float) -> None:
        """Act as the resource manager: start, stop and move runs as ordered."""
        for order in orders:
            self.order_counts[order.kind.value] = self.order_counts.get(order.kind.value, 0) + 1
            kind = order.kind
            if kind in (OrderKind.CANCEL, OrderKind.PAUSE, OrderKind.MIGRATE):
                keep = kind is not OrderKind.CANCEL
                self._stop(order.job, order.machine, now, "paused" if keep else "cancelled", keep)
            if kind in (OrderKind.START, OrderKind.REPLICATE, OrderKind.MIGRATE):
                target = order.target if kind is OrderKind.MIGRATE else order.machine
                # the event loop gives every migration it issues a target (EventLoop._apply)
                assert target is not None
                self._start(order.job, target, now, order.nodes)

    def _start(self, job_id: str, machine_id: str, now: float, nodes: tuple[tuple[int, int], ...] = ()) -> None:
        if self.prober is not None:
            # a real job takes the machine from its probe at once
            self.prober.preempt(machine_id, now)
        spec = self.specs[job_id]
        platform = self.platform_of[machine_id]
        done = self.true_progress.get(job_id, 0.0) if platform in spec.checkpoint else 0.0
        seconds = spec.true_times[platform] * (1.0 - done)
        gain = self.workload.warm_gain.get((spec.algorithm, platform))
        if gain and spec.data is not None and self.warm.get(machine_id) == spec.data:
            seconds *= 1.0 - gain
        self._token += 1
        self.active[(job_id, machine_id)] = _Attempt(self._token, now, done, seconds, nodes)
        self._hold_memory(spec, machine_id, nodes, 1)
        if self.staging is not None and self.staging.start(spec, machine_id, now, seconds):
            self._push_staged()
            # it computes once its inputs are at its site: see _staged
            return
        killed = kill(spec, seconds) if self.enforce else None
        if killed is not None and (not spec.fails or killed[0] < seconds * spec.fail_at):
            self._push(now + killed[0], _RunEnd(job_id, machine_id, self._token, killed[1]))
        elif spec.fails:
            self._push(now + seconds * spec.fail_at, _RunEnd(job_id, machine_id, self._token, "failed"))
        else:
            self._push(now + seconds, _RunEnd(job_id, machine_id, self._token, "done"))

    def _hold_memory(self, spec: JobSpec, machine_id: str, nodes: tuple[tuple[int, int], ...], sign: int) -> None:
        """Add (``sign`` 1) or remove (-1) the job's true memory on its nodes; count a start that overcommits one."""
        size = self.node_memory.get(machine_id)
        if size is None or not spec.true_memory:
            return
        held = nodes or ((0, spec.size),)
        each = spec.true_memory / sum(slots for _, slots in held)
        over = False
        for node, slots in held:
            key = (machine_id, node)
            self.memory_in_use[key] = self.memory_in_use.get(key, 0.0) + sign * slots * each
            over |= self.memory_in_use[key] > size
        self.overcommits += sign > 0 and over

    def _stop(self, job_id: str, machine_id: str, now: float, outcome: str, keep: bool) -> None:
        attempt = self.active.get((job_id, machine_id))
        if attempt is None:
            return
        spec = self.specs[job_id]
        if keep and self.platform_of[machine_id] in spec.checkpoint and attempt.duration > 0:
            fraction = min((now - attempt.start) / attempt.duration, 1.0)
            self.true_progress[job_id] = attempt.progress0 + (1.0 - attempt.progress0) * fraction
        self._close(job_id, machine_id, now, outcome)

    def _staged(self, now: float) -> None:
        """Santos-Neto et al. 2004: runs whose inputs reached their site now compute; their ends (or failures) are pushed."""
        assert self.staging is not None
        for job_id, machine_id, staged, compute in self.staging.arrived(now):
            spec, token = self.specs[job_id], self.active[(job_id, machine_id)].token
            end = max(staged + compute * (spec.fail_at if spec.fails else 1.0), now)
            self._push(end, _RunEnd(job_id, machine_id, token, "failed" if spec.fails else "done"))
        self._push_staged()

    def _push_staged(self) -> None:
        wake = self.staging.next_wake() if self.staging is not None else None
        if wake is not None:
            self._push(wake, _Staged())

    def _close(self, job_id: str, machine_id: str, now: float, outcome: str) -> None:
        attempt = self.active.pop((job_id, machine_id))
        spec = self.specs[job_id]
        self._hold_memory(spec, machine_id, attempt.nodes, -1)
        share = spec.size / self.slots[machine_id]
        self.segments.append(
            Segment(
                job_id,
                machine_id,
                self.platform_of[machine_id],
                attempt.start,
                now,
                outcome,
                share,
                spec.algorithm,
                attempt.nodes,
            )
        )
        # Santos-Neto et al. 2004: log its transfer, abort it if unfinished
        if self.staging is not None:
            self.staging.stop(job_id, machine_id, now, outcome)
            self._push_staged()

    def _note_predictions(self, arrived: tuple[JobSpec, ...], now: float) -> None:
        """The start the plan gives each job just submitted: now if it started, its planned start if it has one."""
        jobs = self.scheduler.state.jobs
        for spec in arrived:
            job = jobs[spec.id]
            if job.status is JobStatus.RUNNING:
                self.predicted_start[spec.id] = now
            elif job.planned_start is not None:
                self.predicted_start[spec.id] = job.planned_start

    def _last_time(self) -> float:
        return max((s.end for s in self.segments), default=0.0)

    def _records(self) -> list[JobOutcome]:
        state = self.scheduler.state
        last: dict[str, tuple[float, str]] = {}
        for s in self.segments:
            if s.outcome in ENDED:
                last[s.job] = (s.start, s.platform)
        out = []
        for spec in [*self.workload.jobs, *self.retried]:
            job = state.jobs.get(spec.id)
            status = job.status.value if job is not None else JobStatus.PENDING.value
            start, platform = last.get(spec.id, (None, None))
            end = job.ended if job is not None else None
            estimate = job.estimates.get(platform) if job is not None and platform is not None else None
            out.append(
                JobOutcome(
                    id=spec.id,
                    algorithm=spec.algorithm,
                    submit=spec.submit,
                    deadline=spec.deadline,
                    priority=spec.priority,
                    status=status,
                    start=start,
                    end=end,
                    platform=platform,
                    estimate=estimate,
                    requested=requested_seconds(spec.params),
                    predicted_start=self.predicted_start.get(spec.id),
                    memory=spec.memory,
                    true_memory=spec.true_memory,
                )
            )
        return out


def simulate(
    workload: Workload,
    policy: Policy,
    oracle: Oracle,
    *,
    estimates: str = "",
    threshold: float = 0.25,
    prober: IdleProber | None = None,
    enforce: bool = False,
    retry: RetryPolicy | None = None,
) -> SimResult:
    """Run ``workload`` under ``policy`` with what ``oracle`` tells the scheduler; ``prober`` probes in idle time;
    ``enforce`` kills at the jobs' time and memory limits, ``retry`` submits killed jobs again (module docstring)."""
    return Simulation(workload, policy, oracle, threshold, prober, enforce=enforce, retry=retry).run(estimates)


def backlog(workload: Workload, policy: Policy, oracle: Oracle) -> EventLoop:
    """A scheduler with ``workload``'s machines online and every job pending at t=0 with its estimates.

    The starting point for timing one scheduling pass (benchmarks); nothing has been scheduled yet.
    A workload with sites gets its data servers, as the simulator gives them.
    """
    scheduler = EventLoop(policy, oracle)
    Staging.attach(workload, scheduler.state)
    for machine in workload.cluster.machines:
        scheduler.machine_gained(workload.cluster.machine(machine), 0.0)
    for spec in workload.jobs:
        job = spec.job()
        job.estimates = seconds(oracle.estimate(job.algorithm, job.params))
        scheduler.state.add_job(job)
    return scheduler
