"""A committee of seeds: distinct initialisations, their mean answer, reproducible for a seed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.neural_network import MLPRegressor

from models import make_model
from models.committee import SeedCommittee

RNG = np.random.default_rng(2)
X = pd.DataFrame({"a": RNG.uniform(0, 1, 80), "b": RNG.uniform(0, 1, 80)})
Y = 3 * X["a"].to_numpy() + X["b"].to_numpy() ** 2


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_members_differ_and_the_committee_answers_their_mean() -> None:
    committee = SeedCommittee(MLPRegressor(hidden_layer_sizes=(8,), max_iter=300), n_members=3, random_state=4).fit(X, Y)
    seeds = {m.random_state for m in committee.estimators_}
    assert len(seeds) == 3
    expected = np.mean([m.predict(X.to_numpy()) for m in committee.estimators_], axis=0)
    np.testing.assert_allclose(committee.predict(X), expected)


def test_a_seed_reproduces_the_committee() -> None:
    first = make_model("mlp_log", seed=5, n_members=2).fit(X, Y).predict(X)
    np.testing.assert_array_equal(first, make_model("mlp_log", seed=5, n_members=2).fit(X, Y).predict(X))
    assert not np.array_equal(first, make_model("mlp_log", seed=6, n_members=2).fit(X, Y).predict(X))
