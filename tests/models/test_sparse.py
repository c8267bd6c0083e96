"""The sparse median line: keeps the inputs that drive the time, drops those that vary by chance, shrugs off outliers."""

from __future__ import annotations

import numpy as np
import pandas as pd

from models import make_model
from models.sparse import SparseMedianRegression, bic_support


def _runs(n: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """Seconds = 2e-6 * bases^1.0 * length^0.5, with five input statistics that do not matter (a file's GC content)."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"bases": 10 ** rng.uniform(4, 7, n), "length": rng.choice([100.0, 250.0], n)})
    for i in range(5):
        X[f"gc{i}"] = rng.uniform(0.40, 0.44, n)
    y = 2e-6 * X["bases"].to_numpy() * X["length"].to_numpy() ** 0.5 * np.exp(rng.normal(0, 0.03, n))
    return X, y


def test_keeps_the_inputs_that_drive_the_time_and_drops_chance_ones() -> None:
    X, y = _runs(80, seed=1)
    logged = np.log(X.to_numpy())
    support, warned = bic_support((logged - logged.mean(0)) / logged.std(0), np.log(y))
    assert list(support) == [0, 1] and warned == 0


def test_sparse_member_predicts_new_jobs_better_than_the_full_median_line() -> None:
    X, y = _runs(30, seed=2)
    X_new, y_new = _runs(200, seed=3)
    errors = {
        name: np.abs(make_model(name).fit(X, y).predict(X_new) / y_new - 1).mean()
        for name in ("sparse_lad_log", "lad_log")
    }
    assert errors["sparse_lad_log"] < 0.05
    assert errors["sparse_lad_log"] < errors["lad_log"]


def test_a_few_slow_runs_do_not_move_the_line() -> None:
    rng = np.random.default_rng(4)
    X = rng.uniform(1, 100, (60, 1))
    y = 2.0 * X[:, 0] + 5.0
    y[:3] *= 50
    model = SparseMedianRegression().fit(X, y)
    assert np.allclose(model.predict(X)[3:], 2.0 * X[3:, 0] + 5.0, rtol=1e-6)


def test_fewer_rows_than_columns_and_constant_targets_are_answered() -> None:
    rng = np.random.default_rng(5)
    X = rng.normal(size=(6, 10))
    y = 3.0 * X[:, 0] + 1.0
    assert np.isfinite(SparseMedianRegression().fit(X, y).predict(X)).all()
    flat = SparseMedianRegression().fit(X, np.full(6, 2.5))
    assert flat.support_.size == 0 and np.allclose(flat.predict(X), 2.5)
