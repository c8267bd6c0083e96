"""Pieces of a candidate's tracking: what is found inside a fitted model, and the figures."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from models import make_model
from training import plots
from training.crossval import inner_attribute

RNG = np.random.default_rng(9)
X = pd.DataFrame({"size": 10 ** RNG.uniform(1, 3, 60), "other": RNG.normal(0, 1, 60)})
Y = 0.01 * X["size"].to_numpy() ** 1.3


def test_tuned_settings_are_found_through_wrappers() -> None:
    model = make_model("svr_log", seed=0, svr__regressor__param_grid={"C": [1.0, 10.0]}).fit(X, Y)
    assert set(inner_attribute(model, "best_params_")) == {"C"}
    assert inner_attribute(make_model("linear_log").fit(X, Y), "best_params_") is None


def test_the_cascade_learning_curve_is_found_inside_the_log_target() -> None:
    curve = inner_attribute(make_model("cascade_log", seed=0).fit(X, Y), "learning_curve_")
    assert len(curve["hidden_units"]) >= 1
    assert isinstance(plots.learning_curves([curve, curve], "cascade"), Figure)


def test_figures_are_drawn_even_with_zero_runtimes() -> None:
    actual = np.array([0.0, 1.0, 2.0, 10.0])
    predicted = np.array([0.5, 1.5, 1.0, 10.0])
    assert len(plots.relative_errors(actual, predicted, "t").axes) == 1
    assert len(plots.pred_vs_actual(actual, predicted, "t").axes) == 1
    curve = {"hidden_units": np.array([0, 1, 2]), "train_mse": np.array([1.0, 0.5, 0.2])}
    assert len(plots.learning_curves([curve], "t").axes[0].lines) == 1


def test_figures_are_saved_as_svg_with_their_text_as_text(tmp_path) -> None:
    actual = np.array([1.0, 2.0, 10.0])
    path = plots.save(plots.pred_vs_actual(actual, actual * 1.1, "mafft on cpu1"), tmp_path / "pred_vs_actual.svg")
    svg = path.read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert "mafft on cpu1" in svg and "measured seconds" in svg
