"""Champion selection and promotion in the MLflow model registry.

The best candidate of a pair becomes a new version of ``runtime-{algorithm}-{platform}``
and takes the ``champion`` alias; earlier versions stay registered under their numbers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import mlflow
from mlflow.entities.model_registry import ModelVersion
from mlflow.exceptions import MlflowException
from sklearn.base import RegressorMixin

from models.zoo import target_transform
from predictor.registry import CHAMPION_ALIAS, registered_name
from training.dataset import TrainingSet
from training.metrics import LOWER_IS_BETTER
from training.tracking import Candidate, log_served_model

__all__ = [
    "CHAMPION_ALIAS",
    "best_candidate",
    "check_selection_metric",
    "list_champions",
    "promote",
    "registered_name",
]


def check_selection_metric(metric: str) -> str:
    """``metric`` if it can pick champions (lower is better), else a ValueError naming those that can."""
    if metric not in LOWER_IS_BETTER:
        raise ValueError(f"cannot select champions by {metric!r}; use one of {', '.join(sorted(LOWER_IS_BETTER))}")
    return metric


def best_candidate(candidates: Sequence[Candidate], metric: str) -> Candidate:
    """The candidate with the lowest cross-validated ``metric`` (first listed wins ties; NaN never wins)."""
    check_selection_metric(metric)
    if not candidates:
        raise ValueError("no candidates to choose a champion from")
    return min(candidates, key=lambda c: (math.isnan(c.metrics[metric]), c.metrics[metric]))


def promote(
    training_set: TrainingSet, candidate: Candidate, model: RegressorMixin, *, refit_seconds: float, coverage: float
) -> ModelVersion:
    """Log ``model`` (``candidate`` refitted on every row), register it as a new version of the pair's model, alias it champion.

    The version's tags carry what the oracle serves with it: the feature order, the out-of-fold
    residual log-ratio quantiles and the nominal ``coverage`` of the intervals built from them.
    """
    name = registered_name(training_set.algorithm, training_set.platform)
    client = mlflow.MlflowClient()
    try:
        client.get_registered_model(name)
    except MlflowException:
        client.create_registered_model(
            name,
            tags={"algorithm": training_set.algorithm, "platform": training_set.platform},
            description=f"Wall seconds of {training_set.algorithm} on {training_set.platform}.",
        )
    tags = {
        "features": json.dumps(training_set.feature_names),
        "model_kind": candidate.model_name,
        "algorithm": training_set.algorithm,
        "platform": training_set.platform,
        "source_run_id": candidate.run_id,
        "target_transform": target_transform(candidate.model_name),
        "residual_log_quantiles": json.dumps({str(level): q for level, q in candidate.residual_quantiles.items()}),
        "interval_coverage": str(coverage),
        **{f"cv_{k}": str(v) for k, v in candidate.metrics.items()},
    }
    version = mlflow.register_model(log_served_model(candidate, model, training_set, refit_seconds=refit_seconds), name, tags=tags)
    client.set_registered_model_alias(name, CHAMPION_ALIAS, version.version)
    return client.get_model_version(name, version.version)


def list_champions() -> list[ModelVersion]:
    """The champion version of every runtime model in the registry, by registered name."""
    client = mlflow.MlflowClient()
    champions = []
    token = None
    while True:
        page = client.search_registered_models(filter_string="name LIKE 'runtime-%'", page_token=token)
        for model in page:
            if CHAMPION_ALIAS in model.aliases:
                champions.append(client.get_model_version(model.name, model.aliases[CHAMPION_ALIAS]))
        token = page.token
        if not token:
            break
    return sorted(champions, key=lambda v: v.name)
