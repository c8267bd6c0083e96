"""Santos-Neto et al. 2004's data model (section 2): sites with data servers, one shared link from home, input files.

A grid is a set of sites; each has processors (machines of the cluster) and one data
server. Every input file starts at the user's home machine; before a task runs on a
processor, the files of its input that its site's data server lacks cross the home
link, and from then on that server keeps them (disks never fill, section 4.1), so
later tasks and later executions of the job reuse them. Transfers inside a site are
free. A run's true duration is therefore *fetch the missing bytes* + *compute*.

The link is the paper's "single shared 1 Mbps link": its bandwidth is shared equally
by the transfers on it at each moment (section 2.1), simulated exactly as egalitarian
processor sharing (:class:`SharedLink`). Each run fetches its own missing files; two
runs at one site that need the same absent file both fetch it (a replica does not
wait for the original's transfer), and a run cancelled mid-transfer leaves nothing
behind. A workload that provides the capability ``SITES`` carries a ``Grid``;
the simulator drives a :class:`Staging` (its hook, see ``simulator/simulate.py``) and
the scheduler sees the data servers' contents as ``DataStores`` in ``State.sites``
(both in ``scheduler/sites.py``): data location and file sizes, which the paper counts as easy to know.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from scheduler.sites import SITES, DataStores, Files, Grid

if TYPE_CHECKING:
    from scheduler.state import State
    from simulator.workload import JobSpec, Workload

# a transfer this close to its end has ended (float residue of the shared-rate sums)
_EPS_BYTES = 1e-3


Key = TypeVar("Key", bound=Hashable)


class SharedLink(Generic[Key]):
    """A link whose bandwidth is shared equally by the transfers on it (egalitarian processor sharing).

    In virtual time ``served`` (bytes each transfer has received, growing at
    bandwidth / n while n transfers are on), a transfer of b bytes starting at served
    = s ends when served reaches its tag s + b. Tags never change, so transfers end in
    tag order and only the first one's end time needs computing.
    """

    def __init__(self, bandwidth: float) -> None:
        self.bandwidth = bandwidth
        self.clock = 0.0
        self.served = 0.0
        self.tags: dict[Key, tuple[float, float]] = {}  # key -> (tag, bytes)
        self._heap: list[tuple[float, int, Key]] = []
        self._seq = 0

    def __len__(self) -> int:
        return len(self.tags)

    def __contains__(self, key: Key) -> bool:
        return key in self.tags

    def advance(self, now: float) -> list[tuple[Key, float]]:
        """Move to ``now``; (key, end time) of each transfer that ended on the way, in order."""
        ended: list[tuple[Key, float]] = []
        while self.tags:
            tag, key = self._head()
            n = len(self.tags)
            reach = self.served + (now - self.clock) * self.bandwidth / n
            if tag - reach > _EPS_BYTES:
                self.served, self.clock = reach, now
                return ended
            at = min(now, self.clock + max(tag - self.served, 0.0) * n / self.bandwidth)
            self.served, self.clock = max(tag, self.served), at
            del self.tags[key]
            heapq.heappop(self._heap)
            ended.append((key, at))
        self.clock = now
        return ended

    def add(self, key: Key, nbytes: float) -> None:
        """Start a transfer (after :meth:`advance` to now)."""
        tag = self.served + nbytes
        self.tags[key] = (tag, nbytes)
        self._seq += 1
        heapq.heappush(self._heap, (tag, self._seq, key))

    def remove(self, key: Key) -> float:
        """Abort a transfer (after :meth:`advance` to now); returns the bytes it had received."""
        tag, nbytes = self.tags.pop(key)
        return nbytes - (tag - self.served)

    def next_end(self) -> float | None:
        """When the first transfer ends if nothing starts or stops before."""
        if not self.tags:
            return None
        tag, _ = self._head()
        return self.clock + max(tag - self.served, 0.0) * len(self.tags) / self.bandwidth

    def _head(self) -> tuple[float, Key]:
        heap = self._heap
        while heap[0][2] not in self.tags or self.tags[heap[0][2]][0] != heap[0][0]:
            # an aborted transfer (or an older one under a reused key)
            heapq.heappop(heap)
        return heap[0][0], heap[0][2]


@dataclass(frozen=True, slots=True)
class StagedRun:
    """The data side of one run: bytes it fetched over the link, when its computation began (None: never), outcome."""

    job: str
    machine: str
    site: str
    start: float
    staged: float | None
    end: float
    fetched: float
    outcome: str

    @property
    def compute_seconds(self) -> float:
        """Seconds the processor spent computing (after the inputs arrived)."""
        return 0.0 if self.staged is None else max(self.end - self.staged, 0.0)


@dataclass
class GridRecord:
    """What a simulation's data side produced: every run's transfer, and the data servers' contents at the end."""

    runs: list[StagedRun]
    stored: dict[str, dict[str, int]]


@dataclass(slots=True)
class _Open:
    site: str
    start: float
    missing: Files
    nbytes: int
    compute: float
    staged: float | None = None


class Staging:
    """The simulator's hook for sites: a run first fetches its missing inputs over the shared link, then computes.

    :meth:`start` says whether a run must wait for a transfer; the simulator then asks
    :meth:`arrived` at :meth:`next_wake` for the runs whose inputs came (with when they
    came and the seconds left to compute), and calls :meth:`stop` whenever a run ends, is cancelled
    or is lost. Files land at the site's data server the moment their transfer ends.
    """

    def __init__(self, grid: Grid, state: State) -> None:
        self.stores = DataStores(grid)
        state.sites = self.stores
        self.link: SharedLink[tuple[str, str]] = SharedLink(grid.bandwidth)
        self.open: dict[tuple[str, str], _Open] = {}
        self.log: list[StagedRun] = []
        self._arrived: list[tuple[str, str, float, float]] = []
        # the wake-up the simulator holds (one per distinct time)
        self._promised: float | None = None

    @classmethod
    def attach(cls, workload: Workload, state: State) -> Staging | None:
        """The hook for a workload that provides sites (None otherwise); checks every machine has a site."""
        if SITES not in workload.provides:
            return None
        if workload.grid is None:
            raise ValueError(f"workload {workload.name!r} provides {SITES!r} but has no grid")
        site_of = workload.grid.site_of()
        lost = [m.id for m in workload.cluster.machines if m.id not in site_of]
        if lost:
            raise ValueError(f"machines without a site: {', '.join(lost[:5])}")
        return cls(workload.grid, state)

    def start(self, spec: JobSpec, machine_id: str, now: float, seconds: float) -> bool:
        """A run of ``spec`` begins on ``machine_id`` to compute ``seconds``; True if it must first fetch inputs."""
        self._advance(now)
        site = self.stores.site_of[machine_id]
        missing = self.stores.missing(spec.inputs, site)
        nbytes = sum(size for _, size in missing)
        run = _Open(site, now, missing, nbytes, seconds)
        self.open[(spec.id, machine_id)] = run
        if nbytes == 0:
            run.staged = now
            return False
        self.link.add((spec.id, machine_id), nbytes)
        self.stores.transfers = len(self.link)
        return True

    def next_wake(self) -> float | None:
        """When the next transfer ends, as things stand; None if nothing is on the link or that time was given already."""
        wake = self.link.next_end()
        if wake is None or wake == self._promised:
            return None
        self._promised = wake
        return wake

    def arrived(self, now: float) -> list[tuple[str, str, float, float]]:
        """(job, machine, when its inputs came, seconds to compute) of each run staged since the last call."""
        if self._promised is not None and now >= self._promised:
            self._promised = None
        self._advance(now)
        out, self._arrived = self._arrived, []
        return out

    def stop(self, job_id: str, machine_id: str, now: float, outcome: str) -> None:
        """A run ends (``outcome``: done, failed, cancelled, lost...); an unfinished transfer is aborted."""
        self._advance(now)
        key = (job_id, machine_id)
        run = self.open.pop(key)
        fetched = float(run.nbytes) if run.staged is not None else 0.0
        if key in self.link:
            fetched = self.link.remove(key)
            self.stores.transfers = len(self.link)
        self._arrived = [a for a in self._arrived if (a[0], a[1]) != key]
        self.log.append(StagedRun(job_id, machine_id, run.site, run.start, run.staged, now, fetched, outcome))

    def record(self) -> GridRecord:
        """The runs' transfers and the data servers' final contents."""
        return GridRecord(self.log, {site: dict(files) for site, files in self.stores.files.items()})

    def _advance(self, now: float) -> None:
        for key, at in self.link.advance(now):
            run = self.open[key]
            run.staged = at
            self.stores.store(run.site, run.missing)
            self._arrived.append((key[0], key[1], at, run.compute))
        self.stores.transfers = len(self.link)


@dataclass(frozen=True)
class Waste:
    """Santos-Neto et al. 2004's resource waste (Table 2): what killed replicas consumed over what finished runs consumed.

    CPU: seconds of computation (a run fetching its inputs holds its processor but
    burns no cycles, so transfer time is not CPU time); bandwidth: bytes over the link.
    """

    cpu_killed: float
    cpu_finished: float
    bytes_killed: float
    bytes_finished: float

    @property
    def cpu(self) -> float:
        return _ratio(self.cpu_killed, self.cpu_finished)

    @property
    def bandwidth(self) -> float:
        return _ratio(self.bytes_killed, self.bytes_finished)

    def __add__(self, other: Waste) -> Waste:
        return Waste(
            self.cpu_killed + other.cpu_killed,
            self.cpu_finished + other.cpu_finished,
            self.bytes_killed + other.bytes_killed,
            self.bytes_finished + other.bytes_finished,
        )


def _ratio(part: float, whole: float) -> float:
    if whole > 0:
        return part / whole
    return 0.0 if part == 0 else float("inf")


def waste(record: GridRecord) -> Waste:
    """CPU and bandwidth waste of one simulation: cancelled runs (losing replicas) against finished ones."""
    killed = [r for r in record.runs if r.outcome == "cancelled"]
    finished = [r for r in record.runs if r.outcome == "done"]
    return Waste(
        sum(r.compute_seconds for r in killed),
        sum(r.compute_seconds for r in finished),
        sum(r.fetched for r in killed),
        sum(r.fetched for r in finished),
    )
