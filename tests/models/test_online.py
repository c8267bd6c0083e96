"""The scheduler-trained online member: constant-cost updates, the asymmetric loss it learns, its residual quantiles."""

from __future__ import annotations

import sys
from collections import Counter

import numpy as np
import pytest

from models.online import AsymmetricOnlineRegressor


def lognormal_log(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A hand-made log: run = 20 x size^0.7 x lognormal(0, 0.5), sizes 1 to 1,000."""
    rng = np.random.default_rng(seed)
    size = rng.uniform(1, 1000, n)
    return np.column_stack([size, rng.uniform(0, 1, n)]), 20 * size**0.7 * np.exp(rng.normal(0, 0.5, n))


def calls_of_one_update(model: AsymmetricOnlineRegressor, row: np.ndarray, seconds: float) -> Counter[str]:
    """The functions one ``learn_one`` calls, by name and count (deterministic, unlike a timing)."""
    seen: Counter[str] = Counter()

    def profile(frame, event, arg):  # noqa: ANN001, ANN202 - sys.setprofile's signature
        if event in ("call", "c_call"):
            seen[getattr(arg, "__qualname__", None) or frame.f_code.co_qualname] += 1

    sys.setprofile(profile)
    try:
        model.learn_one(row, seconds)
    finally:
        sys.setprofile(None)
    return seen


def test_an_update_costs_the_same_after_ten_runs_as_after_twenty_thousand() -> None:
    X, y = lognormal_log(20_010)
    young = AsymmetricOnlineRegressor().fit(X[:10], y[:10])
    old = AsymmetricOnlineRegressor().fit(X[:20_000], y[:20_000])
    assert calls_of_one_update(young, X[-1], y[-1]) == calls_of_one_update(old, X[-1], y[-1])

    # and what it keeps does not grow with the runs it has seen
    def kept(model: AsymmetricOnlineRegressor) -> dict[str, int]:
        return {k: np.asarray(v).nbytes for k, v in vars(model).items()}

    assert kept(young) == kept(old)


@pytest.mark.parametrize(("under_weight", "level"), [(1.0, 0.5), (9.0, 0.9), (1 / 3, 0.25)])
def test_linear_sides_learn_the_quantile_their_weights_ask_for(under_weight: float, level: float) -> None:
    # absolute loss on both sides, under-estimates weighted w: the minimiser is the w / (1 + w) quantile
    X, y = lognormal_log(30_000)
    model = AsymmetricOnlineRegressor(
        under="absolute", over="absolute", under_weight=under_weight, learning_rate=0.02, epochs=2
    )
    model.fit(X[:25_000], y[:25_000])
    below = np.mean(y[25_000:] < model.predict(X[25_000:]))
    assert below == pytest.approx(level, abs=0.06)


def test_a_heavier_under_side_underestimates_fewer_jobs() -> None:
    X, y = lognormal_log(10_000)
    shares = {}
    for weight in (1.0, 4.0):
        model = AsymmetricOnlineRegressor(under="squared", over="absolute", under_weight=weight).fit(X[:8000], y[:8000])
        shares[weight] = np.mean(model.predict(X[8000:]) < y[8000:])
    assert shares[4.0] < shares[1.0] - 0.1


def test_fit_is_the_rows_learned_one_by_one() -> None:
    X, y = lognormal_log(300)
    whole = AsymmetricOnlineRegressor(log=False, area_columns=(0, 1)).fit(X, y)
    one_by_one = AsymmetricOnlineRegressor(log=False, area_columns=(0, 1)).fit(X[:1], y[:1])
    for row, seconds in zip(X[1:], y[1:], strict=True):
        one_by_one.partial_fit(row.reshape(1, -1), np.array([seconds]))
    np.testing.assert_allclose(whole.predict(X), one_by_one.predict(X))
    np.testing.assert_allclose([whole.predict_one(r) for r in X[:5]], whole.predict(X[:5]))


def test_residual_quantiles_cover_what_they_say() -> None:
    X, y = lognormal_log(20_000)
    model = AsymmetricOnlineRegressor(under="absolute", over="absolute").fit(X[:15_000], y[:15_000])
    q = model.residual_quantiles([0.1, 0.9])
    assert q[0.1] < 0 < q[0.9]
    upper = model.predict(X[15_000:]) * np.exp(q[0.9])
    assert np.mean(y[15_000:] <= upper) == pytest.approx(0.9, abs=0.05)


def test_dead_zone_and_wild_runs_keep_answers_finite() -> None:
    X, y = lognormal_log(2000)
    y[::97] = 1e9  # a few absurd runs
    for log in (True, False):
        for kind in ("absolute", "squared", "exponential"):
            model = AsymmetricOnlineRegressor(under=kind, over=kind, dead_zone=0.1, log=log).fit(X, y)
            answers = model.predict(X)
            assert np.all(np.isfinite(answers)) and np.all(answers > 0)


def test_bad_options_are_refused() -> None:
    X, y = lognormal_log(10)
    with pytest.raises(ValueError, match="under and over"):
        AsymmetricOnlineRegressor(under="cubic").fit(X, y)
    with pytest.raises(ValueError, match="dead_zone"):
        AsymmetricOnlineRegressor(dead_zone=-1).fit(X, y)
