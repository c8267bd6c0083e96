"""The Affinity scheduler of Kontothanassis & Goddeau 2004 (section 4, Fig 11): a job waits for a machine whose cache holds its data, within a penalty."""

from __future__ import annotations

from scheduler import orders as o
from scheduler.orders import Order
from scheduler.policies.profile_driven import ProfileTable, WarmGain, warm_hit
from scheduler.policy import Context, Policy
from scheduler.state import INF, Job, Machine


class Affinity(Policy):
    """Kontothanassis & Goddeau 2004, section 4, Fig 11.

    Each pass, jobs in queue order first take a free machine whose cache holds their
    data set (the one idle longest), whatever its speed. Then each job left takes the
    first free machine (idle longest first) whose penalty it has already waited out:

        penalty = weight x (job cold - job hot) + (previous job cold - previous job hot)

    on that machine, where the previous job is the last one run there (the one whose
    data the cache would lose), cold is the oracle's estimate and hot is cold times
    the warm factor (given by ``warm_gain``, else learned: see :class:`ProfileTable`). The
    paper's weight is 0.5. The others keep waiting; :meth:`wake_at` tells the event loop
    when the first of them will have waited long enough for a machine that is free.
    """

    def __init__(self, warm_gain: WarmGain | None = None, weight: float = 0.5) -> None:
        if weight < 0:
            raise ValueError(f"weight must be >= 0, got {weight}")
        self.name = "affinity"
        self.weight = float(weight)
        self.profile = ProfileTable(warm_gain)
        self._last: dict[str, Job] = {}  # machine -> the job started there last
        self._wake: float | None = None

    def wake_at(self) -> float | None:
        """The time the next waiting job may take a machine that is free now (None: none waits for that)."""
        return self._wake

    def schedule(self, ctx: Context) -> list[Order]:
        """START cache hits, then jobs that have waited out a free machine's penalty; note when to look again."""
        state, now = ctx.state, ctx.now
        free = [m for m in state.machines.values() if m.online and m.used < m.slots]
        self.profile.learn(state, free)
        free.sort(key=lambda m: m.idle_since)
        room = {m.id: m.slots - m.used for m in free}
        holding: dict[str, list[Machine]] = {}
        for m in free:
            if m.warm is not None:
                holding.setdefault(m.warm, []).append(m)
        out: list[Order] = []
        left = []
        for job in (state.jobs[j] for j in state.pending):
            if not state.ready(job):
                continue
            candidates = holding.get(job.data, []) if job.data is not None else []
            hit = next((m for m in candidates if room[m.id] >= job.size and m.platform in job.estimates), None)
            if hit is None:
                left.append(job)
            else:
                self._start(job, hit, now, room, out)
        self._wake = None
        if not left:
            return out
        kept = {m.id: self._kept(m) for m in free}
        least = _least(free, room, kept)
        for job in left:
            due = {p: job.submit + self.weight * self.profile.hot_saving(job, p) for p in job.estimates if p in least}
            soonest = min((due[p] + least[p] for p in due), default=INF)
            # no free machine's penalty is waited out yet
            if soonest > now:
                if soonest != INF and (self._wake is None or soonest < self._wake):
                    self._wake = soonest
                continue
            chosen = next(
                (
                    m
                    for m in free
                    if room[m.id] >= job.size and m.platform in due and due[m.platform] + kept[m.id] <= now
                ),
                None,
            )
            if chosen is not None:
                self._start(job, chosen, now, room, out)
                least = _least(free, room, kept)
        return out

    def _kept(self, machine: Machine) -> float:
        """Seconds the data now in the machine's cache saves the job that last ran there (0 if nothing is cached)."""
        last = self._last.get(machine.id)
        return self.profile.hot_saving(last, machine.platform) if last is not None and warm_hit(last, machine) else 0.0

    def _start(self, job: Job, machine: Machine, now: float, room: dict[str, int], out: list[Order]) -> None:
        out.append(o.start(job.id, machine.id))
        self.profile.started(job, machine, now)
        self._last[machine.id] = job
        room[machine.id] -= job.size


def _least(free: list[Machine], room: dict[str, int], kept: dict[str, float]) -> dict[str, float]:
    """Per platform, the least cache penalty among its free machines with room left."""
    least: dict[str, float] = {}
    for m in free:
        if room[m.id] > 0 and kept[m.id] < least.get(m.platform, INF):
            least[m.platform] = kept[m.id]
    return least
