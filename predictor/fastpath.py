"""Fast predictions of fitted models on numpy rows: the numbers of ``predict``, without its per-call overhead.

A single-row ``predict`` of a scikit-learn model costs about a millisecond, mostly input validation and
pandas; LightGBM's default threading adds more. Structures the zoo builds (LightGBM's booster on one
thread, fixed transforms, standard scaling, linear models, target transforms, pipelines of these,
constants, the history rule, weighted ensembles of these) are evaluated here on a float matrix directly.
Each compiled function is checked against the model's own ``predict`` on probe rows when it is built, and
anything unrecognised or different is served by ``predict`` on a DataFrame instead: correctness first. The
model given is never changed. The private APIs of scikit-learn and LightGBM this needs are reached through
:mod:`predictor.thirdparty`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from sklearn.compose import TransformedTargetRegressor
from sklearn.dummy import DummyRegressor
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

from models.baselines import HistoryBaseline, first_known
from models.ensemble import AveragedRegressor
from predictor import thirdparty

Rows = thirdparty.Rows
RTOL = 1e-7


def single_threaded(model: Any) -> Any:
    """``model`` with every ``n_jobs`` at 1, as a copy when one was not (LightGBM's default threads make one row ~100x slower)."""
    if not (hasattr(model, "get_params") and hasattr(model, "set_params")):
        return model
    threaded = {k: 1 for k, v in model.get_params(deep=True).items() if k.split("__")[-1] == "n_jobs" and v != 1}
    return copy.deepcopy(model).set_params(**threaded) if threaded else model


def generic(model: Any, feature_names: Sequence[str]) -> Rows:
    """``model.predict`` on a DataFrame with the champion's feature names: works for every model."""
    columns = list(feature_names)
    return lambda X: np.asarray(model.predict(pd.DataFrame(X, columns=columns)), dtype=float).reshape(-1)


def probe_rows(n_features: int, examples: np.ndarray | None = None) -> np.ndarray:
    """Rows to check a compiled function on: the model's input examples, zeros, ones and seeded log-uniform rows."""
    rng = np.random.default_rng(0)
    synthetic = [np.zeros((1, n_features)), np.ones((1, n_features)), 10 ** rng.uniform(-1, 6, size=(8, n_features))]
    given = [] if examples is None or examples.size == 0 else [np.asarray(examples, dtype=float)]
    return np.vstack(given + synthetic)


def compile_rows(model: Any, feature_names: Sequence[str], probes: np.ndarray) -> tuple[Rows, str]:
    """The fastest function of an (n, k) float matrix equal to ``model.predict`` on ``probes``; and ``fast`` or ``generic``."""
    fast = _compile(model)
    if fast is not None and _agrees(fast, generic(model, feature_names), probes):
        return fast, "fast"
    return generic(single_threaded(model), feature_names), "generic"


def _agrees(fast: Rows, reference: Rows, probes: np.ndarray) -> bool:
    """Whether ``fast`` gives the numbers of ``reference`` on ``probes`` (NaN where it does)."""
    try:
        # far-out probes overflow exp of log-seconds models
        with np.errstate(over="ignore", invalid="ignore"):
            return bool(np.allclose(fast(probes), reference(probes), rtol=RTOL, atol=0.0, equal_nan=True))
    except (ValueError, TypeError, ArithmeticError):
        return False


def _compile(model: Any) -> Rows | None:
    """A numpy evaluation of a recognised fitted regressor or transform, or None."""
    for kind, build in _BUILDERS:
        if isinstance(model, kind):
            return build(model)
    linear = thirdparty.linear_model_base()
    if linear is not None and isinstance(model, linear):
        return _linear(model)
    return _lightgbm(model)


def _transformed_target(model: TransformedTargetRegressor) -> Rows | None:
    """The inner regressor, then the inverse target transform (e.g. exp of a log-seconds model)."""
    inner = _compile(model.regressor_)
    transformer = model.transformer_
    if inner is None or not isinstance(transformer, FunctionTransformer):
        return None
    inverse = transformer.inverse_func or (lambda y: y)
    kwargs = transformer.inv_kw_args or {}
    return lambda X: np.asarray(inverse(inner(X).reshape(-1, 1), **kwargs), dtype=float).reshape(-1)


def _pipeline(model: Pipeline) -> Rows | None:
    """Each step in turn, when every step is recognised."""
    compiled = [_compile(step) for _, step in model.steps if step not in (None, "passthrough")]
    stages = [stage for stage in compiled if stage is not None]
    if not stages or len(stages) < len(compiled):
        return None

    def run(X: np.ndarray) -> np.ndarray:
        for stage in stages:
            X = stage(X)
        return X

    return run


def _function(model: FunctionTransformer) -> Rows:
    """The transformer's function with its keyword arguments."""
    func = model.func or (lambda X: X)
    kwargs = model.kw_args or {}
    return lambda X: np.asarray(func(X, **kwargs), dtype=float)


def _scaler(model: StandardScaler) -> Rows:
    """Centre and scale by the fitted mean and scale, as ``transform`` does."""
    mean = model.mean_ if model.with_mean else None
    scale = model.scale_ if model.with_std else None

    def run(X: np.ndarray) -> np.ndarray:
        if mean is not None:
            X = X - mean
        return X / scale if scale is not None else X

    return run


def _linear(model: Any) -> Rows | None:
    """``X @ coef + intercept`` for a single-target linear model."""
    coef = np.asarray(model.coef_, dtype=float)
    if coef.ndim != 1:
        return None
    intercept = float(np.asarray(model.intercept_).reshape(-1)[0])
    return lambda X: X @ coef + intercept


def _constant(model: DummyRegressor) -> Rows | None:
    """The fitted constant for every row."""
    constant = np.asarray(model.constant_, dtype=float).reshape(-1)
    if constant.size != 1:
        return None
    return lambda X: np.full(X.shape[0], constant[0])


def _history(model: HistoryBaseline) -> Rows:
    """The first known history column, capped at the request (:func:`models.baselines.first_known`)."""
    columns, cap, mean = list(model.column_indices_), model.cap_index_, float(model.mean_)
    return lambda X: first_known(X, columns, cap, mean)


def _averaged(model: AveragedRegressor) -> Rows | None:
    """The members' weighted mean, when every member is recognised."""
    members = [_compile(estimator) for estimator in model.estimators_]
    compiled = [member for member in members if member is not None]
    if len(compiled) < len(members):
        return None
    weights = model.weights
    return lambda X: np.average([np.asarray(m(X), dtype=float).reshape(-1) for m in compiled], axis=0, weights=weights)


def _lightgbm(model: Any) -> Rows | None:
    """LightGBM's booster on one thread, for a fitted ``LGBMRegressor`` (None for anything else).

    The booster's own predictor object is built once instead of on every call (a third of a single row's
    time); that object is private to LightGBM (:func:`predictor.thirdparty.booster_rows`): without it, None.
    """
    try:
        from lightgbm import LGBMRegressor
    except ImportError:
        return None
    if not isinstance(model, LGBMRegressor) or not hasattr(model, "booster_"):
        return None
    return thirdparty.booster_rows(model.booster_, num_threads=1)


_BUILDERS: tuple[tuple[type, Callable[[Any], Rows | None]], ...] = (
    (TransformedTargetRegressor, _transformed_target),
    (Pipeline, _pipeline),
    (FunctionTransformer, _function),
    (StandardScaler, _scaler),
    (DummyRegressor, _constant),
    (HistoryBaseline, _history),
    (AveragedRegressor, _averaged),
)
