"""Noise of repeated runs: coefficient of variation per group of identical jobs."""

import pandas as pd
import pytest

from benchmarks.noise import noise_summary, repeat_groups


def test_cv_per_identical_job_and_summary():
    frame = pd.DataFrame(
        {
            "algorithm": ["a"] * 5,
            "platform": ["p"] * 5,
            "params": [{"n": 1}, {"n": 1}, {"n": 2}, {"n": 2}, {"n": 3}],
            "wall_seconds": [1.0, 3.0, 10.0, 10.0, 7.0],
        }
    )
    groups = repeat_groups(frame)
    assert len(groups) == 2, "a job run once has no noise to measure"
    assert sorted(groups["cv"]) == pytest.approx([0.0, 2**0.5 / 2])
    summary = noise_summary(frame)
    assert summary.loc[0, "groups"] == 2 and summary.loc[0, "median_cv"] == pytest.approx(2**0.5 / 4)
