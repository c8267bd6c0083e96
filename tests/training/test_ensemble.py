"""Greedy ensemble selection on out-of-fold predictions, and its nested cross-validation."""

from __future__ import annotations

import numpy as np
import pandas as pd

from training.crossval import CVResult
from training.dataset import TrainingSet
from training.ensemble import blend, cross_validated_ensemble, greedy_selection
from training.folds import FoldPlan

Y = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
PRIORS = np.full(6, 3.5)


def test_forward_selection_takes_complementary_members_and_stops_when_nothing_helps() -> None:
    high, low = Y + 1.0, Y - 1.0  # each off by one; their mean is exact
    chosen = greedy_selection({"high": high, "low": low, "mean": PRIORS}, Y, PRIORS, "mae")
    assert chosen == {"high": 1, "low": 1}
    np.testing.assert_allclose(blend({"high": high, "low": low}, chosen), Y)
    assert greedy_selection({"exact": Y, "high": high}, Y, PRIORS, "rae") == {"exact": 1}


def test_weights_count_repeated_picks() -> None:
    # "high" first (MAE 1), then "low" (mean Y - 0.5), then "high" again: 2 x (Y + 1) + (Y - 2) is exact.
    chosen = greedy_selection({"high": Y + 1.0, "low": Y - 2.0}, Y, PRIORS, "mae")
    assert chosen == {"high": 2, "low": 1}


def test_each_fold_is_predicted_by_members_chosen_on_the_other_folds() -> None:
    X = pd.DataFrame({"x": np.arange(6.0)})
    ts = TrainingSet("a", "p", X, Y, ["x"], [f"r{i}" for i in range(6)])
    plan = FoldPlan(ts.run_ids, np.array([0, 0, 0, 1, 1, 1]))
    # "a" is exact on fold 1's rows only, "b" on fold 0's only: each fold gets the member the other fold chose.
    a = np.where(plan.folds == 1, Y, Y + 5.0)
    b = np.where(plan.folds == 0, Y, Y + 5.0)
    results = [CVResult(name, p, PRIORS, [], {}, 0.0) for name, p in (("a", a), ("b", b))]
    result, served = cross_validated_ensemble(results, ts, plan, "mae")
    np.testing.assert_allclose(result.predictions, Y + 5.0)  # no peeking at a fold's own rows
    assert result.model_name == "ensemble" and result.metrics["mae"] == 5.0
    assert sum(served.values()) >= 1
