"""The event loop of Brandstätter-Müller et al. 2011 (Figs 6-10): new jobs, a machine gained or lost, a job ended or
failed change the state, the policy decides, the loop applies (the paper's letters for them: docs/scheduler.md).

The same :class:`EventLoop` runs inside the service (wall-clock time, orders to the
database) and inside the simulator (virtual time, orders to simulated machines).
Each handler returns the orders the resource manager must carry out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from scheduler import orders as o
from scheduler.orders import Order, OrderKind
from scheduler.policy import Context, Event, Policy
from scheduler.run_times import Oracle, seconds
from scheduler.state import INF, Job, JobStatus, Machine, Run, State

Observer = Callable[[Job, Run, Machine, float], None]
Terminated = Callable[[Job, float], None]
Notifier = Callable[[Job, str], None]


class OrderError(ValueError):
    """A policy returned an order the state does not allow (a bug in the policy)."""


class EventLoop:
    """Owns the state; turns events into scheduling passes and applies the policy's orders.

    ``threshold``: an ended job triggers a full pass only when its wall time differs
    from its estimate by more than this fraction; otherwise the existing plan goes on.
    ``on_observation`` receives every cleanly finished run (to store as a measurement);
    ``on_notify`` receives messages for users (failures, dropped dependents);
    ``on_termination`` hears of every run that ends by itself, cleanly or with an error, and its wall seconds
    (an estimator of users' recent run times: :mod:`simulator.last_two`).
    """

    def __init__(
        self,
        policy: Policy,
        oracle: Oracle,
        state: State | None = None,
        *,
        threshold: float = 0.25,
        on_observation: Observer | None = None,
        on_notify: Notifier | None = None,
        on_termination: Terminated | None = None,
    ) -> None:
        self.policy = policy
        self.oracle = oracle
        self.state = state or State()
        self.threshold = threshold
        self.on_observation = on_observation
        self.on_notify = on_notify
        self.on_termination = on_termination
        self.passes = 0

    # --- events -----------------------------------------------------------------------------------------------

    def submit(self, jobs: Iterable[Job], now: float) -> list[Order]:
        """New jobs: estimate them, then plan; only a high-priority arrival may disturb running jobs (Fig 7)."""
        state = self.state
        new: list[str] = []
        issued: list[Order] = []
        for job in jobs:
            platforms = list(job.platforms) if job.platforms else None
            job.estimates = seconds(self.oracle.estimate(job.algorithm, job.params, platforms, job.features))
            state.add_job(job)
            new.append(job.id)
            if not job.estimates:
                self._give_up(job, JobStatus.DROPPED, now, "no platform can run this algorithm", issued)
                continue
            lost = [d for d in (*job.depends_on, job.stream_from) if d is not None and self._doomed(d)]
            if lost:
                self._give_up(job, JobStatus.DROPPED, now, f"dependency {lost[0]} did not complete", issued)
        high = any(state.jobs[j].priority > 0 for j in new)
        return issued + self._pass(Event.NEW_JOBS, now, preempt=high, arrivals=tuple(new))

    def machine_gained(self, machine: Machine, now: float, healthy: Iterable[str] = ()) -> list[Order]:
        """A machine gained, new or a lost one back: its healthy jobs resume, their duplicates are cancelled (Figs 8, 9)."""
        state = self.state
        known = state.machines.get(machine.id)
        issued: list[Order] = []
        if known is None:
            machine.idle_since = now
            state.add_machine(machine)
        else:
            known.online = True
            state.touch_machine(known)
            self._reconcile(known, set(healthy), now, issued)
        return issued + self._pass(Event.MACHINE_GAINED, now, rebalance=True)

    def machine_lost(self, machine_id: str, now: float) -> list[Order]:
        """A machine lost: its jobs are rescheduled elsewhere; their runs there are kept as orphans in case it returns."""
        state = self.state
        machine = state.machines[machine_id]
        machine.online = False
        state.touch_machine(machine)
        for job_id in machine.running:
            job = state.jobs[job_id]
            job.runs[machine_id].orphan = True
            state.touch(job)
            if not job.active_runs() and job.status is JobStatus.RUNNING:
                state.requeue(job)
        return self._pass(Event.MACHINE_LOST, now)

    def job_ended(self, job_id: str, machine_id: str, now: float) -> list[Order]:
        """A job ended: store the observation, cancel duplicates; replan only if the run was far from its estimate (Fig 10)."""
        state = self.state
        job = state.jobs.get(job_id)
        if job is None or machine_id not in job.runs:
            return []
        run = state.end_run(job, machine_id, now)
        machine = state.machines[machine_id]
        machine.warm = job.data
        issued: list[Order] = []
        if job.status.final:
            return issued + self._after_end(machine, now, INF)
        wall = now - run.start
        if self.on_observation is not None and run.progress0 == 0.0:
            self.on_observation(job, run, machine, wall)
        if self.on_termination is not None:
            self.on_termination(job, wall)
        for other in list(job.runs.values()):
            reason = f"duplicate: finished on {machine_id}"
            issued.append(o.cancel(job.id, other.machine, requeue=False, reason=reason)._replace(attempt=other.attempt))
            state.end_run(job, other.machine, now)
        state.finish(job, JobStatus.DONE, now)
        deviation = abs(wall - run.estimate) / run.estimate if run.estimate else INF
        return issued + self._after_end(machine, now, deviation)

    def job_failed(self, job_id: str, machine_id: str, now: float, reason: str = "") -> list[Order]:
        """A job failed: it fails (unless a copy still runs); its dependents are dropped and streaming consumers stopped."""
        state = self.state
        job = state.jobs.get(job_id)
        if job is None or machine_id not in job.runs:
            return []
        run = state.end_run(job, machine_id, now)
        if self.on_termination is not None:
            self.on_termination(job, now - run.start)
        issued: list[Order] = []
        # runs left are orphans: _give_up cancels them too
        if not job.status.final and not job.active_runs():
            self._give_up(job, JobStatus.FAILED, now, reason or f"terminated with an error on {machine_id}", issued)
        return issued + self._pass(Event.JOB_FAILED, now)

    def wake_at(self) -> float | None:
        """When the policy wants a pass though nothing happens: its ``wake_at()`` (e.g. a wait runs out)."""
        return self.policy.wake_at()

    def wake(self, now: float) -> list[Order]:
        """Wake up: the pass the policy asked for at ``now`` (see :meth:`wake_at`)."""
        return self._pass(Event.WAKE_UP, now)

    # --- passes -----------------------------------------------------------------------------------------------

    def _pass(
        self, event: Event, now: float, preempt: bool = False, rebalance: bool = False, arrivals: tuple[str, ...] = ()
    ) -> list[Order]:
        """Ask the policy and apply its orders; once more if those orders freed machines while jobs wait."""
        if not self.state.pending and not rebalance and not self.policy.replicates:
            self.state.replan([])
            return []
        ctx = Context(now, self.state, self.oracle, event, preempt, rebalance, arrivals)
        self.passes += 1
        issued = self._apply(self.policy.schedule(ctx), ctx)
        if self.state.pending and any(order.kind in (OrderKind.CANCEL, OrderKind.PAUSE) for order in issued):
            self.passes += 1
            issued += self._apply(self.policy.schedule(Context(now, self.state, self.oracle, Event.FOLLOW_UP)), ctx)
        return issued

    def _after_end(self, machine: Machine, now: float, deviation: float) -> list[Order]:
        """Follow the plan if the estimate held and the plan has work for the freed machine; else a full pass."""
        if deviation > self.threshold or self.policy.replans_every_end:
            return self._pass(Event.JOB_ENDED, now)
        issued = self._dispatch(now)
        if machine.online and machine.free > 0 and (self.state.pending or self.policy.replicates):
            issued += self._pass(Event.JOB_ENDED, now)
        return issued

    def _dispatch(self, now: float) -> list[Order]:
        """Start planned jobs at the head of their machine's queue as soon as they fit and are ready."""
        state = self.state
        issued: list[Order] = []
        for machine_id, queue in state.plan.items():
            machine = state.machines[machine_id]
            while queue and machine.free > 0:
                job = state.jobs[queue[0]]
                if job.status is not JobStatus.PENDING or job.planned_machine != machine_id:
                    queue.pop(0)
                    continue
                if machine.allot(job) is None or not state.ready(job):
                    break
                queue.pop(0)
                run = state.start_run(job, machine, now)
                issued.append(o.start(job.id, machine_id, "planned")._replace(attempt=run.attempt))
        return issued

    def _apply(self, orders: list[Order], ctx: Context) -> list[Order]:
        """Carry out a pass's orders on the state; returns those for the resource manager."""
        state, now = self.state, ctx.now
        deferrals: list[tuple[Job, str, float]] = []
        issued: list[Order] = []
        for order in orders:
            job = state.jobs.get(order.job)
            if job is None:
                raise OrderError(f"{order}: unknown job")
            kind = order.kind
            if kind is OrderKind.DEFER:
                self._check_machine(order, order.machine, job)
                deferrals.append((job, order.machine, order.at if order.at is not None else now))
                continue
            if kind in (OrderKind.CANCEL, OrderKind.PAUSE, OrderKind.MIGRATE):
                if not (ctx.preempt or ctx.rebalance):
                    raise OrderError(
                        f"{order}: running jobs may only be disturbed by a high-priority arrival or a gained machine"
                    )
                run = self._stop(order, job, now, keep=kind is not OrderKind.CANCEL)
            if kind in (OrderKind.START, OrderKind.MIGRATE, OrderKind.REPLICATE):
                target = order.target if kind is OrderKind.MIGRATE else order.machine
                if target is None:
                    raise OrderError(f"{order}: a migration needs a target machine")
                run = self._launch(order, job, target, now)
            issued.append(order._replace(attempt=run.attempt, nodes=run.nodes))
        state.replan(deferrals)
        return issued

    def _launch(self, order: Order, job: Job, machine_id: str, now: float) -> Run:
        """Start a run of ``job`` on ``machine_id`` after checking the order is possible."""
        machine = self._check_machine(order, machine_id, job)
        replica = order.kind is OrderKind.REPLICATE
        if replica and (job.status is not JobStatus.RUNNING or machine_id in job.runs):
            raise OrderError(f"{order}: only a running job can be replicated, once per machine")
        if not replica and job.status is not JobStatus.PENDING:
            raise OrderError(f"{order}: job is {job.status.value}, not pending")
        if machine.free < job.size:
            raise OrderError(f"{order}: machine {machine_id} has {machine.free} free slots, job needs {job.size}")
        if machine.node_slots and machine.allot(job, order.nodes) is None:
            raise OrderError(f"{order}: the nodes of {machine_id} cannot give {job.id} {machine.needs(job)} slots")
        if not machine.node_slots and machine.allot(job) is None:
            raise OrderError(f"{order}: machine {machine_id} has not the memory {job.id} needs free")
        if not replica and not self.state.ready(job):
            raise OrderError(f"{order}: dependencies of {job.id} are not satisfied")
        return self.state.start_run(job, machine, now, order.nodes)

    def _stop(self, order: Order, job: Job, now: float, keep: bool) -> Run:
        """End the job's run on the order's machine; a pause keeps its progress where the platform can checkpoint."""
        if order.machine not in job.runs:
            raise OrderError(f"{order}: job has no run on {order.machine}")
        state = self.state
        platform = state.machines[order.machine].platform
        run = state.end_run(job, order.machine, now)
        job.progress = run.progress_at(now) if keep and platform in job.checkpoint else run.progress0
        if not job.active_runs():
            if order.requeue or keep:
                state.requeue(job)
            else:
                state.finish(job, JobStatus.CANCELLED, now, order.reason)
        return run

    def _check_machine(self, order: Order, machine_id: str, job: Job) -> Machine:
        machine = self.state.machines.get(machine_id)
        if machine is None or not machine.online:
            raise OrderError(f"{order}: machine {machine_id} is unknown or offline")
        if machine.platform not in job.estimates:
            raise OrderError(f"{order}: {job.algorithm} has no implementation on platform {machine.platform}")
        return machine

    # --- failures and returns ---------------------------------------------------------------------------------

    def _doomed(self, job_id: str) -> bool:
        job = self.state.jobs.get(job_id)
        return job is not None and job.status.final and job.status is not JobStatus.DONE

    def _give_up(self, job: Job, status: JobStatus, now: float, message: str, issued: list[Order]) -> None:
        """Finish ``job`` unsuccessfully, tell its user, and do the same to everything that needed it."""
        state = self.state
        todo = [(job, status, message)]
        while todo:
            current, final, text = todo.pop()
            for run in list(current.runs.values()):
                issued.append(
                    o.cancel(current.id, run.machine, requeue=False, reason=text)._replace(attempt=run.attempt)
                )
                state.end_run(current, run.machine, now)
            state.finish(current, final, now, text)
            if self.on_notify is not None:
                self.on_notify(current, text)
            for dep_id in state.dependents.get(current.id, ()):
                dep = state.jobs[dep_id]
                if not dep.status.final:
                    todo.append((dep, JobStatus.DROPPED, f"dependency {current.id} did not complete"))
            for consumer_id in state.consumers.get(current.id, ()):
                consumer = state.jobs[consumer_id]
                if not consumer.status.final:
                    stopped = JobStatus.FAILED if consumer.status is JobStatus.RUNNING else JobStatus.DROPPED
                    todo.append((consumer, stopped, f"streaming producer {current.id} did not complete"))

    def _reconcile(self, machine: Machine, healthy: set[str], now: float, issued: list[Order]) -> None:
        """A lost machine is back: resume its healthy jobs and cancel their replacements, or drop dead runs."""
        state = self.state
        for job_id in list(machine.running):
            job = state.jobs[job_id]
            run = job.runs[machine.id]
            if not run.orphan:
                continue
            if job_id not in healthy:
                state.end_run(job, machine.id, now)
                continue
            if job.status.final:
                reason = "duplicate: already finished elsewhere"
                issued.append(o.cancel(job_id, machine.id, requeue=False, reason=reason)._replace(attempt=run.attempt))
                state.end_run(job, machine.id, now)
                continue
            run.orphan = False
            for other in [r for r in job.runs.values() if r.machine != machine.id]:
                reason = f"duplicate: {machine.id} is back"
                issued.append(
                    o.cancel(job_id, other.machine, requeue=False, reason=reason)._replace(attempt=other.attempt)
                )
                state.end_run(job, other.machine, now)
            if job.status is JobStatus.PENDING:
                state.pending.pop(job_id, None)
                job.status = JobStatus.RUNNING
            state.touch(job)
