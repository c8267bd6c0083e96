"""Duan's smearing: exp of a log-space answer scaled towards the mean run time."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from models import make_model


def test_smeared_answers_are_the_log_answers_times_the_mean_exp_residual() -> None:
    rng = np.random.default_rng(11)
    X = pd.DataFrame({"size": 10 ** rng.uniform(1, 4, 4000)})
    y = 0.01 * X["size"].to_numpy() * rng.lognormal(0.0, 0.5, 4000)
    median = make_model("linear_log").fit(X, y)
    mean = make_model("linear_log_smeared").fit(X, y)
    assert mean.smearing_factor_ == pytest.approx(np.exp(0.5**2 / 2), rel=0.03)
    np.testing.assert_allclose(mean.predict(X), median.predict(X) * mean.smearing_factor_, rtol=1e-9)
    assert np.mean(mean.predict(X) < y) < np.mean(median.predict(X) < y)
