"""Node-based allocation: the slots a job needs on each node of a machine, and which nodes give them.

A machine with ``node_slots`` > 0 is ``slots // node_slots`` nodes of ``node_slots`` slots each; a pooled
machine (``node_slots`` 0) is one node of all its slots, so a job's ``size`` is all it needs there. On nodes a
job either asks for ``nodes x ppn`` (``params['node_request']``: [nodes, ppn] parts, as a log's node request
gives them; ``params['exclusive']`` holds each such node whole) or has its ``size`` processors packed: as
many whole nodes as it fills and the rest on one more. An *allocation* is a tuple of (node index, slots),
each node at most once; a job never holds more slots on a node than the node has.

Memory: a machine may give each node a memory size (``Machine.node_memory``, bytes; None: unlimited, the default)
and a job its memory (``Job.memory``, bytes for the whole job; None: unknown). The job's memory is spread evenly
over the slots it holds (:class:`SlotNeeds` carries it per slot), so on a node it may take only as many slots as both
the node's free slots and its free memory allow (:func:`capacity`); with either size unknown memory never counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import groupby
from typing import Any, overload

import numpy as np

Allocation = tuple[tuple[int, int], ...]


class SlotNeeds(tuple[int, ...]):
    """The slots a job needs on each of its nodes, largest first, and the memory each slot brings (``memory``,
    bytes; 0 when memory does not count): a tuple wherever only slots matter."""

    memory: int

    def __new__(cls, slots: Sequence[int], memory: int = 0) -> SlotNeeds:
        needs = super().__new__(cls, slots)
        needs.memory = memory
        return needs


def per_slot(needs: Sequence[int]) -> int:
    """The memory each slot of ``needs`` brings (0 for plain slot counts)."""
    return needs.memory if isinstance(needs, SlotNeeds) else 0


@overload
def capacity(free: np.ndarray, memory: Sequence[int] | np.ndarray | None, each: int) -> np.ndarray: ...


@overload
def capacity(
    free: Sequence[int], memory: Sequence[int] | np.ndarray | None, each: int
) -> np.ndarray | Sequence[int]: ...


def capacity(
    free: Sequence[int] | np.ndarray, memory: Sequence[int] | np.ndarray | None, each: int
) -> np.ndarray | Sequence[int]:
    """Slots per node a job whose slots bring ``each`` bytes may take: the free slots, fewer where memory runs out
    (an array whenever ``free`` is one)."""
    if not each or memory is None:
        return free
    return np.minimum(free, np.asarray(memory) // each)


def node_needs(size: int, params: Mapping[str, Any], node_slots: int, memory: int | None = None) -> SlotNeeds:
    """The slots the job needs on each of its nodes, largest first (``(size,)`` on a pooled machine), carrying
    ``memory`` (the job's bytes, None when it does not count) spread over them."""
    slots = _slots(size, params, node_slots)
    return SlotNeeds(slots, -(-memory // sum(slots)) if memory and sum(slots) else 0)


def _slots(size: int, params: Mapping[str, Any], node_slots: int) -> tuple[int, ...]:
    """The slots per node of :func:`node_needs`."""
    if node_slots <= 0:
        return (size,)
    request = params.get("node_request")
    if request:
        exclusive = bool(params.get("exclusive"))
        per_node = [node_slots if exclusive else int(ppn) for count, ppn in request for _ in range(int(count))]
        if per_node and max(per_node) <= node_slots and (exclusive or sum(per_node) == size):
            return tuple(sorted(per_node, reverse=True))
    whole, rest = divmod(size, node_slots)
    return (node_slots,) * whole + ((rest,) if rest else ())


def place(needs: Sequence[int], capacity: Sequence[int] | np.ndarray) -> Allocation | None:
    """Best fit: each need (largest first) on the node of least room that holds it; None if the nodes cannot.

    Taking the tightest node for the largest need first finds an allocation whenever one exists.
    """
    # the pooled case, and one-node jobs: no arrays
    if len(needs) == 1:
        need = needs[0]
        best = min(((room, node) for node, room in enumerate(capacity) if room >= need), default=None)
        return None if best is None else ((int(best[1]), need),)
    room = np.asarray(capacity)
    taken = np.zeros(len(room), dtype=bool)
    out: list[tuple[int, int]] = []
    for need, group in groupby(needs):
        count = sum(1 for _ in group)
        fit = np.flatnonzero(~taken & (room >= need))
        if len(fit) < count:
            return None
        chosen = fit[np.argsort(room[fit], kind="stable")[:count]]
        taken[chosen] = True
        out += [(int(node), need) for node in chosen]
    return tuple(out)


def levels(needs: Sequence[int]) -> list[tuple[int, int]]:
    """(slots, how many needs are at least that), per distinct need, largest first: the nodes a fit must offer.

    Nodes whose room is known can hold the needs exactly when, at every level, at least that many nodes have
    that much room (Hall's condition for needs and rooms ordered by size).
    """
    return [(need, sum(1 for n in needs if n >= need)) for need in sorted(set(needs), reverse=True)]


class Room:
    """A machine's free slots (and free memory, when it has a size) per node during one pass, as the pass's starts
    take them."""

    def __init__(self, free: Sequence[int], memory: Sequence[int] | None = None) -> None:
        self.free = list(free)
        self.total = sum(self.free)
        self.memory = None if memory is None else list(memory)

    def place(self, needs: Sequence[int], limit: np.ndarray | Sequence[int] | None = None) -> Allocation | None:
        """Where ``needs`` fit now in slots and memory (within ``limit`` slots per node too, e.g. a plan's room, which
        must already count the memory of these needs), or None."""
        if sum(needs) > self.total:
            return None
        free = capacity(self.free, self.memory, per_slot(needs))
        return place(needs, free if limit is None else np.minimum(free, limit))

    def take(self, allocation: Allocation, memory: int = 0) -> None:
        """Take ``allocation``'s slots, and ``memory`` bytes with each of them."""
        for node, slots in allocation:
            self.free[node] -= slots
            self.total -= slots
            if self.memory is not None:
                self.memory[node] -= slots * memory
