"""The policy interface: given the state, the oracle and the time, return orders (the registry: ``scheduler.policies``)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from scheduler.orders import Order
from scheduler.run_times import Oracle
from scheduler.state import State


class Event(str, Enum):
    """Why a scheduling pass runs: the event loop's events (the papers' letters for them: docs/scheduler.md)."""

    NEW_JOBS = "new_jobs"  # jobs submitted
    MACHINE_GAINED = "machine_gained"  # a machine came online
    MACHINE_LOST = "machine_lost"  # a machine went offline
    JOB_ENDED = "job_ended"  # a job ended cleanly
    JOB_FAILED = "job_failed"  # a job terminated with an error
    # the loop's own pass after orders freed machines
    FOLLOW_UP = "follow_up"
    # a time the policy asked to look again at (its ``wake_at()``)
    WAKE_UP = "wake_up"


@dataclass(frozen=True, slots=True)
class Context:
    """What a policy sees: the time, the state (read only), the oracle, and what it may disturb."""

    now: float
    state: State
    oracle: Oracle
    event: Event
    # may cancel, pause or migrate running lower-priority jobs (high-priority arrivals)
    preempt: bool = False
    # may move running jobs onto idle machines when that gains significantly (a machine gained)
    rebalance: bool = False
    arrivals: tuple[str, ...] = ()


class Policy(Protocol):
    """A scheduling policy: orders from a context; it never mutates the state itself.

    Its abilities are declared here with their defaults; a policy subclasses this protocol and sets those it has,
    and the event loop and the simulator read them directly.
    """

    name: str
    # it replicates running jobs (Workqueue with Replication, Storage Affinity): the event loop asks it whenever a
    # machine frees, even with nothing pending
    replicates: bool = False
    # its plan is valid only as a whole (backfilling's reservations): the event loop replans at every end instead of
    # starting the plan's next jobs by itself
    replans_every_end: bool = False
    # it gives each start its nodes on a machine of nodes (scheduler.nodes), so it may run where machines are nodes
    places_nodes: bool = False
    # it never starts a job where the node's free memory is below the job's (scheduler.nodes): a machine with a
    # node memory may be given to it
    plans_memory: bool = False

    def schedule(self, ctx: Context) -> list[Order]: ...

    def wake_at(self) -> float | None:
        """When the policy wants a pass though nothing happens (e.g. a wait runs out); None: events alone wake it."""
        return None
