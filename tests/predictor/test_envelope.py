"""Safe answers: every estimate keeps 0 < lower <= seconds <= upper <= limit, and a job outside the training data says so."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from models import available_models, make_model
from predictor.catalog import Catalog
from predictor.envelope import TrainingEnvelope
from predictor.oracle import RuntimeOracle
from predictor.registry import Champion
from training.dataset import TrainingSet
from training.folds import FoldPlan
from training.crossval import cross_validate
from training.tracking import candidate_numbers

NAMES = ["a", "b", "c"]


def _training_set(n: int = 80, seed: int = 0) -> TrainingSet:
    """Seconds ~ a^0.8 * b^0.3 (c is noise), a and b within [10, 1000]."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.uniform(10, 1000, n), "b": rng.uniform(10, 1000, n), "c": rng.uniform(0, 1, n)})
    y = 0.01 * X["a"].to_numpy() ** 0.8 * X["b"].to_numpy() ** 0.3 * rng.lognormal(0, 0.1, n)
    return TrainingSet("blastn", "cpu-small", X, y, NAMES, [f"r{i:03d}" for i in range(n)])


def _champion(name: str, ts: TrainingSet) -> Champion:
    """Member ``name`` as training would register it: fitted on every row, with its residual quantiles and envelope."""
    plan = FoldPlan.create(ts.run_ids, 5, 0, groups=ts.jobs)
    _, quantiles = candidate_numbers(ts, plan, cross_validate(name, ts, plan), 0.9)
    model = make_model(name, seed=0).fit(ts.X, ts.y)
    tags = {"residual_log_quantiles": json.dumps({str(k): v for k, v in quantiles.items()})}
    envelope = TrainingEnvelope.fit(ts.X, ts.y)
    return Champion("blastn", "cpu-small", "runtime-blastn-cpu-small", "1", "sklearn", NAMES, model, tags, envelope)


def _oracle(catalog: Catalog, champion: Champion) -> RuntimeOracle:
    return RuntimeOracle(catalog, {("blastn", "cpu-small"): champion}, coverage=0.9, limit_quantile=0.95)


def _fuzzed_rows(n: int, seed: int) -> np.ndarray:
    """Feature values from far below to far beyond the trained ranges, zeros and negatives included."""
    rng = np.random.default_rng(seed)
    magnitudes = 10 ** rng.uniform(-3, 9, size=(n, 3))
    signs = rng.choice([-1.0, 1.0], size=(n, 3), p=[0.1, 0.9])
    rows = magnitudes * signs
    rows[rng.random((n, 3)) < 0.1] = 0.0
    return rows


MEMBERS = [m for m in available_models() if m not in ("last_two_mean", "requested_time")]  # those need job-history features


@pytest.mark.parametrize("name", MEMBERS)
def test_every_member_answers_within_the_invariant_over_fuzzed_features(name: str, catalog: Catalog) -> None:
    ts = _training_set()
    oracle = _oracle(catalog, _champion(name, ts))
    rows = np.vstack([ts.X.to_numpy()[:20], _fuzzed_rows(300, seed=len(name))])
    answers = oracle.estimate_jobs([oracle.prepare("blastn", {}, ["cpu-small"], dict(zip(NAMES, r, strict=True))) for r in rows])
    served = [a["cpu-small"] for a in answers if not a["cpu-small"].fallback]
    assert len(served) > 250, f"{name}: too many rows fell back to the profile table"
    floor = float(ts.y.min())
    for e in served:
        assert e.lower is not None and e.upper is not None and e.limit is not None
        assert 0 < e.lower <= e.seconds <= e.upper <= e.limit, (name, e)
        assert e.seconds >= floor * (1 - 1e-12)
    columns = oracle.estimate_matrix("blastn", NAMES, rows, ["cpu-small"])[0]
    by_jobs = [a["cpu-small"].seconds if not a["cpu-small"].fallback else None for a in answers]
    assert [s is None for s in columns.seconds] == [s is None for s in by_jobs]
    assert [s for s in columns.seconds if s is not None] == pytest.approx([s for s in by_jobs if s is not None], rel=1e-9)
    assert columns.extrapolating == [a["cpu-small"].extrapolating for a in answers]


def test_a_job_far_outside_the_training_data_is_flagged_and_answered_by_the_power_law(catalog: Catalog) -> None:
    ts = _training_set()
    oracle = _oracle(catalog, _champion("lightgbm", ts))  # trees stay flat beyond the data
    inside = oracle.estimate("blastn", {}, ["cpu-small"], {"a": 500.0, "b": 500.0, "c": 0.5})["cpu-small"]
    assert not inside.extrapolating and inside.out_of_domain == [] and inside.reason is None
    far = oracle.estimate("blastn", {}, ["cpu-small"], {"a": 50_000.0, "b": 500.0, "c": 0.5})["cpu-small"]
    assert far.extrapolating and far.out_of_domain == ["a"] and "beyond the trained range of a" in far.reason
    truth = 0.01 * 50_000**0.8 * 500**0.3
    assert truth / 3 < far.seconds < truth * 3  # the power law extrapolates; the flat trees would say ~1/20 of it
    inside_width = np.log(inside.upper / inside.lower)
    assert np.log(far.upper / far.lower) > 1.5 * inside_width  # the farther out, the wider


def test_a_hole_inside_the_ranges_is_flagged_without_naming_a_feature(catalog: Catalog) -> None:
    rng = np.random.default_rng(5)
    low, high = rng.uniform(10, 20, (40, 2)), rng.uniform(800, 1000, (40, 2))
    X = pd.DataFrame(np.vstack([low, high]), columns=["a", "b"])
    y = 0.01 * X["a"].to_numpy() * X["b"].to_numpy()
    envelope = TrainingEnvelope.fit(X, y)
    check = envelope.check(np.array([[100.0, 100.0], [15.0, 15.0]]))
    assert check.outside.tolist() == [True, False] and check.out_of_range == [[], []] and check.excess[0] > 0


def test_the_envelope_round_trips_through_json() -> None:
    ts = _training_set()
    envelope = TrainingEnvelope.fit(ts.X, ts.y)
    again = TrainingEnvelope.from_json(envelope.to_json())
    rows = _fuzzed_rows(50, seed=1)
    np.testing.assert_allclose(again.law(rows), envelope.law(rows))
    assert again.check(rows).outside.tolist() == envelope.check(rows).outside.tolist()
    assert (envelope.law_coef >= 0).all() and envelope.floor == pytest.approx(float(ts.y.min()))


def test_a_raw_seconds_model_predicting_zero_is_floored_not_served_as_zero(catalog: Catalog) -> None:
    ts = _training_set()
    champion = _champion("linear", ts)
    oracle = _oracle(catalog, champion)
    # the raw-seconds line goes negative for small a inside the trained ranges
    e = oracle.estimate("blastn", {}, ["cpu-small"], {"a": 10.0, "b": 10.0, "c": 0.99})["cpu-small"]
    assert e.seconds >= float(ts.y.min()) and 0 < e.lower <= e.seconds <= e.upper <= e.limit


def test_the_widening_is_capped_however_far_a_narrow_feature_lies(catalog: Catalog) -> None:
    """A feature of tiny spread (GC fraction 0.4-0.6) met at 0: widened at most to four times the trained log-width."""
    from predictor.envelope import MAX_EXCESS

    ts = _training_set()
    ts.X["c"] = 0.5 + 0.01 * np.sin(np.arange(len(ts.X)))  # nearly constant
    champion = _champion("linear_log", ts)
    oracle = _oracle(catalog, champion)
    inside = oracle.estimate("blastn", {}, ["cpu-small"], {"a": 500.0, "b": 500.0, "c": 0.5})["cpu-small"]
    far = oracle.estimate("blastn", {}, ["cpu-small"], {"a": 500.0, "b": 500.0, "c": 0.0})["cpu-small"]
    assert far.extrapolating and far.out_of_domain == ["c"]
    assert champion.envelope.check(np.array([[500.0, 500.0, 0.0]])).excess[0] == MAX_EXCESS
    ratio = np.log(far.limit / far.seconds) / np.log(inside.limit / inside.seconds)
    assert ratio <= 1 + MAX_EXCESS + 1e-9 and far.limit < 1e4 * far.seconds
