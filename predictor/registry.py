"""Champions in the MLflow model registry: naming, the registry's client, and the champion the oracle serves.

Training registers versions and moves the ``champion`` alias; the oracle loads whatever the alias
points at (:mod:`predictor.champion_source`). Both sides use the names defined here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from predictor.domain import Target
from predictor.envelope import TrainingEnvelope

if TYPE_CHECKING:
    from mlflow import MlflowClient

CHAMPION_ALIAS = "champion"
# in the run of the registered version: see predictor.envelope
ENVELOPE_ARTIFACT = "envelope.json"
# The driver option that bounds a connect, for the databases MLflow reaches over the network through SQLAlchemy.
CONNECT_TIMEOUT_OPTION = {"postgresql": "connect_timeout", "mysql": "connect_timeout"}


class Predicts(Protocol):
    def predict(self, X: Any) -> np.ndarray: ...


def registered_name(algorithm: str, platform: str, target: Target = Target.TIME) -> str:
    """Registered-model name of one (algorithm, platform)'s model of ``target`` (run time or peak memory)."""
    return f"{'runtime' if target is Target.TIME else 'memory'}-{algorithm}-{platform}"


def check_database(tracking_uri: str, timeout_s: float) -> None:
    """Connect once to a database registry within ``timeout_s``; the driver's error when it cannot (other URIs pass).

    MLflow retries a refused connection ten times with backoff (about 100 s) before it fails, so a registry that
    is down would not show for that long; this one bounded attempt comes first.
    """
    option = CONNECT_TIMEOUT_OPTION.get(tracking_uri.partition(":")[0].partition("+")[0])
    if option is None:
        return
    import sqlalchemy
    from sqlalchemy.pool import NullPool

    engine = sqlalchemy.create_engine(
        tracking_uri, poolclass=NullPool, connect_args={option: max(1, math.ceil(timeout_s))}
    )
    try:
        with engine.connect():
            pass
    finally:
        engine.dispose()


def registry_client(tracking_uri: str) -> MlflowClient:
    """A client of the tracking store and model registry at ``tracking_uri``; MLflow's process-wide URIs are left alone."""
    import mlflow

    return mlflow.MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)


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
    # what it was trained on; None for versions registered before envelopes
    envelope: TrainingEnvelope | None = None

    @property
    def residual_quantiles(self) -> dict[float, float]:
        """Out-of-fold quantiles of log(actual / predicted), from the ``residual_log_quantiles`` tag (empty if absent)."""
        raw = json.loads(self.tags.get("residual_log_quantiles", "{}"))
        return {float(level): float(value) for level, value in raw.items()}

    @property
    def metrics(self) -> dict[str, float]:
        """Forward-validation metrics recorded on the version as ``cv_*`` tags."""
        return cv_metrics(self.tags)

    @property
    def member(self) -> str | None:
        """The zoo member (or ``ensemble``) the version is, from its ``model_kind`` tag."""
        return self.tags.get("model_kind")

    @property
    def rule(self) -> bool:
        """Whether the version is one of the site's simple rules (its ``rule`` tag, set at registration)."""
        return self.tags.get("rule") == "true"


def cv_metrics(tags: Mapping[str, str]) -> dict[str, float]:
    """The cross-validation metrics training records on a champion version as ``cv_<metric>`` tags."""
    return {k.removeprefix("cv_"): float(v) for k, v in tags.items() if k.startswith("cv_")}
