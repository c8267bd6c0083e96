"""What a simulation replays: a cluster, jobs with their true run times, and machine outages."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from predictor.domain import Measurement
from scheduler.state import ASKED_FIELDS, Job, Machine, NameSet

if TYPE_CHECKING:
    from scheduler.sites import Grid


@dataclass(frozen=True, slots=True)
class PlatformSpec:
    """A class of machines: its power draw when busy."""

    name: str
    power_watts: float = 0.0


@dataclass(frozen=True, slots=True)
class MachineSpec:
    """One machine of a simulated cluster."""

    id: str
    platform: str
    slots: int = 1
    attributes: dict[str, Any] = field(default_factory=dict, hash=False)  # see scheduler.gridinfo
    # > 0: the slots are nodes of this many and a job is placed on nodes (scheduler/nodes.py)
    node_slots: int = 0
    # bytes of each node (of the pool, pooled); None: memory never limits
    node_memory: int | None = None


@dataclass
class Cluster:
    """Platforms and machines."""

    platforms: dict[str, PlatformSpec]
    machines: list[MachineSpec]

    def __post_init__(self) -> None:
        for m in self.machines:
            if m.platform not in self.platforms:
                raise ValueError(f"machine {m.id!r}: unknown platform {m.platform!r}")

    def machine(self, spec: MachineSpec) -> Machine:
        """A fresh scheduler machine for ``spec``."""
        power = self.platforms[spec.platform].power_watts
        return Machine(
            spec.id,
            spec.platform,
            spec.slots,
            power,
            attributes=dict(spec.attributes),
            node_slots=spec.node_slots,
            node_memory=spec.node_memory,
        )

    def describe(self) -> str:
        counts: dict[str, int] = {}
        for m in self.machines:
            counts[m.platform] = counts.get(m.platform, 0) + 1
        # e.g. a grid where every machine is its own platform
        if len(counts) > 12:
            return f"{len(self.machines)} machines on {len(counts)} platforms"
        return ", ".join(f"{n} x {p}" for p, n in counts.items())


@dataclass(slots=True)
class JobSpec:
    """A job of a workload: what the scheduler is told (a field of :class:`Job` by the same name, checked by
    ``tests/scheduler/test_job_fields.py``), plus the truth only the simulator knows.

    ``true_times`` holds the wall seconds on each platform that can run it; a job with
    ``fails`` terminates with an error after ``fail_at`` of its run; ``data`` names the
    data set it reads (a warm cache on the machine can shorten it, see ``warm_gain``).
    ``memory`` is the memory the scheduler plans with (and the limit a resource manager that enforces limits kills
    at); ``true_memory`` the job's real peak, bytes for the whole job (None: unknown).
    """

    id: str
    submit: float
    algorithm: str
    true_times: dict[str, float]
    params: dict[str, Any] = field(default_factory=dict)
    features: dict[str, float] | None = None
    deadline: float | None = None
    priority: int = 0
    depends_on: tuple[str, ...] = ()
    stream_from: str | None = None
    size: int = 1
    platforms: tuple[str, ...] | None = None
    checkpoint: NameSet = frozenset()
    data: str | None = None
    fails: bool = False
    fail_at: float = 1.0
    # Santos-Neto et al. 2004: input files (name, bytes) its site must hold (simulator/grid.py)
    inputs: tuple[tuple[str, int], ...] = ()
    memory: int | None = None
    true_memory: int | None = None

    def job(self) -> Job:
        """The scheduler's view of this job (no truth in it): every field a submitter gives (``ASKED_FIELDS``)."""
        return Job(**{name: getattr(self, name) for name in ASKED_FIELDS})


@dataclass(frozen=True, slots=True)
class MachineEvent:
    """A machine goes offline (``lost``) or comes (back) online (``gained``); ``healthy`` says its jobs survive."""

    time: float
    machine: str
    kind: str
    healthy: bool = True
    platform: str | None = None
    slots: int = 1


@dataclass
class Workload:
    """Jobs, the cluster they run on, outages, and past runs a model may learn from."""

    name: str
    jobs: list[JobSpec]
    cluster: Cluster
    machine_events: list[MachineEvent] = field(default_factory=list)
    history: list[Measurement] = field(default_factory=list)
    warm_gain: dict[tuple[str, str], float] = field(default_factory=dict)
    notes: str = ""
    # capabilities beyond jobs and machines that some policies need
    provides: frozenset[str] = frozenset()
    # Santos-Neto et al. 2004: sites, their data servers and the home link (capability "sites", simulator/grid.py)
    grid: Grid | None = None
    # job id -> when it ended at the site, where a log says
    ended: dict[str, float] = field(default_factory=dict)
    # the instant of simulated time 0 (a log's), where known
    origin: datetime | None = None

    def clock(self) -> Callable[[float], datetime]:
        """The instant of a simulated time: after ``origin``, else after the history's last recorded run (a replayed
        service's runs come after what it learned from)."""
        origin = self.origin or max((m.recorded_at for m in self.history), default=datetime(1970, 1, 1, tzinfo=UTC))
        return lambda seconds: origin + timedelta(seconds=seconds)


@dataclass(frozen=True)
class WorkloadRecipe:
    """How to make a workload for a seed: ``make_with(**options)``, passed ``seed`` too when it draws from one.

    A ``seed`` among the options fixes the workload whatever seed :meth:`make` is given.
    """

    make_with: Callable[..., Workload]
    options: Mapping[str, Any] = field(default_factory=dict)
    seeded: bool = True

    def make(self, seed: int = 0) -> Workload:
        """The workload of ``seed`` (or of the options' own ``seed``)."""
        given = {"seed": seed} if self.seeded else {}
        return self.make_with(**{**given, **self.options})
