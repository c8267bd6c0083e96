"""Walker 2001's grid system, application and performance models (ch 3.2-3.4 and 4.2-4.4).

A machine's snapshot, as an information agent reports it (section 4.2), rides in
``Machine.attributes``: ``arch``, ``os``, ``speed`` (MHz), ``processors``, ``load`` (the
weighted 5/10/15-minute load average) and ``path``, its place in the hierarchical
topology written ``site/cluster/.../node`` (section 4.4.2, Fig 4). A workload whose
machines carry it provides the capability :data:`GRID_ATTRIBUTES`.

A task's application model (section 4.3) rides in ``Job.params["grid"]``: the grid job
it belongs to, the job's number of tasks k, the ``arch/os`` pairs its binaries run on,
the communication-to-computation ratio, the user's architecture scale factors and the
node it was submitted from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.state import Job

GRID_ATTRIBUTES = "grid-attributes"
# Topology = 10**n: an order of magnitude per network level (section 4.4.3, after [Wei95])
LEVEL_BASE = 10.0
NODE_KEYS = ("arch", "os", "speed", "processors", "load", "path")


def split_path(text: str) -> tuple[str, ...]:
    """``"uva/centurion/sw0/c001"`` -> its levels, top first; an empty level is an error."""
    parts = tuple(text.split("/"))
    if not text or any(not p for p in parts):
        raise ValueError(f"topology path {text!r} must be non-empty names joined by '/'")
    return parts


def levels(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    """Network levels between two positions: 0 for the same node, else how far up their closest shared cluster is."""
    shared = 0
    for x, y in zip(a, b):
        if x != y:
            break
        shared += 1
    return max(len(a), len(b)) - shared


def topology(a: tuple[str, ...], b: tuple[str, ...]) -> float:
    """Walker's Topology(h_x, h_y, t_n) = 10**n, n the levels between them (section 4.4.3)."""
    return LEVEL_BASE ** levels(a, b)


@dataclass(frozen=True, slots=True)
class GridNode:
    """One grid resource as its snapshot describes it (section 4.2); ``platform`` is its ``arch/os`` pair."""

    arch: str
    os: str
    speed: float
    processors: int
    load: float
    path: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.speed <= 0 or self.processors < 1 or self.load < 0:
            raise ValueError(f"node {'/'.join(self.path)}: speed and processors must be positive and load >= 0")

    @property
    def platform(self) -> str:
        return f"{self.arch}/{self.os}"

    def attributes(self) -> dict[str, Any]:
        """The snapshot as ``Machine.attributes`` holds it (plain values, the path joined by '/')."""
        return {
            "arch": self.arch,
            "os": self.os,
            "speed": self.speed,
            "processors": self.processors,
            "load": self.load,
            "path": "/".join(self.path),
        }

    @classmethod
    def parse(cls, attributes: Mapping[str, Any], name: str) -> GridNode:
        """The snapshot in machine ``name``'s attributes; a clear error when it is incomplete."""
        missing = [k for k in NODE_KEYS if k not in attributes]
        if missing:
            raise ValueError(f"machine {name} has no grid attribute(s) {', '.join(missing)}")
        a = attributes
        return cls(
            str(a["arch"]),
            str(a["os"]),
            float(a["speed"]),
            int(a["processors"]),
            float(a["load"]),
            split_path(str(a["path"])),
        )


@dataclass(frozen=True, slots=True)
class Application:
    """What the user tells the scheduler about one task's job (section 4.3, plus the submitting node).

    ``binaries``: the ``arch/os`` pairs the task's executable runs on (section 3.4.1);
    ``ratio``: communication to computation, 0 to 1 (section 4.4.3); ``asf``: the user's
    architecture scale factor per arch, 1 where not given (section 4.4.1); ``origin``: the
    path of the node the job was submitted from, where its data lives.
    """

    job: str
    tasks: int
    binaries: frozenset[str]
    ratio: float = 0.0
    asf: dict[str, float] = field(default_factory=dict, hash=False)
    origin: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.tasks < 1:
            raise ValueError(f"grid job {self.job}: needs at least one task, got {self.tasks}")
        if not 0.0 <= self.ratio <= 1.0:
            raise ValueError(f"grid job {self.job}: ratio must be in [0, 1], got {self.ratio}")
        bad = [b for b in self.binaries if b.count("/") != 1 or "" in b.split("/")]
        if not self.binaries or bad:
            raise ValueError(
                f"grid job {self.job}: binaries must be non-empty 'arch/os' pairs, got {sorted(self.binaries)}"
            )
        if any(f <= 0 for f in self.asf.values()):
            raise ValueError(f"grid job {self.job}: architecture scale factors must be positive")

    def runs_on(self, node: GridNode) -> bool:
        """Eligibility (section 3.4.1): a binary exists for the node's architecture and operating system."""
        return node.platform in self.binaries

    def scale(self, node: GridNode) -> float:
        """ASF(t_i, h_x): the user's relative performance of the task on the node's architecture."""
        return self.asf.get(node.arch, 1.0)

    def params(self) -> dict[str, Any]:
        """The model as ``Job.params["grid"]`` holds it (JSON-friendly)."""
        out: dict[str, Any] = {
            "job": self.job,
            "tasks": self.tasks,
            "binaries": sorted(self.binaries),
            "ratio": self.ratio,
        }
        if self.asf:
            out["asf"] = dict(sorted(self.asf.items()))
        if self.origin is not None:
            out["origin"] = "/".join(self.origin)
        return out

    @classmethod
    def of(cls, job: Job) -> Application:
        """The model a task carries; a clear error when it has none."""
        raw = job.params.get("grid")
        if not raw:
            raise ValueError(f"job {job.id} has no grid application model (params['grid'])")
        origin = raw.get("origin")
        return cls(
            job=str(raw.get("job", job.id)),
            tasks=int(raw.get("tasks", 1)),
            binaries=frozenset(raw.get("binaries", ())),
            ratio=float(raw.get("ratio", 0.0)),
            asf={str(k): float(v) for k, v in (raw.get("asf") or {}).items()},
            origin=None if origin is None else split_path(str(origin)),
        )


def max_performance(node: GridNode, app: Application, load: float) -> float:
    """Max_performance = speed x processors / (load + 1) x ASF (section 4.4.1), at ``load`` rather than the snapshot's."""
    return node.speed * node.processors / (load + 1.0) * app.scale(node)
