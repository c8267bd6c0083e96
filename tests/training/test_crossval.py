"""Cross-validation on synthetic data with a known law."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from models import make_model
from training.crossval import cross_validate, refit
from training.dataset import TrainingSet
from training.folds import FoldPlan
from training.metrics import compute_metrics


@pytest.fixture(scope="module")
def doubling() -> TrainingSet:
    """y = 2 x exactly, 40 runs."""
    x = np.linspace(1.0, 100.0, 40)
    run_ids = [f"r{i:02d}" for i in range(40)]
    return TrainingSet("a", "p", pd.DataFrame({"x": x}), 2.0 * x, ["x"], run_ids)


@pytest.fixture(scope="module")
def plan(doubling: TrainingSet) -> FoldPlan:
    return FoldPlan.create(doubling.run_ids, 5, seed=11)


def test_linear_recovers_y_equals_2x(doubling: TrainingSet, plan: FoldPlan) -> None:
    fits: list[int] = []
    result = cross_validate("linear", doubling, plan, on_fit=fits.append)
    assert fits == [0, 1, 2, 3, 4]
    assert result.metrics["rae"] == pytest.approx(0.0, abs=1e-6)
    assert result.metrics["cc"] == pytest.approx(1.0)
    np.testing.assert_allclose(result.predictions, doubling.y, rtol=1e-9)
    assert len(result.fold_metrics) == 5 and result.fit_seconds > 0


def test_mean_model_scores_rae_100_against_the_fold_prior(doubling: TrainingSet, plan: FoldPlan) -> None:
    result = cross_validate("mean", doubling, plan)
    assert result.metrics["rae"] == pytest.approx(100.0)
    np.testing.assert_allclose(result.predictions, result.priors)
    for _, test in plan.splits():
        assert len(set(result.priors[test])) == 1


def test_predictions_are_out_of_fold(doubling: TrainingSet, plan: FoldPlan) -> None:
    lightgbm = cross_validate("lightgbm", doubling, plan, seed=3)
    again = cross_validate("lightgbm", doubling, plan, seed=3)
    np.testing.assert_array_equal(lightgbm.predictions, again.predictions)
    in_sample = refit("lightgbm", doubling, seed=3).predict(doubling.X)
    assert np.abs(lightgbm.predictions - doubling.y).mean() > np.abs(in_sample - doubling.y).mean()


def test_plan_must_cover_the_training_set(doubling: TrainingSet) -> None:
    other = FoldPlan.create([f"x{i}" for i in range(40)], 5, seed=11)
    with pytest.raises(ValueError, match="does not cover"):
        cross_validate("linear", doubling, other)


def test_refit_uses_every_row(doubling: TrainingSet) -> None:
    model = refit("linear", doubling)
    np.testing.assert_allclose(model.predict(pd.DataFrame({"x": [500.0]})), [1000.0])


@pytest.fixture(scope="module")
def stopped() -> TrainingSet:
    """Seconds = x^1.2 with noise, 60 runs; the 15 longest were stopped at one limit (censored there)."""
    rng = np.random.default_rng(5)
    x = 10 ** rng.uniform(0, 3, 60)
    truth = x**1.2 * rng.lognormal(0, 0.3, 60)
    limit = np.sort(truth)[-15]
    return TrainingSet(
        "a",
        "p",
        pd.DataFrame({"x": x}),
        np.minimum(truth, limit),
        ["x"],
        [f"r{i:02d}" for i in range(60)],
        truth >= limit,
    )


def test_members_that_ignore_censoring_fit_the_finished_runs_only(stopped: TrainingSet) -> None:
    plan = FoldPlan.create(stopped.run_ids, 5, seed=2)
    result = cross_validate("linear_log", stopped, plan)
    for fold, (train, test) in enumerate(plan.splits()):
        kept = train[~stopped.censored[train]]
        by_hand = make_model("linear_log").fit(stopped.X.iloc[kept], stopped.y[kept]).predict(stopped.X.iloc[test])
        np.testing.assert_allclose(result.predictions[test], by_hand, err_msg=f"fold {fold}")
    np.testing.assert_allclose(
        refit("linear_log", stopped).predict(stopped.X),
        make_model("linear_log").fit(stopped.X[stopped.finished], stopped.y[stopped.finished]).predict(stopped.X),
    )


def test_members_that_learn_from_censoring_get_it(stopped: TrainingSet) -> None:
    plan = FoldPlan.create(stopped.run_ids, 5, seed=2)
    result = cross_validate("tobit_log", stopped, plan)
    train, test = next(plan.splits())
    by_hand = make_model("tobit_log").fit(stopped.X.iloc[train], stopped.y[train], censored=stopped.censored[train])
    np.testing.assert_allclose(result.predictions[test], by_hand.predict(stopped.X.iloc[test]))
    served = refit("tobit_log", stopped)
    expected = make_model("tobit_log").fit(stopped.X, stopped.y, censored=stopped.censored)
    np.testing.assert_allclose(served.predict(stopped.X), expected.predict(stopped.X))


def test_every_row_is_predicted_and_metrics_score_finished_rows_against_finished_priors(stopped: TrainingSet) -> None:
    plan = FoldPlan.create(stopped.run_ids, 5, seed=2)
    result = cross_validate("linear_log", stopped, plan)
    assert np.isfinite(result.predictions).all() and (result.predictions > 0).all()
    finished = stopped.finished
    for train, test in plan.splits():
        assert set(result.priors[test]) == {stopped.y[train][finished[train]].mean()}
    expected = compute_metrics(stopped.y[finished], result.predictions[finished], result.priors[finished])
    assert {k: result.metrics[k] for k in expected} == expected
    bounds = stopped.censored
    assert result.metrics["censored_rows"] == 15
    assert result.metrics["censored_underestimate"] == pytest.approx(
        (result.predictions[bounds] < stopped.y[bounds]).mean()
    )
    assert all(
        m["censored_rows"] == bounds[test].sum()
        for m, (_, test) in zip(result.fold_metrics, plan.splits())
        if bounds[test].any()
    )


def _history_like(n: int = 400, seed: int = 2) -> TrainingSet:
    """Runs of three features ending in a shuffled order, a tenth of them censored."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.uniform(1, 100, (n, 3)), columns=["a", "b", "c"])
    y = 3.0 * X["a"].to_numpy() * rng.lognormal(0, 0.3, n)
    return TrainingSet(
        "tool",
        "cpu",
        X,
        y,
        ["a", "b", "c"],
        [f"r{i:03d}" for i in range(n)],
        rng.random(n) < 0.1,
        ended=rng.permutation(n),
    )


@pytest.mark.parametrize("member", ["online_log", "sc15"])
def test_an_online_member_answers_each_run_from_the_runs_that_had_ended_at_its_submission(member: str) -> None:
    """One pass through time: a run's answer never depends on a run that ended after its job was submitted, and does
    depend on one that ended before."""
    from training.crossval import fit_every_fold, one_pass

    ts = _history_like()
    names = ["request.procs", "request.time", "c"] if member == "sc15" else ["a", "b", "c"]
    rng = np.random.default_rng(9)
    submitted = np.sort(rng.uniform(0, 1000, len(ts)))
    ended = submitted + rng.exponential(50, len(ts))  # long runs overlap many later submissions
    ts = TrainingSet(
        "tool",
        "cpu",
        ts.X.set_axis(names, axis=1),
        ts.y,
        names,
        ts.run_ids,
        ts.censored,
        ended=ended,
        submitted=submitted,
    )
    plan = FoldPlan.forward_chain(ts.run_ids, ts.ended, 6, submitted=ts.submitted)
    assert one_pass(member, plan) and not one_pass("lightgbm_log", plan)
    assert not one_pass(member, FoldPlan.create(ts.run_ids, 6, seed=0))
    answers = np.full(len(ts), np.nan)
    for fit in fit_every_fold(member, ts, plan):
        answers[plan.test_rows(fit.fold)] = fit.predictions
    j = int(np.flatnonzero(plan.scored & (ts.submitted > 700))[0])
    after = (ts.ended > ts.submitted[j]) & ts.finished & (np.arange(len(ts)) != j)
    before = np.flatnonzero((ts.ended <= ts.submitted[j]) & ts.finished & ~plan.train_rows(0))
    assert after.any() and len(before)
    changed = TrainingSet(
        "tool",
        "cpu",
        ts.X,
        np.where(after, ts.y * 100, ts.y),
        names,
        ts.run_ids,
        ts.censored,
        ended=ended,
        submitted=submitted,
    )
    again = np.full(len(ts), np.nan)
    for fit in fit_every_fold(member, changed, plan):
        again[plan.test_rows(fit.fold)] = fit.predictions
    assert again[j] == answers[j]  # what ended later taught it nothing about job j
    taught = TrainingSet(
        "tool",
        "cpu",
        ts.X,
        np.where(np.isin(np.arange(len(ts)), before), ts.y * 100, ts.y),
        names,
        ts.run_ids,
        ts.censored,
        ended=ended,
        submitted=submitted,
    )
    learned = np.full(len(ts), np.nan)
    for fit in fit_every_fold(member, taught, plan):
        learned[plan.test_rows(fit.fold)] = fit.predictions
    assert learned[j] != answers[j]  # what had ended by then did
