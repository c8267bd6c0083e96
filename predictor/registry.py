"""Champions in the MLflow model registry: naming, and loading the model serving each (algorithm, platform).

Training registers versions and moves the ``champion`` alias; the oracle loads
whatever the alias points at. Both sides use the names defined here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from predictor.envelope import TrainingEnvelope

CHAMPION_ALIAS = "champion"
ENVELOPE_ARTIFACT = "envelope.json"  # in the run of the registered version: see predictor.envelope


class Predicts(Protocol):
    def predict(self, X: Any) -> np.ndarray: ...


def registered_name(algorithm: str, platform: str) -> str:
    """Registered-model name of the runtime model for one (algorithm, platform)."""
    return f"runtime-{algorithm}-{platform}"


def configure_mlflow(tracking_uri: str) -> None:
    """Point MLflow's tracking and registry at ``tracking_uri`` (explicit, never at import time)."""
    import mlflow

    mlflow.set_tracking_uri(tracking_uri)
    mlflow.set_registry_uri(tracking_uri)


@dataclass(frozen=True)
class Champion:
    """A loaded champion model with what the oracle needs to call it."""

    algorithm: str
    platform: str
    name: str
    version: str
    flavor: str
    feature_names: list[str]
    model: Predicts
    tags: dict[str, str] = field(default_factory=dict)
    envelope: TrainingEnvelope | None = None  # what it was trained on; None for versions registered before envelopes

    @property
    def residual_quantiles(self) -> dict[float, float]:
        """Out-of-fold quantiles of log(actual / predicted), from the ``residual_log_quantiles`` tag (empty if absent)."""
        raw = json.loads(self.tags.get("residual_log_quantiles", "{}"))
        return {float(level): float(value) for level, value in raw.items()}

    @property
    def metrics(self) -> dict[str, float]:
        """Cross-validation metrics recorded on the version as ``cv_*`` tags."""
        return cv_metrics(self.tags)


def cv_metrics(tags: Mapping[str, str]) -> dict[str, float]:
    """The cross-validation metrics training records on a champion version as ``cv_<metric>`` tags."""
    return {k.removeprefix("cv_"): float(v) for k, v in tags.items() if k.startswith("cv_")}


def load_champion(algorithm: str, platform: str) -> Champion | None:
    """Load the version the ``champion`` alias points at, or None when there is none."""
    import mlflow
    from mlflow.exceptions import MlflowException

    name = registered_name(algorithm, platform)
    client = mlflow.MlflowClient()
    try:
        version = client.get_model_version_by_alias(name, CHAMPION_ALIAS)
    except MlflowException:
        return None
    model = mlflow.sklearn.load_model(f"models:/{name}/{version.version}")
    tags = dict(version.tags)
    return Champion(
        algorithm=algorithm,
        platform=platform,
        name=name,
        version=str(version.version),
        flavor="sklearn",
        feature_names=json.loads(tags.get("features", "[]")),
        model=model,
        tags=tags,
    )


def load_champions(pairs: list[tuple[str, str]]) -> dict[tuple[str, str], Champion]:
    """Load every champion that exists among ``pairs``."""
    loaded = {}
    for algorithm, platform in pairs:
        champion = load_champion(algorithm, platform)
        if champion is not None:
            loaded[(algorithm, platform)] = champion
    return loaded
