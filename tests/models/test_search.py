"""Tuning on a subsample, refitting on every row."""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import Ridge

from models import make_model
from models.search import SubsampledGridSearch


def test_tunes_on_a_subsample_and_refits_on_every_row() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = X @ [1.0, 2.0, 0.0] + rng.normal(0, 0.01, 300)
    search = SubsampledGridSearch(Ridge(), {"alpha": [1e-3, 1e3]}, max_rows=40).fit(X, y)
    assert search.best_params_ == {"alpha": 1e-3}
    np.testing.assert_allclose(search.best_estimator_.coef_, Ridge(alpha=1e-3).fit(X, y).coef_)


def test_the_svr_members_tune_cost_gamma_and_epsilon() -> None:
    rng = np.random.default_rng(1)
    X = rng.uniform(1, 100, size=(60, 2))
    y = 0.5 * X[:, 0] ** 1.2 + 1.0
    model = make_model("svr_log", seed=3).fit(X, y)
    search = model.named_steps["svr"].regressor_
    assert set(search.best_params_) == {"C", "gamma", "epsilon"}
    assert search.random_state == 3 and (model.predict(X) > 0).all()
