"""Registry of zoo members: each name builds a fresh, unfitted scikit-learn regressor.

Runtimes span orders of magnitude, so ``*_log`` members learn log(seconds) and
answer in seconds again (always positive). Settings are routed with ``set_params`` (nested ones with
double underscores), so every member works with scikit-learn's tools.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from lightgbm import LGBMRegressor
from sklearn.base import RegressorMixin
from sklearn.compose import TransformedTargetRegressor
from sklearn.dummy import DummyRegressor
from sklearn.linear_model import LinearRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

ZOO: dict[str, Callable[..., RegressorMixin]] = {}


def register(name: str) -> Callable[[Callable[..., RegressorMixin]], Callable[..., RegressorMixin]]:
    """Add a factory to the zoo under ``name`` (decorator)."""

    def add(factory: Callable[..., RegressorMixin]) -> Callable[..., RegressorMixin]:
        if name in ZOO:
            raise ValueError(f"zoo member {name!r} is already registered")
        ZOO[name] = factory
        return factory

    return add


def available_models() -> list[str]:
    """Names of every zoo member, in registration order."""
    return list(ZOO)


def make_model(name: str, *, seed: int | None = None, **params: Any) -> RegressorMixin:
    """A fresh member ``name`` with ``params`` set and every ``random_state`` set to ``seed``."""
    try:
        factory = ZOO[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(ZOO)}") from None
    model = factory()
    if seed is not None:
        model.set_params(**{k: seed for k in model.get_params(deep=True) if k.split("__")[-1] == "random_state"})
    return model.set_params(**params)


def signed_log1p(x: Any) -> Any:
    """log1p of magnitudes with the sign kept: compresses wide ranges and accepts negatives."""
    return np.sign(x) * np.log1p(np.abs(x))


MIN_SECONDS = 1e-3


def log_seconds(y: Any) -> Any:
    """Natural log of run times, floored at a millisecond so a zero-second run stays finite."""
    return np.log(np.maximum(y, MIN_SECONDS))


def _log_target(regressor: RegressorMixin) -> TransformedTargetRegressor:
    """Wrap ``regressor`` to learn log(seconds) and predict exp of its answer, so estimates stay positive."""
    return TransformedTargetRegressor(regressor=regressor, func=log_seconds, inverse_func=np.exp, check_inverse=False)


def _lightgbm() -> LGBMRegressor:
    """Gradient-boosted trees sized for datasets of about a hundred rows, on one thread."""
    return LGBMRegressor(
        n_estimators=200,
        learning_rate=0.05,
        num_leaves=15,
        min_child_samples=5,
        n_jobs=1,
        verbose=-1,
        random_state=0,
    )


@register("mean")
def mean() -> DummyRegressor:
    """Baseline: the training mean, whatever the features (what RAE compares against)."""
    return DummyRegressor(strategy="mean")


@register("linear")
def linear() -> Pipeline:
    """Ordinary least squares on standardised features."""
    return Pipeline([("scale", StandardScaler()), ("regress", LinearRegression())])


@register("linear_log")
def linear_log() -> TransformedTargetRegressor:
    """Least squares in log-log space: a power law seconds ~ prod(feature^k)."""
    return _log_target(
        Pipeline(
            [
                ("log", FunctionTransformer(signed_log1p)),
                ("scale", StandardScaler()),
                ("regress", LinearRegression()),
            ]
        )
    )


@register("lightgbm")
def lightgbm() -> LGBMRegressor:
    """LightGBM on raw seconds."""
    return _lightgbm()


@register("lightgbm_log")
def lightgbm_log() -> TransformedTargetRegressor:
    """LightGBM on log(seconds); trees need no feature transform."""
    return _log_target(_lightgbm())
