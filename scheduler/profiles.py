"""Free-slot profiles: a machine's free slots over time as a backfilling plan sees them, and reservations in them.

A profile starts from the slots free now and the planned ends of running jobs (each releases the (node, slots)
it holds); reservations take slots out. The slots of a run due to end now count as free now: a job that needs
them is planned at ``now`` but can only start once that end is reported (the policy checks the machine's free
slots before it starts anything). A job fits from a time if, on nodes of their own, its needs stay free for
its whole planning time (:mod:`scheduler.nodes`).

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

from scheduler.nodes import Allocation, levels, place
from scheduler.state import INF

Releases = Iterable[tuple[float, Allocation]]


def _rows(now: float, free_now: Sequence[int], releases: Releases) -> tuple[list[float], list[list[int]]]:
    """Breakpoints from ``now`` and each node's free slots from each on, as the running jobs' ends release them."""
    times, free = [now], [list(free_now)]
    for at, nodes in sorted(releases):
        if at > times[-1]:
            times.append(at)
            free.append(list(free[-1]))
        for node, slots in nodes:
            free[-1][node] += slots
    return times, free


def make_profile(now: float, free_now: Sequence[int], releases: Releases, on_nodes: bool) -> NodeProfile | PoolProfile:
    """The profile for a machine of nodes (``on_nodes``) or a pooled one."""
    return NodeProfile(now, free_now, releases) if on_nodes else PoolProfile(now, free_now, releases)


class NodeProfile:
    """``free[i, n]``: slots free on node ``n`` over [``times[i]``, ``times[i + 1]``) (the last row lasts for ever)."""

    def __init__(self, now: float, free_now: Sequence[int], releases: Releases) -> None:
        times, free = _rows(now, free_now, releases)
        self.times = np.array(times, dtype=float)
        self.free = np.array(free, dtype=np.int64)

    def earliest(self, needs: Sequence[int], seconds: float) -> float:
        """The earliest time nodes give ``needs`` (slots per node) for ``seconds`` without a break (INF if never)."""
        rows = len(self.times)
        until = np.append(self.times, INF)
        feasible = np.ones(rows, dtype=bool)
        for slots, count in levels(needs):
            ok = self.free >= slots
            bad = np.where(ok, rows, np.arange(rows)[:, None])
            broken = until[np.minimum.accumulate(bad[::-1], axis=0)[::-1]]  # when each node next runs short
            lasting = ok & (broken - self.times[:, None] >= seconds)
            feasible &= np.count_nonzero(lasting, axis=1) >= count
        return float(self.times[int(np.argmax(feasible))]) if feasible.any() else INF

    def window(self, start: float, seconds: float) -> np.ndarray:
        """Each node's fewest free slots over [start, start + seconds) (``start`` at or after the first breakpoint)."""
        first = bisect.bisect_right(self.times, start) - 1
        last = bisect.bisect_left(self.times, start + seconds) if seconds < INF else len(self.times)
        return self.free[first : max(last, first + 1)].min(axis=0)

    def place(self, needs: Sequence[int], start: float, seconds: float) -> Allocation | None:
        """The nodes that give ``needs`` over [start, start + seconds) (best fit), or None."""
        return place(needs, self.window(start, seconds))

    def free_at(self, at: float) -> int:
        """Slots free at time ``at``, over all nodes."""
        return int(self.free[bisect.bisect_right(self.times, at) - 1].sum())

    def reserve(self, start: float, seconds: float, nodes: Allocation) -> None:
        """Take each (node, slots) of ``nodes`` over [start, start + seconds)."""
        first = self._split(start)
        last = self._split(start + seconds) if seconds < INF else len(self.times)
        for node, slots in nodes:
            self.free[first:last, node] -= slots

    def _split(self, at: float) -> int:
        """The index of a breakpoint at ``at``, inserted if missing."""
        index = bisect.bisect_left(self.times, at)
        if index < len(self.times) and self.times[index] == at:
            return index
        self.times = np.insert(self.times, index, at)
        self.free = np.insert(self.free, index, self.free[index - 1], axis=0)
        return index


class PoolProfile:
    """``free[i]``: slots free on a pooled machine over [``times[i]``, ``times[i + 1]``) (the last row lasts for ever)."""

    def __init__(self, now: float, free_now: Sequence[int], releases: Releases) -> None:
        times, free = _rows(now, free_now, releases)
        self.times = np.array(times, dtype=float)
        self.free = np.array([row[0] for row in free], dtype=np.int64)

    def earliest(self, needs: Sequence[int], seconds: float) -> float:
        """The earliest time ``needs[0]`` slots stay free for ``seconds`` (INF if never): the first run of rows with
        room that lasts long enough (a run is only as good as its first row)."""
        room = np.zeros(len(self.free) + 2, dtype=np.int8)
        room[1:-1] = self.free >= needs[0]
        edges = room[1:] - room[:-1]
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)  # a run's first row, the row after it
        if not len(starts):
            return INF
        lasting = np.append(self.times, INF)[ends] - self.times[starts] >= seconds
        return float(self.times[starts[int(np.argmax(lasting))]]) if lasting.any() else INF

    def window(self, start: float, seconds: float) -> list[int]:
        """The fewest free slots over [start, start + seconds), as the one entry of a per-node list."""
        first = bisect.bisect_right(self.times, start) - 1
        last = bisect.bisect_left(self.times, start + seconds) if seconds < INF else len(self.times)
        return [int(self.free[first : max(last, first + 1)].min())]

    def place(self, needs: Sequence[int], start: float, seconds: float) -> Allocation:
        """The pool's one node: a reservation found by :meth:`earliest` always fits there."""
        return ((0, needs[0]),)

    def free_at(self, at: float) -> int:
        """Slots free at time ``at``."""
        return int(self.free[bisect.bisect_right(self.times, at) - 1])

    def reserve(self, start: float, seconds: float, nodes: Allocation) -> None:
        """Take the slots of ``nodes`` (all on the one node) over [start, start + seconds)."""
        first = self._split(start)
        last = self._split(start + seconds) if seconds < INF else len(self.times)
        self.free[first:last] -= sum(slots for _, slots in nodes)

    def _split(self, at: float) -> int:
        """The index of a breakpoint at ``at``, inserted if missing."""
        index = bisect.bisect_left(self.times, at)
        if index < len(self.times) and self.times[index] == at:
            return index
        self.times = np.concatenate((self.times[:index], (at,), self.times[index:]))
        self.free = np.concatenate((self.free[:index], self.free[index - 1 : index], self.free[index:]))
        return index
