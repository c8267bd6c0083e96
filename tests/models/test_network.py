"""EarlyStoppedNetwork: scikit-learn's contract, held-out choice of training length, members, bad settings."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.utils.estimator_checks import check_estimator

from models import make_model
from models.network import EarlyStoppedNetwork


def curve(n: int = 120, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 3))
    return X, np.sin(X[:, 0]) + X[:, 1] ** 2 + 0.05 * rng.normal(size=n)


def test_passes_check_estimator() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(EarlyStoppedNetwork((4,), max_iter=50, random_state=0), on_fail=None)
    assert [r["check_name"] for r in results if r["status"] == "failed"] == []


def test_held_out_rows_choose_a_length_in_whole_chunks_within_the_cap() -> None:
    X, y = curve()
    model = EarlyStoppedNetwork((8,), chunk=10, max_iter=200, random_state=1).fit(X, y)
    assert len(model.n_iter_) == model.n_members and all(10 <= n <= 200 and n % 10 == 0 for n in model.n_iter_)
    assert np.mean((model.predict(X) - y) ** 2) < 0.1 * np.var(y)


def test_without_held_out_rows_it_trains_for_max_iter() -> None:
    X, y = curve(n=30)
    assert (
        EarlyStoppedNetwork((4,), max_iter=40, validation_fraction=None, random_state=0).fit(X, y).n_iter_ == [40] * 3
    )
    assert EarlyStoppedNetwork((4,), max_iter=40, random_state=0).fit(X[:4], y[:4]).n_iter_ == [40] * 3


def test_members_start_apart_and_answer_their_mean() -> None:
    X, y = curve()
    model = EarlyStoppedNetwork((8,), n_members=3, random_state=4).fit(X, y)
    assert len({network.random_state for network in model.networks_}) == 3
    np.testing.assert_allclose(model.predict(X), np.mean([n.predict(X) for n in model.networks_], axis=0))


def test_the_zoo_members_reproduce_for_a_seed() -> None:
    X, y = curve()

    def fit(seed: int) -> np.ndarray:
        return make_model("mlp_log", seed=seed).fit(X, np.exp(y)).predict(X)

    np.testing.assert_array_equal(fit(5), fit(5))
    assert not np.array_equal(fit(5), fit(6))


def test_a_seed_fixes_the_fit() -> None:
    X, y = curve()

    def fit(seed: int) -> np.ndarray:
        return EarlyStoppedNetwork((8,), random_state=seed).fit(X, y).predict(X)

    np.testing.assert_array_equal(fit(3), fit(3))
    assert not np.array_equal(fit(3), fit(4))


@pytest.mark.parametrize("params", [{"chunk": 0}, {"chunk": 50, "max_iter": 20}, {"n_members": 0}])
def test_bad_lengths_are_refused(params: dict[str, int]) -> None:
    X, y = curve(n=20)
    with pytest.raises(ValueError, match="chunk"):
        EarlyStoppedNetwork(**params).fit(X, y)
