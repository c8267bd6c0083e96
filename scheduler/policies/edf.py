"""EDF with heterogeneous deferral: the default policy (Brandstätter-Müller et al. 2011, section 3, Figs 11-14)."""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping, Sequence
from typing import Literal

import numpy as np

from scheduler import orders as o
from scheduler.orders import Order, OrderKind
from scheduler.planner import Pools, Slot, check_rank, cost_matrix, rank_seconds, ready_at, running_total
from scheduler.policy import Context, Policy
from scheduler.state import INF, Job, JobStatus, Run, State


class EDFDeferral(Policy):
    """Jobs in (priority, deadline) order, each where its expected completion is earliest.

    Completion on a platform is max(now, when a machine of it is free, when the job's
    dependencies allow) + the estimated run time there, so a job may wait for a busy
    fast machine rather than take a free slow one (Fig 12); such a job is DEFERred to
    that machine and starts when it frees. Jobs with no deadline come after those with
    one; ties go longest first under ``objective="makespan"`` (Fig 11's 7 -> 5) or
    shortest first under ``"flowtime"`` (the default: mean completion), then by arrival.
    ``rank`` is what "longest" measures: the job's best estimate (default) or, HEFT-style,
    its mean or median over the platforms it can use (``edf:objective=makespan,rank=mean``:
    on unrelated CPU/GPU machines the best time alone misjudges which jobs are big).

    ``deferral=False`` is plain EDF: free machines only. ``power=True`` places a job,
    among platforms that still meet its deadline, where power x time is least. A
    high-priority arrival that must wait may cancel (or pause, where the
    implementation can checkpoint) one lower-priority running job when the plan's
    total completion then drops (Fig 14). When a machine joins, a running job moves to
    an idle machine if that cuts its remaining time by more than ``rebalance_gain``.

    Memory: on a machine with a memory size a job is placed, now or deferred, only where the
    memory it is planned with (its user's, else the oracle's memory limit) stays free for its whole
    estimated run beside everything else planned there (:class:`scheduler.planner.Pools`); a job
    larger than the machine's memory is never placed there, and a rebalance moves none onto it.
    """

    # placements now and later count each machine's free memory
    plans_memory = True

    def __init__(
        self,
        objective: Literal["makespan", "flowtime"] = "flowtime",
        rank: Literal["best", "mean", "median"] = "best",
        deferral: bool = True,
        power: bool = False,
        preempt: bool = True,
        rebalance_gain: float = 0.3,
        max_victims: int = 8,
    ) -> None:
        if objective not in ("makespan", "flowtime"):
            raise ValueError(f"objective must be 'makespan' or 'flowtime', got {objective!r}")
        self.objective = objective
        self.rank = check_rank(rank)
        self.deferral = deferral
        self.power = power
        self.preempt = preempt
        self.rebalance_gain = rebalance_gain
        self.max_victims = max_victims
        self.name = "edf" if deferral else "edf-nodefer"
        self._rows: dict[str, tuple[float | None, ...]] = {}
        self._rows_for: list[str] = []

    def schedule(self, ctx: Context) -> list[Order]:
        """Plan every pending job; then preempt for high-priority arrivals and rebalance onto gained machines."""
        state, now = ctx.state, ctx.now
        jobs = [state.jobs[j] for j in state.pending]
        slots, total = self.plan(state, now, jobs)
        orders = _orders(slots)
        if ctx.preempt and self.preempt:
            orders = self._preempt(ctx, jobs, slots, total) or orders
        if ctx.rebalance:
            orders += self._rebalance(ctx, slots)
        return orders

    def plan(
        self,
        state: State,
        now: float,
        jobs: Sequence[Job],
        freed: Mapping[str, str] | None = None,
        progress: Mapping[str, float] | None = None,
    ) -> tuple[list[Slot], float]:
        """Place ``jobs`` in EDF order; returns the placements and the sum of their expected completions.

        ``freed`` (machine -> job) treats those runs as gone and ``progress`` overrides
        checkpointed fractions: how a candidate preemption is weighed.
        """
        pools = Pools(state, now, freed)
        platforms = sorted(pools.power)
        if platforms != self._rows_for or len(self._rows) > 4 * len(jobs) + 1024:
            self._rows, self._rows_for = {}, platforms
        matrix, blind = cost_matrix(jobs, platforms, progress, self._rows)
        rows = matrix.tolist()
        blind_rows = blind.tolist()
        fast = not pools.profiles and not self.power and self.deferral
        heaps = [pools.heaps.get(p, []) for p in platforms]
        tops = [h[0][0] if h else INF for h in heaps]
        placed: dict[str, Slot] = {}
        slots: list[Slot] = []
        total = 0.0
        for i, r in _sequence(self._order(jobs, matrix, blind), jobs, state, placed, now):
            job = jobs[i]
            if fast and job.size == 1 and not blind_rows[i]:
                # inner loop for one-slot machines: each platform's earliest-free machine, earliest completion wins
                # (conditional expressions rather than max(): this loop runs jobs x platforms times per pass)
                t0 = now if now > r else r  # noqa: FURB136
                best_end = best_start = INF
                best = k = -1
                for seconds, free_at in zip(rows[i], tops):
                    k += 1
                    if seconds != INF:
                        begin = t0 if t0 > free_at else free_at  # noqa: FURB136
                        end = begin + seconds
                        if end < best_end or (end == best_end and begin < best_start):
                            best_end, best_start, best = end, begin, k
                if best < 0 or best_end == INF:
                    continue
                heap = heaps[best]
                _, busy, since, machine = heap[0]
                heapq.heapreplace(heap, (best_end, 1, since, machine))
                tops[best] = heap[0][0]
                slot = Slot(job, machine, best_start, best_end, best_start <= now and busy == 0 and r <= now)
            else:
                costs = None if blind_rows[i] else [(p, c) for p, c in zip(platforms, rows[i]) if c != INF]
                found = self._place(pools, job, costs, r)
                tops = [h[0][0] if h else INF for h in heaps]
                if found is None:
                    continue
                slot = found
            placed[job.id] = slot
            slots.append(slot)
            if slot.end != INF:
                total += slot.end
        return slots, total

    def _order(self, jobs: Sequence[Job], matrix: np.ndarray, blind: np.ndarray) -> list[int]:
        """Indices of ``jobs`` by (priority desc, deadline, ranked estimate longest or shortest first, arrival)."""
        if not jobs:
            return []
        best = np.where(blind, 0.0, rank_seconds(matrix, self.rank))
        tie = -best if self.objective == "makespan" else best
        deadline = np.array([INF if j.deadline is None else j.deadline for j in jobs])
        priority = np.array([j.priority for j in jobs])
        submit = np.array([j.submit for j in jobs])
        seq = np.array([j.seq for j in jobs])
        return np.lexsort((seq, submit, tie, deadline, -priority)).tolist()

    def _place(self, pools: Pools, job: Job, job_costs: list[tuple[str, float]] | None, r: float) -> Slot | None:
        """Book the machine where ``job`` completes earliest (or, in power mode, uses least energy in time)."""
        now = pools.now
        if job_costs is None:
            if r > now:
                return None
            hit = pools.idle_now(job, [p for p in job.estimates if p in pools.power])
            if hit is None:
                return None
            platform, machine = hit
            pools.take(job, platform, machine, now, INF)
            return Slot(job, machine, now, INF, True)
        options = pools.options(job, job_costs, max(now, r))
        if not self.deferral:
            options = [opt for opt in options if pools.startable(opt[2], opt[3], opt[1])]
        if not options:
            return None
        end, begin, platform, machine = self._choose(pools, job, options)
        starts_now = r <= now and pools.startable(platform, machine, begin)
        pools.take(job, platform, machine, begin, end)
        return Slot(job, machine, begin, end, starts_now)

    def _choose(
        self, pools: Pools, job: Job, options: list[tuple[float, float, str, str]]
    ) -> tuple[float, float, str, str]:
        """Earliest completion; in power mode the least energy among options that meet the deadline."""
        if self.power:
            meets = [opt for opt in options if job.deadline is None or opt[0] <= job.deadline]
            if meets:
                return min(meets, key=lambda opt: (_energy(pools, job, opt), opt))
        return min(options)

    def _preempt(self, ctx: Context, jobs: list[Job], slots: list[Slot], total: float) -> list[Order] | None:
        """For each high-priority arrival that must wait, free the machine whose running job's loss lowers the total most."""
        state, now = ctx.state, ctx.now
        best_total = total + running_total(state, now)
        freed: dict[str, str] = {}
        progress: dict[str, float] = {}
        victims: list[tuple[Job, Run, bool]] = []
        for job_id in ctx.arrivals:
            high = state.jobs[job_id]
            if high.priority <= 0 or high.status is not JobStatus.PENDING:
                continue
            if any(s.job.id == job_id and s.now for s in slots):
                continue
            best = None
            for victim, run in self._candidates(state, high, now, freed):
                keep = state.machines[run.machine].platform in victim.checkpoint
                trial_freed = {**freed, run.machine: victim.id}
                trial_progress = {**progress, victim.id: run.progress_at(now) if keep else 0.0}
                trial_jobs = jobs + [v for v, _, _ in victims] + [victim]
                trial_slots, trial_total = self.plan(state, now, trial_jobs, trial_freed, trial_progress)
                trial_total += running_total(state, now, trial_freed.values())
                if trial_total < best_total - 1e-9:
                    best_total = trial_total
                    best = (victim, run, keep, trial_slots, trial_freed, trial_progress)
            if best is not None:
                victim, run, keep, slots, freed, progress = best
                victims.append((victim, run, keep))
        if not victims:
            return None
        return _preemption_orders(victims, slots, state)

    def _candidates(self, state: State, high: Job, now: float, freed: Mapping[str, str]) -> list[tuple[Job, Run]]:
        """Lower-priority jobs with one run on a one-slot machine of a platform ``high`` can use; longest remaining first."""
        usable = {p for p, s in high.estimates.items() if s is not None}
        found = []
        for machine in state.machines.values():
            if not machine.online or machine.slots != 1 or machine.platform not in usable or machine.id in freed:
                continue
            for job_id in machine.running:
                job = state.jobs[job_id]
                run = job.runs[machine.id]
                if job.priority < high.priority and len(job.runs) == 1 and not run.orphan:
                    found.append((job, run))
        found.sort(key=lambda jr: -(jr[1].end_after(now) - now))
        return found[: self.max_victims]

    def _rebalance(self, ctx: Context, slots: list[Slot]) -> list[Order]:
        """Move running jobs onto machines left idle by the plan when that saves more than ``rebalance_gain`` of their time."""
        state, now = ctx.state, ctx.now
        used = {s.machine for s in slots}
        moved: set[str] = set()
        out: list[Order] = []
        running = _running_single(state)
        for machine in state.machines.values():
            if not machine.online or machine.slots != 1 or machine.running or machine.id in used:
                continue
            best = None
            for job in running:
                if job.id in moved or job.size != 1 or machine.allot(job) is None:
                    continue
                run = next(iter(job.runs.values()))
                left = run.end_after(now) - now
                seconds = job.estimates.get(machine.platform)
                if seconds is None or left == INF or left <= 0:
                    continue
                source = state.machines[run.machine].platform
                keep = source in job.checkpoint and machine.platform in job.checkpoint
                after = seconds * (1.0 - run.progress_at(now)) if keep else seconds
                gain = left - after
                if gain > self.rebalance_gain * left and (best is None or gain > best[0]):
                    best = (gain, job, run, keep)
            if best is not None:
                _, job, run, keep = best
                moved.add(job.id)
                reason = f"rebalance onto {machine.id}"
                if keep:
                    out.append(o.migrate(job.id, run.machine, machine.id, reason))
                else:
                    out += [
                        o.cancel(job.id, run.machine, requeue=True, reason=reason),
                        o.start(job.id, machine.id, reason),
                    ]
        return out


def _sequence(
    order: list[int], jobs: Sequence[Job], state: State, placed: Mapping[str, Slot], now: float
) -> Iterator[tuple[int, float]]:
    """(index, earliest start its dependencies allow) in ``order``; a job waits until what it needs is placed."""
    if not any(j.depends_on or j.stream_from is not None for j in jobs):
        for i in order:
            yield i, -INF
        return
    rank = {jobs[i].id: r for r, i in enumerate(order)}
    heap = list(range(len(order)))  # ranks; sorted, so already a heap
    waiting: dict[str, list[int]] = {}
    while heap:
        i = order[heapq.heappop(heap)]
        job = jobs[i]
        r, blocker = ready_at(state, job, placed, now)
        if blocker is not None:
            if blocker in rank:
                waiting.setdefault(blocker, []).append(rank[job.id])
            continue
        yield i, r
        if job.id in placed:
            for waiter in waiting.pop(job.id, ()):
                heapq.heappush(heap, waiter)


def _running_single(state: State) -> list[Job]:
    """Running jobs with exactly one reachable run, on one-slot machines."""
    out = []
    for machine in state.machines.values():
        if machine.slots == 1:
            for job_id in machine.running:
                job = state.jobs[job_id]
                if len(job.runs) == 1 and not job.runs[machine.id].orphan:
                    out.append(job)
    return out


def _energy(pools: Pools, job: Job, option: tuple[float, float, str, str]) -> float:
    """Watts x estimated seconds of ``job`` under ``option``, scaled by its share of a many-slot machine."""
    end, begin, platform, machine = option
    share = job.size / pools.slots[machine] if machine in pools.slots else 1.0
    return pools.power[platform] * (end - begin) * share


def _orders(slots: list[Slot]) -> list[Order]:
    """START for placements that begin now, DEFER for the rest, in planning order."""
    start, defer = OrderKind.START, OrderKind.DEFER
    return [Order(start, s.job.id, s.machine) if s.now else Order(defer, s.job.id, s.machine, s.start) for s in slots]


def _preemption_orders(victims: list[tuple[Job, Run, bool]], slots: list[Slot], state: State) -> list[Order]:
    """Cancel or pause each victim, then the plan; a paused victim that restarts now elsewhere becomes one MIGRATE."""
    plan = _orders(slots)
    starts = {order.job: order for order in plan if order.kind is OrderKind.START}
    out: list[Order] = []
    merged: set[str] = set()
    for victim, run, keep in victims:
        reason = "preempted by a high-priority job"
        resumed = starts.get(victim.id)
        if keep and resumed is not None and resumed.machine != run.machine:
            out.append(o.migrate(victim.id, run.machine, resumed.machine, reason))
            merged.add(victim.id)
        elif keep:
            out.append(o.pause(victim.id, run.machine, reason))
        else:
            out.append(o.cancel(victim.id, run.machine, requeue=True, reason=reason))
    return out + [order for order in plan if not (order.kind is OrderKind.START and order.job in merged)]
