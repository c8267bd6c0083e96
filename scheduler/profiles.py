"""Free-slot profiles: a machine's free slots over time as a backfilling plan sees them, and reservations in them.

A profile starts from the slots free now and the planned ends of running jobs (each releases the (node, slots)
it holds); reservations take slots out. The slots of a run due to end now count as free now: a job that needs
them is planned at ``now`` but can only start once that end is reported (the policy checks the machine's free
slots before it starts anything). A job fits from a time if, on nodes of their own, its needs stay free for
its whole planning time (:mod:`scheduler.nodes`). On a machine with a memory size the profile keeps each node's
free memory beside its slots (a release may give back memory with each slot: ``(at, nodes, bytes per slot)``), and a
job's needs count both (:func:`scheduler.nodes.capacity`).

- :class:`NodeProfile`: one column per node, in NumPy, for machines of nodes.
- :class:`PoolProfile`: the one column of a pooled machine, searched run by run: the rows with room form runs,
  and the earliest fit is the first run that lasts long enough, found with a handful of linear NumPy passes
  (no per-row search). It gives the same times as :class:`NodeProfile` with one node
  (``tests/scheduler/test_profiles.py``).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence

import numpy as np

from scheduler.nodes import Allocation, capacity, levels, per_slot, place
from scheduler.state import INF

Releases = Iterable[tuple[float, Allocation] | tuple[float, Allocation, int]]


def _rows(
    now: float, free_now: Sequence[int], releases: Releases, memory_now: Sequence[int] | None = None
) -> tuple[list[float], list[list[int]], list[list[int]] | None]:
    """Breakpoints from ``now`` and each node's free slots (and memory, when known) from each on, as the running jobs'
    ends release them."""
    times, free = [now], [list(free_now)]
    memory = None if memory_now is None else [list(memory_now)]
    for at, nodes, *each in sorted(releases, key=lambda r: r[0]):
        if at > times[-1]:
            times.append(at)
            free.append(list(free[-1]))
            if memory is not None:
                memory.append(list(memory[-1]))
        for node, slots in nodes:
            free[-1][node] += slots
            if memory is not None and each:
                memory[-1][node] += slots * each[0]
    return times, free, memory


def make_profile(
    now: float, free_now: Sequence[int], releases: Releases, on_nodes: bool, memory_now: Sequence[int] | None = None
) -> NodeProfile | PoolProfile:
    """The profile for a machine of nodes (``on_nodes``) or a pooled one; ``memory_now`` its free bytes per node."""
    kind = NodeProfile if on_nodes else PoolProfile
    return kind(now, free_now, releases, memory_now)


class NodeProfile:
    """``free[i, n]``: slots free on node ``n`` over [``times[i]``, ``times[i + 1]``) (the last row lasts for ever);
    ``memory[i, n]`` its free bytes (None: the machine has no memory size)."""

    def __init__(
        self, now: float, free_now: Sequence[int], releases: Releases, memory_now: Sequence[int] | None = None
    ) -> None:
        times, free, memory = _rows(now, free_now, releases, memory_now)
        self.times = np.array(times, dtype=float)
        self.free = np.array(free, dtype=np.int64)
        self.memory = None if memory is None else np.array(memory, dtype=np.int64)

    def earliest(self, needs: Sequence[int], seconds: float) -> float:
        """The earliest time nodes give ``needs`` (slots per node, and their memory) for ``seconds`` without a break
        (INF if never)."""
        rows = len(self.times)
        until = np.append(self.times, INF)
        feasible = np.ones(rows, dtype=bool)
        free = capacity(self.free, self.memory, per_slot(needs))
        for slots, count in levels(needs):
            ok = free >= slots
            bad = np.where(ok, rows, np.arange(rows)[:, None])
            broken = until[np.minimum.accumulate(bad[::-1], axis=0)[::-1]]  # when each node next runs short
            lasting = ok & (broken - self.times[:, None] >= seconds)
            feasible &= np.count_nonzero(lasting, axis=1) >= count
        return float(self.times[int(np.argmax(feasible))]) if feasible.any() else INF

    def window(self, start: float, seconds: float, memory: int = 0) -> np.ndarray:
        """Each node's fewest free slots over [start, start + seconds) (``start`` at or after the first breakpoint),
        for slots that bring ``memory`` bytes each."""
        first = bisect.bisect_right(self.times, start) - 1
        last = bisect.bisect_left(self.times, start + seconds) if seconds < INF else len(self.times)
        rows = slice(first, max(last, first + 1))
        return np.asarray(capacity(self.free[rows], None if self.memory is None else self.memory[rows], memory)).min(
            axis=0
        )

    def place(self, needs: Sequence[int], start: float, seconds: float) -> Allocation | None:
        """The nodes that give ``needs`` over [start, start + seconds) (best fit), or None."""
        return place(needs, self.window(start, seconds, per_slot(needs)))

    def free_at(self, at: float) -> int:
        """Slots free at time ``at``, over all nodes."""
        return int(self.free[bisect.bisect_right(self.times, at) - 1].sum())

    def reserve(self, start: float, seconds: float, nodes: Allocation, memory: int = 0) -> None:
        """Take each (node, slots) of ``nodes`` over [start, start + seconds), and ``memory`` bytes with each slot."""
        first = self._split(start)
        last = self._split(start + seconds) if seconds < INF else len(self.times)
        for node, slots in nodes:
            self.free[first:last, node] -= slots
            if self.memory is not None:
                self.memory[first:last, node] -= slots * memory

    def _split(self, at: float) -> int:
        """The index of a breakpoint at ``at``, inserted if missing."""
        index = bisect.bisect_left(self.times, at)
        if index < len(self.times) and self.times[index] == at:
            return index
        self.times = np.insert(self.times, index, at)
        self.free = np.insert(self.free, index, self.free[index - 1], axis=0)
        if self.memory is not None:
            self.memory = np.insert(self.memory, index, self.memory[index - 1], axis=0)
        return index


class PoolProfile:
    """``free[i]``: slots free on a pooled machine over [``times[i]``, ``times[i + 1]``) (the last row lasts for ever);
    ``memory[i]`` its free bytes (None: no memory size)."""

    def __init__(
        self, now: float, free_now: Sequence[int], releases: Releases, memory_now: Sequence[int] | None = None
    ) -> None:
        times, free, memory = _rows(now, free_now, releases, memory_now)
        self.times = np.array(times, dtype=float)
        self.free = np.array([row[0] for row in free], dtype=np.int64)
        self.memory = None if memory is None else np.array([row[0] for row in memory], dtype=np.int64)

    def earliest(self, needs: Sequence[int], seconds: float) -> float:
        """The earliest time ``needs[0]`` slots (and their memory) stay free for ``seconds`` (INF if never): the first
        run of rows with room that lasts long enough (a run is only as good as its first row)."""
        room = np.zeros(len(self.free) + 2, dtype=np.int8)
        room[1:-1] = capacity(self.free, self.memory, per_slot(needs)) >= needs[0]
        edges = room[1:] - room[:-1]
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)  # a run's first row, the row after it
        if not len(starts):
            return INF
        lasting = np.append(self.times, INF)[ends] - self.times[starts] >= seconds
        return float(self.times[starts[int(np.argmax(lasting))]]) if lasting.any() else INF

    def window(self, start: float, seconds: float, memory: int = 0) -> list[int]:
        """The fewest free slots over [start, start + seconds) for slots that bring ``memory`` bytes each, as the one
        entry of a per-node list."""
        first = bisect.bisect_right(self.times, start) - 1
        last = bisect.bisect_left(self.times, start + seconds) if seconds < INF else len(self.times)
        rows = slice(first, max(last, first + 1))
        return [int(np.min(capacity(self.free[rows], None if self.memory is None else self.memory[rows], memory)))]

    def place(self, needs: Sequence[int], start: float, seconds: float) -> Allocation:
        """The pool's one node: a reservation found by :meth:`earliest` always fits there."""
        return ((0, needs[0]),)

    def free_at(self, at: float) -> int:
        """Slots free at time ``at``."""
        return int(self.free[bisect.bisect_right(self.times, at) - 1])

    def reserve(self, start: float, seconds: float, nodes: Allocation, memory: int = 0) -> None:
        """Take the slots of ``nodes`` (all on the one node) over [start, start + seconds), ``memory`` bytes each."""
        first = self._split(start)
        last = self._split(start + seconds) if seconds < INF else len(self.times)
        taken = sum(slots for _, slots in nodes)
        self.free[first:last] -= taken
        if self.memory is not None:
            self.memory[first:last] -= taken * memory

    def _split(self, at: float) -> int:
        """The index of a breakpoint at ``at``, inserted if missing."""
        index = bisect.bisect_left(self.times, at)
        if index < len(self.times) and self.times[index] == at:
            return index
        self.times = np.concatenate((self.times[:index], (at,), self.times[index:]))
        self.free = np.concatenate((self.free[:index], self.free[index - 1 : index], self.free[index:]))
        if self.memory is not None:
            self.memory = np.concatenate((self.memory[:index], self.memory[index - 1 : index], self.memory[index:]))
        return index
