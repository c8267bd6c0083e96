"""Planning machinery: free-slot profiles, the cost matrix, EDF order, many-slot machines."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scheduler.planner import Profile, cost_matrix
from scheduler.state import INF, Machine
from tests.scheduler.kit import job, kinds, scheduler


def test_profile_finds_the_earliest_window_and_books_it():
    profile = Profile(0.0, 8, 2, [(5.0, 4), (10.0, 2)])  # 2 free now, 6 at 5, 8 at 10
    assert (profile.times, profile.free) == ([0.0, 5.0, 10.0], [2, 6, 8])
    assert profile.earliest(0.0, 2, 100.0) == 0.0
    assert profile.earliest(0.0, 3, 1.0) == 5.0
    assert profile.earliest(0.0, 8, 1.0) == 10.0
    assert profile.earliest(0.0, 9, 1.0) == INF
    profile.reserve(5.0, 12.0, 6)
    assert (profile.times, profile.free) == ([0.0, 5.0, 10.0, 12.0], [2, 0, 2, 8])
    assert profile.earliest(0.0, 2, 4.0) == 0.0  # backfills before the reservation
    assert profile.earliest(0.0, 2, 6.0) == 10.0
    assert profile.earliest(0.0, 3, 1.0) == 12.0


def test_a_profile_with_memory_finds_a_window_where_both_slots_and_memory_stay_free():
    """Issue 42: 8 slots and 100 bytes; 6 slots and 90 bytes held now, 4 slots and 80 bytes back at 5, the rest at 10."""
    profile = Profile(0.0, 8, 2, [(5.0, 4, 80), (10.0, 2, 10)], memory_now=10)
    assert (profile.free, profile.memory) == ([2, 6, 8], [10, 90, 100])
    assert profile.earliest(0.0, 1, 1.0, memory=10) == 0.0
    assert profile.earliest(0.0, 1, 1.0, memory=11) == 5.0, "a slot is free now, the memory only at 5"
    assert profile.earliest(0.0, 1, 1.0, memory=95) == 10.0
    assert profile.earliest(0.0, 1, 1.0, memory=101) == INF, "more than the machine has: never"
    profile.reserve(5.0, 12.0, 1, memory=85)
    assert (profile.free, profile.memory) == ([2, 5, 7, 8], [10, 5, 15, 100])
    assert profile.earliest(0.0, 1, 3.0, memory=10) == 0.0 and profile.earliest(0.0, 1, 6.0, memory=10) == 10.0


def test_profile_treats_overdue_runs_as_ending_just_after_now():
    profile = Profile(10.0, 4, 0, [(3.0, 4)])
    assert profile.free[0] == 0 and profile.times[1] == math.nextafter(10.0, INF)


def test_cost_matrix_fills_unknown_platforms_and_marks_blind_jobs():
    known = job("A", estimates={"a": 4.0, "b": None})
    blind = job("B", estimates={"a": None})
    cut = job("C", estimates={"a": 10.0, "b": 10.0}, checkpoint=frozenset({"a"}), progress=0.5)
    matrix, mask = cost_matrix([known, blind, cut], ["a", "b", "c"])
    assert np.array_equal(matrix, [[4.0, 4.0, INF], [INF, INF, INF], [5.0, 10.0, INF]])
    assert mask.tolist() == [False, True, False]
    matrix, _ = cost_matrix([cut], ["a", "b"], progress={"C": 0.0})
    assert matrix.tolist() == [[10.0, 10.0]]


@pytest.mark.parametrize(("objective", "first"), [("flowtime", "short"), ("makespan", "long")])
def test_ties_go_shortest_or_longest_first(objective, first):
    s = scheduler({"long": {"a": 9}, "short": {"a": 1}}, [("M", "a")], policy=f"edf:objective={objective}")
    assert kinds(s.submit([job("long"), job("short")], 0)) == [("start", first, "M")]


def test_priority_then_deadline_before_length():
    times = {n: {"a": t} for n, t in (("plain", 1), ("due", 5), ("vip", 9))}
    s = scheduler(times, [("M", "a")])
    s.submit([job("plain"), job("due", deadline=100.0), job("vip", priority=2)], 0)
    plan = sorted((j.planned_start or 0, j.id) for j in s.state.jobs.values())
    assert [name for _, name in plan] == ["vip", "due", "plain"]


def test_many_slot_machine_reserves_for_a_wide_job_and_backfills_only_what_fits_before_it():
    times = {"A": {"pool": 10}, "B": {"pool": 10}, "W": {"pool": 5}, "N": {"pool": 3}, "T": {"pool": 2}}
    s = scheduler(times, [], policy="edf:objective=flowtime")
    s.machine_gained(Machine("P", "pool", slots=4), 0)
    orders = s.submit([job("A", size=2), job("B", size=1), job("W", size=4), job("N", size=1), job("T", size=3)], 0)
    assert kinds(orders) == [("start", "T", "P"), ("start", "N", "P")]  # T and N end by 3, before W's window
    planned = {j.id: j.planned_start for j in s.state.jobs.values() if j.planned_machine}
    assert planned == {"W": 3, "A": 8, "B": 8}
    assert kinds(s.job_ended("T", "P", 2)) == []  # W still waits for N
    assert kinds(s.job_ended("N", "P", 3)) == [("start", "W", "P")]


def test_unknown_estimates_start_on_idle_machines_only():
    s = scheduler({"A": {"a": None}, "B": {"a": None}}, [("M1", "a")])
    assert kinds(s.submit([job("A"), job("B")], 0)) == [("start", "A", "M1")]
    assert s.state.jobs["B"].planned_machine is None
    assert kinds(s.job_ended("A", "M1", 3)) == [("start", "B", "M1")]
