"""The pooled profile, searched run by run, gives the same plans as the profile of nodes with one node, through many\nreservations."""

from __future__ import annotations

import random

import pytest

from scheduler.profiles import NodeProfile, PoolProfile
from scheduler.state import INF


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_block_profile_plans_exactly_as_the_numpy_one(seed):
    rng = random.Random(seed)
    slots = rng.choice([16, 64, 240])
    releases = [(rng.uniform(0, 5000), ((0, rng.randint(1, 4)),)) for _ in range(rng.randint(0, 200))]
    free_now = max(slots - sum(nodes[0][1] for _, nodes in releases), 0)
    releases = [(round(at, 1), nodes) for at, nodes in releases]
    fast, reference = PoolProfile(10.0, [free_now], releases), NodeProfile(10.0, [free_now], releases)
    checked = 0
    for _ in range(500):
        size = rng.randint(1, slots + 1) if rng.random() < 0.2 else rng.randint(1, max(1, slots // 4))
        seconds = rng.choice([0.0, 60.0, 3600.0, INF]) if rng.random() < 0.1 else round(rng.uniform(1, 9000), 2)
        at = reference.earliest((size,), seconds)
        assert fast.earliest((size,), seconds) == at
        probe = rng.uniform(10.0, 20000.0)
        assert fast.free_at(probe) == reference.free_at(probe)
        if at == INF:
            continue
        assert fast.window(at, seconds) == reference.window(at, seconds).tolist()
        assert fast.place((size,), at, seconds) == reference.place((size,), at, seconds) == ((0, size),)
        fast.reserve(at, seconds, ((0, size),))
        reference.reserve(at, seconds, ((0, size),))
        checked += 1
    assert checked > 100
    assert fast.times.tolist() == reference.times.tolist() and fast.free.tolist() == reference.free[:, 0].tolist()
