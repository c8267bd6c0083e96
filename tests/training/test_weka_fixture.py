"""Our metrics and Weka-like members against what Weka 3.6 printed for a small fixture (tests/fixtures/weka/record.sh)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from models import make_model
from training.crossval import cross_validate
from training.dataset import TrainingSet
from training.folds import FoldPlan
from training.metrics import compute_metrics

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "weka"
# Weka prints statistics with 4 decimals and predictions with 3.
STAT_TOLERANCE = 0.5e-4 + 1e-9
PREDICTION_TOLERANCE = 0.5e-3 + 1e-9
STATS = {
    "Correlation coefficient": "cc",
    "Mean absolute error": "mae",
    "Root mean squared error": "rmse",
    "Relative absolute error": "rae",
    "Root relative squared error": "rrse",
}
MEMBERS = {"LinearRegression": "linear", "SimpleLinearRegression": "simple_linear", "IsotonicRegression": "isotonic"}


def read_arff(name: str) -> pd.DataFrame:
    """The fixture's numeric ARFF file as a frame."""
    lines = [line.strip() for line in (FIXTURE / name).read_text().splitlines()]
    columns = [line.split()[1] for line in lines if line.lower().startswith("@attribute")]
    start = next(i for i, line in enumerate(lines) if line.lower() == "@data") + 1
    rows = [[float(v) for v in line.split(",")] for line in lines[start:] if line and not line.startswith("%")]
    return pd.DataFrame(rows, columns=columns)


def weka_stats(name: str, block: str) -> dict[str, float]:
    """The statistics Weka printed under ``=== {block} ===`` in output file ``name``."""
    text = (FIXTURE / name).read_text().split(f"=== {block} ===")[1].split("Total Number")[0]
    found = {}
    for label, key in STATS.items():
        match = re.search(rf"{label}\s+(-?[\d.]+)", text)
        assert match, f"{label} missing in {name}"
        found[key] = float(match.group(1))
    return found


def weka_predictions(name: str) -> np.ndarray:
    """The ``predicted`` column of a ``-p 0`` output."""
    rows = re.findall(r"^\s*\d+\s+(-?[\d.]+)\s+(-?[\d.]+)\s+(-?[\d.]+)", (FIXTURE / name).read_text(), re.MULTILINE)
    return np.array([float(predicted) for _, predicted, _ in rows])


@pytest.fixture(scope="module")
def data() -> tuple[pd.DataFrame, np.ndarray, pd.DataFrame, np.ndarray]:
    train, test = read_arff("train.arff"), read_arff("test.arff")
    target = "wall_seconds"
    return train.drop(columns=target), train[target].to_numpy(), test.drop(columns=target), test[target].to_numpy()


def assert_stats(ours: dict[str, float], printed: dict[str, float]) -> None:
    assert printed, "no statistics were read from Weka's output"
    for key, value in printed.items():
        assert ours[key] == pytest.approx(value, abs=STAT_TOLERANCE), key


@pytest.mark.parametrize("classifier", list(MEMBERS))
def test_supplied_test_set_reproduces_weka(classifier: str, data: tuple) -> None:
    X_train, y_train, X_test, y_test = data
    model = make_model(MEMBERS[classifier]).fit(X_train, y_train)
    predictions = model.predict(X_test)
    np.testing.assert_allclose(
        predictions, weka_predictions(f"{classifier}.predictions.txt"), atol=PREDICTION_TOLERANCE
    )
    prior = np.full_like(y_test, y_train.mean())
    assert_stats(
        compute_metrics(y_test, predictions, prior), weka_stats(f"{classifier}.test.txt", "Error on test data")
    )
    in_sample = compute_metrics(y_train, model.predict(X_train), np.full_like(y_train, y_train.mean()))
    assert_stats(in_sample, weka_stats(f"{classifier}.test.txt", "Error on training data"))


def test_rae_is_relative_to_the_training_mean_not_the_test_mean(data: tuple) -> None:
    X_train, y_train, X_test, y_test = data
    predictions = make_model("linear").fit(X_train, y_train).predict(X_test)
    printed = weka_stats("LinearRegression.test.txt", "Error on test data")["rae"]
    assert compute_metrics(y_test, predictions, np.full_like(y_test, y_test.mean()))["rae"] != pytest.approx(
        printed, abs=0.1
    )


def test_leave_one_out_pools_each_folds_prior_as_weka(data: tuple) -> None:
    X_train, y_train, _, _ = data
    run_ids = [f"r{i:02d}" for i in range(len(y_train))]
    training_set = TrainingSet("fixture", "weka", X_train, y_train, list(X_train.columns), run_ids)
    plan = FoldPlan(run_ids, np.arange(len(y_train)))
    result = cross_validate("simple_linear", training_set, plan)
    assert_stats(result.metrics, weka_stats("SimpleLinearRegression.loo.txt", "Cross-validation"))
    global_prior = compute_metrics(y_train, result.predictions, np.full_like(y_train, y_train.mean()))
    assert global_prior["rae"] != pytest.approx(result.metrics["rae"], abs=0.1)
