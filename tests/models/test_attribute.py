"""Single-attribute members as Weka builds them (Weka's own numbers: tests/training/test_weka_fixture.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from models.attribute import BestAttributeIsotonic, SimpleLinearRegression

# y = 3 + 2 * good exactly; "noisy" correlates loosely; "flat" never varies.
X = pd.DataFrame({"noisy": [1.0, 3.0, 2.0, 5.0, 4.0, 6.0], "good": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], "flat": [7.0] * 6})
Y = 3.0 + 2.0 * X["good"].to_numpy()


def test_simple_linear_picks_the_attribute_with_least_squared_error() -> None:
    model = SimpleLinearRegression().fit(X, Y)
    assert (model.attribute_, model.slope_, model.intercept_) == (1, pytest.approx(2.0), pytest.approx(3.0))
    np.testing.assert_allclose(model.predict(pd.DataFrame({"noisy": [0.0], "good": [10.0], "flat": [0.0]})), [23.0])


def test_simple_linear_without_a_varying_attribute_predicts_the_mean() -> None:
    model = SimpleLinearRegression().fit(X[["flat"]], Y)
    assert model.attribute_ == -1
    np.testing.assert_allclose(model.predict(X[["flat"]]), np.full(6, Y.mean()))


def test_simple_linear_first_attribute_wins_a_tie() -> None:
    twins = pd.DataFrame({"a": X["good"], "b": X["good"]})
    assert SimpleLinearRegression().fit(twins, Y).attribute_ == 0


def test_isotonic_steps_at_midpoints_and_takes_the_upper_level_on_a_cut() -> None:
    x = pd.DataFrame({"x": [1.0, 2.0, 4.0]})
    model = BestAttributeIsotonic().fit(x, [10.0, 20.0, 40.0])
    queries = pd.DataFrame({"x": [0.0, 1.4, 1.5, 2.9, 3.0, 3.1, 9.0]})
    np.testing.assert_allclose(model.predict(queries), [10, 10, 20, 20, 40, 40, 40])


def test_isotonic_pools_violators_and_ties() -> None:
    x = pd.DataFrame({"x": [1.0, 2.0, 2.0, 3.0]})
    model = BestAttributeIsotonic().fit(x, [1.0, 5.0, 3.0, 2.0])
    np.testing.assert_allclose(model.levels_, [1.0, 10 / 3, 10 / 3])  # ties pooled with weight 2, then 2.0 joins


def test_isotonic_considers_decreasing_fits() -> None:
    x = pd.DataFrame({"up": [1.0, 2.0, 3.0, 4.0, 5.0], "down": [5.0, 4.0, 3.0, 2.0, 1.0]})
    model = BestAttributeIsotonic().fit(x[["down"]], [1.0, 2.0, 3.0, 5.0, 8.0])
    assert model.increasing_ is False
    np.testing.assert_allclose(model.predict(x[["down"]]), [1.0, 2.0, 3.0, 5.0, 8.0])
    assert BestAttributeIsotonic().fit(x, [1.0, 2.0, 3.0, 5.0, 8.0]).attribute_ == 0
