"""Kontothanassis & Goddeau 2004's profile table (sections 2 and 4): what a job type costs on a machine type, and how it is learned.

Shared by the Affinity policy and Greedy-1/2/3. A run is keyed by (algorithm,
platform, warm): the paper keys its table by job type, machine type and, for
Greedy-2/3, the job type last run on the machine; what matters of that is whether
the machine's cache holds the data set this job reads (``Machine.warm`` names the
data set read last, ``Job.data`` the job's). The table learns from the runs its
policy started and saw end (their job's ``ended`` minus the start).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from scheduler.state import Job, JobStatus, Machine, State

# (algorithm, platform) -> fraction of the run a warm cache saves
WarmGain = Mapping[tuple[str, str], float]


def warm_hit(job: Job, machine: Machine) -> bool:
    """Whether the machine's cache holds the data set the job reads."""
    return job.data is not None and machine.warm == job.data


class _Mean:
    """A running mean."""

    __slots__ = ("n", "total")

    def __init__(self) -> None:
        self.n = 0
        self.total = 0.0

    def add(self, value: float) -> None:
        self.n += 1
        self.total += value

    @property
    def value(self) -> float:
        return self.total / self.n


# (algorithm, platform, whether the machine's cache held the job's data)
Key = tuple[str, str, bool]


@dataclass(frozen=True, slots=True)
class _Start:
    """A run the policy started: its key, when, and the oracle's cold estimate for it."""

    key: Key
    at: float
    estimate: float | None


class ProfileTable:
    """The profile table and the runs it learns from (Kontothanassis & Goddeau 2004, sections 2 and 4).

    Two things are learned from each finished run, per (algorithm, platform, warm
    cache or not): the mean wall seconds, Greedy-3's table; and the mean of wall over
    the oracle's estimate, whose warm-over-cold quotient is the warm factor by which a
    warm machine shortens an estimate. ``warm_gain`` gives the warm factors instead (1 - gain; a
    pair it does not name gains nothing), as the paper's a-priori profiles did.
    """

    def __init__(self, warm_gain: WarmGain | None = None) -> None:
        self.warm_gain = warm_gain
        self.walls: dict[Key, _Mean] = {}
        self.ratios: dict[Key, _Mean] = {}
        # machine -> job -> its run, until the run is learned
        self._running: dict[str, dict[str, _Start]] = {}
        # key never seen to end -> (job, start) of its first run
        self._probes: dict[Key, tuple[str, float]] = {}

    def started(self, job: Job, machine: Machine, now: float) -> None:
        """Remember a run the policy starts, to learn from it once it ends."""
        key = (job.algorithm, machine.platform, warm_hit(job, machine))
        self._running.setdefault(machine.id, {})[job.id] = _Start(key, now, job.estimates.get(machine.platform))
        if key not in self.walls and key not in self._probes:
            self._probes[key] = (job.id, now)

    def learn(self, state: State, machines: Iterable[Machine]) -> None:
        """Take in the runs that have left ``machines`` since the last call (pass the machines with free slots).

        Only clean single-attempt runs teach anything: a cancelled, failed or restarted job is forgotten.
        """
        for machine in machines:
            runs = self._running.get(machine.id)
            if not runs:
                continue
            for job_id in [j for j in runs if j not in machine.running]:
                start = runs.pop(job_id)
                if self._probes.get(start.key, ("", 0.0))[0] == job_id:
                    del self._probes[start.key]
                job = state.jobs[job_id]
                if job.status is JobStatus.DONE and job.attempts == 1 and job.ended is not None:
                    self.observe(start, job.ended - start.at)

    def observe(self, start: _Start, wall: float) -> None:
        """Add one finished run of ``wall`` seconds to the table."""
        self.walls.setdefault(start.key, _Mean()).add(wall)
        if start.estimate:
            self.ratios.setdefault(start.key, _Mean()).add(wall / start.estimate)

    def warm_factor(self, algorithm: str, platform: str) -> float:
        """What a warm cache multiplies the run time by: given (1 - gain), learned (hit over miss), else 1."""
        if self.warm_gain is not None:
            return 1.0 - self.warm_gain.get((algorithm, platform), 0.0)
        hot = self.ratios.get((algorithm, platform, True))
        cold = self.ratios.get((algorithm, platform, False))
        return hot.value / cold.value if hot is not None and cold is not None and cold.value > 0 else 1.0

    def hot_saving(self, job: Job, platform: str) -> float:
        """Seconds a warm cache would save ``job`` on ``platform``: cold estimate minus hot (0 when unknown)."""
        cold = job.estimates.get(platform)
        return cold * (1.0 - self.warm_factor(job.algorithm, platform)) if cold else 0.0

    def estimate(self, job: Job, machine: Machine) -> float | None:
        """The oracle's estimate on the machine's platform, times the warm factor on a cache hit (Greedy-2)."""
        cold = job.estimates.get(machine.platform)
        if cold is None or not warm_hit(job, machine):
            return cold
        return cold * self.warm_factor(job.algorithm, machine.platform)

    def observed(self, job: Job, machine: Machine, now: float) -> float | None:
        """The mean wall seconds seen for the job's type on this machine type, warm or cold as it is now (Greedy-3).

        Before any run of that kind ended: how long its first run has been going (it costs at least that), else None.
        """
        key = (job.algorithm, machine.platform, warm_hit(job, machine))
        mean = self.walls.get(key)
        if mean is not None:
            return mean.value
        probe = self._probes.get(key)
        return now - probe[1] if probe is not None else None
