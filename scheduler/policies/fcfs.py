"""First come, first served: the strawman of Kontothanassis & Goddeau 2004 (section 5) and the left of Brandstätter-Müller et al. 2011's Figs 11 and 13."""

from __future__ import annotations

from scheduler import orders as o
from scheduler.orders import Order
from scheduler.policy import Context, Policy
from scheduler.state import Job


class FCFS(Policy):
    """Each job in queue order (arrival; a requeued job rejoins at the back) to the free machine idle longest.

    ``fastest_only=True`` is the variant of Fig 13: a job waits for a machine of its
    fastest platform (by estimate) instead of taking any free one. A job that finds no
    room keeps the many-slot machines it could use for itself, so smaller later jobs
    cannot starve it; on one-slot machines that changes nothing. On a machine of nodes a job takes the nodes
    that fit it (:mod:`scheduler.nodes`).
    """

    # it gives each start its nodes on a machine of nodes
    places_nodes = True
    # a start takes only nodes with the job's memory free
    plans_memory = True

    def __init__(self, fastest_only: bool = False) -> None:
        self.fastest_only = fastest_only
        self.name = "fcfs-fastest" if fastest_only else "fcfs"

    def schedule(self, ctx: Context) -> list[Order]:
        """START as many jobs as fit, oldest first."""
        state = ctx.state
        idle = [m for m in state.machines.values() if m.online and m.used < m.slots]
        if not idle:
            return []
        idle.sort(key=lambda m: m.idle_since)
        rooms = {m.id: m.room() for m in idle}
        present = {p for p, machines in state.platforms.items() if any(m.online for m in machines)}
        blocked: set[str] = set()
        out: list[Order] = []
        for job_id in state.pending:
            if not rooms:
                break
            job = state.jobs[job_id]
            if not state.ready(job):
                continue
            eligible = self._platforms(job, present)
            usable = (state.machines[m] for m in rooms if m not in blocked)
            fits = ((m, m.needs(job)) for m in usable if m.platform in eligible)
            choice = next(
                ((m, needs, nodes) for m, needs in fits if (nodes := rooms[m.id].place(needs)) is not None), None
            )
            if choice is None:
                blocked.update(
                    m for m in rooms if state.machines[m].platform in eligible and state.machines[m].slots > 1
                )
                continue
            machine, needs, nodes = choice
            out.append(o.start(job.id, machine.id, nodes=nodes))
            rooms[machine.id].take(nodes, needs.memory)
            if rooms[machine.id].total == 0:
                del rooms[machine.id]
        return out

    def _platforms(self, job: Job, present: set[str]) -> set[str]:
        """Platforms of the cluster the job may take: all it can run on, or only its fastest by estimate."""
        eligible = {p for p in job.estimates if p in present}
        known = {p: s for p, s in job.estimates.items() if s is not None and p in eligible}
        if not self.fastest_only or not known:
            return eligible
        best = min(known.values())
        return {p for p, s in known.items() if s == best}
