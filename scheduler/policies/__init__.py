"""The policy registry: every bundled policy under the name specs give it, with what a workload must provide for it.

One visible dict, filled when this module is imported; nothing registers itself elsewhere. A new policy is a
subclass of :class:`scheduler.policy.Policy` (its ``schedule(ctx)``, and the abilities it has) with keyword options,
or a function that makes one, plus one line here; its options are then what a spec may set (``scheduler.specs``)
and ``tests/test_registries.py`` runs it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from scheduler.gridinfo import GRID_ATTRIBUTES
from scheduler.policies.affinity import Affinity
from scheduler.policies.backfill import EASY, Conservative
from scheduler.policies.batch import BatchSearch
from scheduler.policies.data_aware import (
    StorageAffinity,
    WorkqueueReplication,
    XSufferage,
)
from scheduler.policies.edf import EDFDeferral
from scheduler.policies.fcfs import FCFS
from scheduler.policies.genetic import GeneticCoScheduling, GreedyCoScheduling
from scheduler.policies.greedy import greedy1, greedy2, greedy3
from scheduler.policies.mapping import (
    HEFT,
    MCT,
    KPercentBest,
    MaxMin,
    MinMin,
    Sufferage,
)
from scheduler.policies.walker import MaxPerformance, MaxPerformanceLatency, Rand
from scheduler.policy import Policy
from scheduler.sites import SITES


@dataclass(frozen=True)
class Registered:
    """A policy's factory (its keyword parameters are the policy's options) and the workload capabilities it needs."""

    factory: Callable[..., Policy]
    needs: frozenset[str] = frozenset()


POLICIES: dict[str, Registered] = {
    "fcfs": Registered(FCFS),
    "edf": Registered(EDFDeferral),  # Brandstätter-Müller et al. 2011
    # backfilling, as batch schedulers do (issue 19)
    "easy": Registered(EASY),
    "conservative": Registered(Conservative),
    "affinity": Registered(Affinity),  # Kontothanassis & Goddeau 2004
    "greedy1": Registered(greedy1),
    "greedy2": Registered(greedy2),
    "greedy3": Registered(greedy3),
    "mct": Registered(MCT),  # the batch-mapping heuristics
    "minmin": Registered(MinMin),
    "maxmin": Registered(MaxMin),
    "sufferage": Registered(Sufferage),
    # HEFT's order for independent jobs (rank=mean|median)
    "heft": Registered(HEFT),
    "kpb": Registered(KPercentBest),
    # the best list heuristic + local search (+ a MILP for small windows)
    "batch-search": Registered(BatchSearch),
    # Phan, Ranganathan & Sion 2005, the paper's GA
    "ga": Registered(GeneticCoScheduling),
    # seeded with batch-search, local search
    "ga-strong": Registered(partial(GeneticCoScheduling, strong=True, window=1000)),
    "jobs-ll-rep-none": Registered(partial(GreedyCoScheduling, "ll", "none")),
    "jobs-ll-rep-rand": Registered(partial(GreedyCoScheduling, "ll", "rand")),
    "jobs-rand-rep-none": Registered(partial(GreedyCoScheduling, "rand", "none")),
    "jobs-rand-rep-rand": Registered(partial(GreedyCoScheduling, "rand", "rand")),
    "rand": Registered(Rand, frozenset({GRID_ATTRIBUTES})),  # Walker 2001
    "mp": Registered(MaxPerformance, frozenset({GRID_ATTRIBUTES})),
    "mpl": Registered(MaxPerformanceLatency, frozenset({GRID_ATTRIBUTES})),
    "wqr": Registered(WorkqueueReplication, frozenset({SITES})),  # Santos-Neto et al. 2004
    "storage-affinity": Registered(StorageAffinity, frozenset({SITES})),
    "xsufferage": Registered(XSufferage, frozenset({SITES})),
}


def applicable_policies(provides: Iterable[str]) -> list[str]:
    """Names of the registered policies whose needs a workload providing ``provides`` meets, sorted."""
    offered = frozenset(provides)
    return sorted(name for name, entry in POLICIES.items() if entry.needs <= offered)


@dataclass(frozen=True)
class PolicyChoice:
    """A registered policy and its options: :meth:`build` makes a fresh one for each run (policies learn as they go)."""

    name: str
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.name not in POLICIES:
            raise ValueError(f"unknown policy {self.name!r}; known: {', '.join(sorted(POLICIES))}")

    @property
    def needs(self) -> frozenset[str]:
        """The workload capabilities the policy relies on."""
        return POLICIES[self.name].needs

    def build(self) -> Policy:
        """A new policy with the options."""
        return POLICIES[self.name].factory(**self.options)
