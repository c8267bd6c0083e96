"""``benchmarks/instances/``: the batch generator is reproducible and shaped as documented; the independent check
refuses what is not a schedule."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.instances.batches import generate
from benchmarks.instances.check import checked_makespan
from scheduler.batch.relaxations import related_speeds

INF = float("inf")


def test_the_checker_refuses_what_is_not_a_schedule():
    times = np.array([[1.0, INF], [2.0, 3.0]])
    assert checked_makespan(times, [0.0, 1.0], [0, 1]) == 4.0
    with pytest.raises(ValueError, match="cannot run"):
        checked_makespan(times, [0.0, 0.0], [1, 1])
    with pytest.raises(ValueError, match="not one of"):
        checked_makespan(times, [0.0, 0.0], [0, 2])
    with pytest.raises(ValueError, match="assignments for"):
        checked_makespan(times, [0.0, 0.0], [0])


def test_the_generator_is_reproducible_and_cpu_gpu_shaped():
    a, b = generate("unrelated", 200, 8, 4), generate("unrelated", 200, 8, 4)
    assert np.array_equal(a.times, b.times)
    assert (
        np.isinf(a.times).any(axis=0).sum() <= 2
    )  # programs without an accelerator version: INF on the 2 accelerators
    assert related_speeds(a.times) is None
    related = generate("related", 50, 5, 0).times
    assert np.allclose(related / related[:, :1], related[0] / related[0, 0])
    with pytest.raises(ValueError, match="kind"):
        generate("identical", 5, 2, 0)
