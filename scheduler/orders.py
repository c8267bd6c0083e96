"""Orders: what a policy decides and the event loop applies; all but DEFER go to the resource manager."""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple


class OrderKind(str, Enum):
    """What to do with a job."""

    # start (or resume from its checkpoint) the job on ``machine`` now
    START = "start"
    # hold the job for ``machine``, expected to start at ``at`` (the plan; not sent)
    DEFER = "defer"
    # abort the job's run on ``machine``; ``requeue`` restarts it later, else it ends
    CANCEL = "cancel"
    # checkpoint the job's run on ``machine`` and free it; the job waits with its progress
    PAUSE = "pause"
    # checkpoint the run on ``machine`` and resume it on ``target`` now
    MIGRATE = "migrate"
    # start one more copy on ``machine``; the first copy to end wins
    REPLICATE = "replicate"
    # run the idle-time probe ``job`` on ``machine`` now, through the profile wrapper, killed at its cap
    PROBE = "probe"
    # kill the probe ``job`` on ``machine`` at once (a real job takes the machine)
    CANCEL_PROBE = "cancel_probe"


class Order(NamedTuple):
    """One decision about one job (a tuple: cheap to make by the ten thousand)."""

    kind: OrderKind
    job: str
    machine: str
    at: float | None = None
    target: str | None = None
    requeue: bool = True
    reason: str = ""
    # the run it starts or stops; set by the event loop when it applies the order
    attempt: int | None = None
    # START on a machine of nodes: the (node, slots) to take (scheduler/nodes.py)
    nodes: tuple[tuple[int, int], ...] = ()

    @property
    def sent(self) -> bool:
        """Whether the resource manager must act on it (everything but the plan)."""
        return self.kind is not OrderKind.DEFER


def start(job: str, machine: str, reason: str = "", nodes: tuple[tuple[int, int], ...] = ()) -> Order:
    return Order(OrderKind.START, job, machine, reason=reason, nodes=nodes)


def defer(job: str, machine: str, at: float) -> Order:
    return Order(OrderKind.DEFER, job, machine, at=at)


def cancel(job: str, machine: str, requeue: bool = True, reason: str = "") -> Order:
    return Order(OrderKind.CANCEL, job, machine, requeue=requeue, reason=reason)


def pause(job: str, machine: str, reason: str = "") -> Order:
    return Order(OrderKind.PAUSE, job, machine, reason=reason)


def migrate(job: str, machine: str, target: str, reason: str = "") -> Order:
    return Order(OrderKind.MIGRATE, job, machine, target=target, reason=reason)


def probe(probe_id: str, machine: str, token: int) -> Order:
    """An idle-time probe's start (scheduler/probing.py decides it; the policies never see one)."""
    return Order(OrderKind.PROBE, probe_id, machine, attempt=token)


def cancel_probe(probe_id: str, machine: str, token: int, reason: str = "") -> Order:
    return Order(OrderKind.CANCEL_PROBE, probe_id, machine, attempt=token, reason=reason)


def replicate(job: str, machine: str, reason: str = "") -> Order:
    return Order(OrderKind.REPLICATE, job, machine, reason=reason)
