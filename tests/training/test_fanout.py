"""Fits fanned out over local processes give what the same fits give in turn."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from training.crossval import FoldFit, collect, cross_validate
from training.dataset import TrainingSet
from training.fanout import run_fits
from training.fit_tasks import Fit, Refit
from training.folds import FoldPlan


@pytest.fixture(scope="module")
def sets() -> list[TrainingSet]:
    rng = np.random.default_rng(4)
    out = []
    for platform, speed in (("p1", 1.0), ("p2", 2.0)):
        X = pd.DataFrame({"n": rng.uniform(1, 100, 30), "m": rng.uniform(1, 10, 30)})
        y = speed * X["n"].to_numpy() * X["m"].to_numpy() * rng.lognormal(0, 0.05, 30)
        out.append(TrainingSet("a", platform, X, y, ["m", "n"], [f"r{i:02d}" for i in range(30)]))
    return out


def test_parallel_fits_equal_serial_cross_validation(sets: list[TrainingSet]) -> None:
    plans = [FoldPlan.create(ts.run_ids, 3, seed=2) for ts in sets]
    fits = [Fit(i, name, fold) for i in range(2) for name in ("linear_log", "lightgbm") for fold in (0, 1, 2, None)]
    results = list(run_fits(fits, sets, plans, seed=7, n_jobs=2))
    assert sorted((f.set_index, f.model_name, f.fold if f.fold is not None else -1) for f, _ in results) == sorted(
        (f.set_index, f.model_name, f.fold if f.fold is not None else -1) for f in fits
    )
    for index, ts in enumerate(sets):
        for name in ("linear_log", "lightgbm"):
            folds = [r for f, r in results if (f.set_index, f.model_name) == (index, name) and isinstance(r, FoldFit)]
            serial = cross_validate(name, ts, plans[index], seed=7)
            np.testing.assert_allclose(collect(name, ts, plans[index], folds).predictions, serial.predictions)
            (refit,) = [r for f, r in results if (f.set_index, f.model_name, f.fold) == (index, name, None)]
            assert isinstance(refit, Refit) and refit.seconds > 0


def test_serial_fits_come_back_in_order(sets: list[TrainingSet]) -> None:
    plans = [FoldPlan.create(ts.run_ids, 3, seed=2) for ts in sets]
    fits = [Fit(1, "mean", fold) for fold in (2, 0, None, 1)]
    assert [f for f, _ in run_fits(fits, sets, plans, seed=0, n_jobs=1)] == fits


def openblas_threads() -> set[int]:
    return {pool["num_threads"] for pool in threadpool_info() if pool["internal_api"] == "openblas"}


def test_serial_fits_run_on_one_blas_thread_and_give_the_machine_back(sets: list[TrainingSet]) -> None:
    """While the results come in, this process's OpenBLAS runs one thread; after the last, what it ran before."""
    plans = [FoldPlan.create(ts.run_ids, 3, seed=2) for ts in sets]
    fits = [Fit(0, "linear_log", fold) for fold in (0, 1, 2)]
    with threadpool_limits(limits=2):
        assert openblas_threads() == {2}
        during = [openblas_threads() for _ in run_fits(fits, sets, plans, seed=0, n_jobs=1)]
        assert during == [{1}] * 3
        assert openblas_threads() == {2}


def test_collect_needs_every_fold(sets: list[TrainingSet]) -> None:
    plan = FoldPlan.create(sets[0].run_ids, 3, seed=2)
    with pytest.raises(ValueError, match=r"one fit per fold of the plan, got folds \[0, 2\]"):
        collect("mean", sets[0], plan, [FoldFit(0, np.zeros(10), 0.0), FoldFit(2, np.zeros(10), 0.0)])
