"""The zoo: every member honours the scikit-learn contract and learns a simple runtime law."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from models import ZOO, available_models, make_model, register
from models.zoo import NEEDS, applicable, is_rule, target_transform

# Members that learn from features alone (members that read named columns need a job's history; cascade has its own tests).
PLAIN = [m for m in available_models() if not m.startswith("cascade") and not NEEDS[m].features]


@pytest.fixture(scope="module")
def power_law() -> tuple[pd.DataFrame, np.ndarray]:
    """Seconds = 0.01 * size^1.5, sizes over three orders of magnitude, plus an irrelevant feature."""
    rng = np.random.default_rng(7)
    X = pd.DataFrame({"size": 10 ** rng.uniform(1, 4, 120), "noise": rng.normal(0, 1, 120)})
    return X, 0.01 * X["size"].to_numpy() ** 1.5


def test_the_skeleton_members_are_registered() -> None:
    assert available_models()[:5] == ["mean", "linear", "linear_log", "lightgbm", "lightgbm_log"]
    assert set(available_models()) == set(ZOO)


@pytest.mark.parametrize("name", PLAIN)
def test_member_fits_predicts_and_clones(name: str, power_law: tuple[pd.DataFrame, np.ndarray]) -> None:
    X, y = power_law
    model = make_model(name, seed=1)
    assert model.fit(X, y) is model
    predictions = model.predict(X)
    assert predictions.shape == y.shape and np.isfinite(predictions).all()
    assert clone(model).get_params().keys() == model.get_params().keys()


@pytest.mark.parametrize(
    "name",
    [
        "linear_log",
        "lad_log",
        "sparse_lad_log",
        "quadratic_log",
        "lightgbm",
        "lightgbm_log",
        "simple_linear_log",
        "isotonic",
        "svr_log",
        "mlp",
        "mlp_log",
    ],
)
def test_member_beats_the_mean_on_a_power_law(name: str, power_law: tuple[pd.DataFrame, np.ndarray]) -> None:
    X, y = power_law
    error = np.abs(make_model(name, seed=1).fit(X, y).predict(X) - y).mean()
    baseline = np.abs(make_model("mean").fit(X, y).predict(X) - y).mean()
    assert error < 0.2 * baseline


def test_lad_is_not_dragged_by_a_few_slow_outliers() -> None:
    rng = np.random.default_rng(3)
    X = pd.DataFrame({"size": rng.uniform(1, 100, 60)})
    y = 2.0 * X["size"].to_numpy() + 5.0
    y[:3] *= 50  # three runs on a congested node
    clean = 2.0 * X["size"].to_numpy()[3:] + 5.0
    lad_error = np.abs(make_model("lad").fit(X, y).predict(X)[3:] - clean).max()
    linear_error = np.abs(make_model("linear").fit(X, y).predict(X)[3:] - clean).max()
    assert lad_error < 1e-6 * clean.max() < linear_error


def test_quadratic_log_learns_an_exponent_that_another_feature_sets() -> None:
    # MAFFT-like: seconds ~ sequences^1 in one strategy and sequences^2 in the other, on unseen sizes.
    rng = np.random.default_rng(4)

    def runs(n: int, low: float, high: float) -> tuple[pd.DataFrame, np.ndarray]:
        X = pd.DataFrame({"sequences": rng.uniform(low, high, n), "iterative": rng.integers(0, 2, n).astype(float)})
        return X, 0.01 * X["sequences"].to_numpy() ** (1.0 + X["iterative"].to_numpy())

    X, y = runs(80, 10, 200)
    X_new, y_new = runs(40, 200, 400)

    def error(name: str) -> float:
        return float(np.median(np.abs(make_model(name).fit(X, y).predict(X_new) / y_new - 1)))

    assert error("quadratic_log") < 0.02 < 0.3 < error("linear_log")


def test_linear_log_accepts_zero_and_negative_features() -> None:
    X = pd.DataFrame({"a": [-5.0, 0.0, 1.0, 10.0, 100.0], "b": [0.0, 1.0, 0.0, 1.0, 0.0]})
    y = np.array([1.0, 2.0, 3.0, 30.0, 300.0])
    assert np.isfinite(make_model("linear_log").fit(X, y).predict(X)).all()


def test_seed_reaches_nested_random_states_and_params_are_routed() -> None:
    model = make_model("lightgbm_log", seed=42, regressor__n_estimators=7)
    assert model.get_params()["regressor__random_state"] == 42
    assert model.get_params()["regressor__n_estimators"] == 7
    assert make_model("lightgbm", seed=3).get_params()["random_state"] == 3


def test_lightgbm_is_deterministic_for_a_seed(power_law: tuple[pd.DataFrame, np.ndarray]) -> None:
    X, y = power_law
    first = make_model("lightgbm", seed=5).fit(X, y).predict(X)
    np.testing.assert_array_equal(first, make_model("lightgbm", seed=5).fit(X, y).predict(X))


def test_unknown_model_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="linear_log"):
        make_model("svr-with-typo")


def test_a_name_registers_once() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register("mean")(lambda: None)


def test_models_imports_nothing_of_the_service() -> None:
    ours = "{'predictor', 'training', 'serving', 'scheduler'}"
    probe = f"import sys, models; print(sorted({{m.split('.')[0] for m in sys.modules}} & {ours}))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("name", [m for m in PLAIN if target_transform(m) != "raw"])
def test_log_members_answer_positive_seconds(name: str, power_law: tuple[pd.DataFrame, np.ndarray]) -> None:
    X, y = power_law
    far = X.assign(size=X["size"] * 1e-3)
    assert (make_model(name, seed=1).fit(X, y).predict(far) > 0).all()


def test_target_transform_is_read_from_the_name() -> None:
    assert [target_transform(n) for n in ("mlp", "mlp_log", "mlp_log_smeared")] == ["raw", "log", "log smeared"]


def test_every_family_comes_both_ways() -> None:
    families = {"linear", "simple_linear", "isotonic", "svr", "mlp", "lightgbm"}
    assert {f"{f}_log" for f in families} | families <= set(available_models())


def test_members_apply_where_their_features_and_rows_are() -> None:
    history = ["history.last2_mean", "history.last1", "request.time"]
    assert applicable("last_two_mean", history, 10) and not applicable("last_two_mean", history[1:], 10)
    assert applicable("requested_time", ["request.time"], 3) and not applicable("requested_time", ["size"], 3)
    assert applicable("mlp", ["size"], 20) and not applicable("mlp", ["size"], 19)
    assert applicable("mean", [], 3)


def test_a_job_class_has_a_batch_sites_rules_and_a_catalog_pair_its_median() -> None:
    """Issue 39: the class median, one number for every user, served 435 of wagap's later q_2w jobs 2,600x off; it is a
    catalog pair's rule, not a batch site's (the request and the last two runs)."""
    rules = [name for name in available_models() if is_rule(name)]
    assert {"median", "requested_time", "last_two_mean"} <= set(rules)
    assert {n for n in rules if is_rule(n, job_class=True)} == {"requested_time", "last_two_mean"}
    assert {n for n in rules if is_rule(n, job_class=False)} == {"median"}
    assert not is_rule("lightgbm_log", job_class=True) and not is_rule("lightgbm_log", job_class=False)
