"""Champion selection, and champions in the MLflow model registry.

Every registered version of ``runtime-{algorithm}-{platform}`` (run time) or ``memory-{algorithm}-{platform}``
(peak memory, bytes) is a composition refitted on every run; the ``champion`` alias points at the one
served, and moves only as the guard (:mod:`training.guard`) allows. Earlier versions stay registered
under their numbers. Each target of a pair has its own champion, judged on its own. The registry is the one at
the tracking URI given, asked through a client of it; MLflow's process-wide URIs are not read.
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

import mlflow
import numpy as np
import pandas as pd
from mlflow.entities.model_registry import ModelVersion
from mlflow.exceptions import MlflowException
from sklearn.base import RegressorMixin

from models.ensemble import ENSEMBLE
from models.zoo import is_rule, target_transform
from predictor.domain import Target
from predictor.envelope import TrainingEnvelope
from predictor.registry import CHAMPION_ALIAS, ENVELOPE_ARTIFACT, registered_name, registry_client
from predictor.thirdparty import mlflow_uris
from training.dataset import TrainingSet
from training.guard import Decision, Incumbent
from training.metrics import LOWER_IS_BETTER
from training.tracking import Candidate, all_pages, load_out_of_fold, log_served_model

JUDGED_TAG = "judged_fingerprint"
# What a registered model's versions predict, in its description.
LEARNS = {Target.TIME: "Wall seconds", Target.MEMORY: "Peak resident memory (bytes)"}

__all__ = [
    "CHAMPION_ALIAS",
    "MlflowChampions",
    "best_candidate",
    "check_selection_metric",
    "list_champions",
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


class MlflowChampions:
    """Champions in the MLflow model registry at ``tracking_uri``: the serving version of a pair's target, and registering
    new versions."""

    def __init__(self, tracking_uri: str) -> None:
        self.tracking_uri = tracking_uri
        self.client = registry_client(tracking_uri)

    def incumbent(self, algorithm: str, platform: str, target: Target = Target.TIME) -> Incumbent | None:
        """The version the ``champion`` alias of the pair's ``target`` points at, as the guard needs it; None when there is none."""
        name = registered_name(algorithm, platform, target)
        client = self.client
        try:
            version = client.get_model_version_by_alias(name, CHAMPION_ALIAS)
        except MlflowException as exc:
            if exc.error_code in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE"):
                return None
            raise
        tags = dict(version.tags)
        source = tags.get("source_run_id") or version.run_id
        features = json.loads(tags.get("features", "[]"))
        trained = _trained_runs(self.tracking_uri, source)
        judged = client.get_registered_model(name).tags.get(JUDGED_TAG)
        return Incumbent(
            version=str(version.version),
            composition=_composition(client, tags, source),
            trained_runs=trained,
            feature_names=features,
            predict=_lazy_predict(self.tracking_uri, name, str(version.version), features),
            n_rows=int(tags["n_rows"]) if "n_rows" in tags else (len(trained) if trained is not None else None),
            metrics={k[3:]: float(v) for k, v in tags.items() if k.startswith("cv_")},
            judged=judged,
        )

    def served_model(
        self, algorithm: str, platform: str, target: Target = Target.TIME
    ) -> tuple[dict[str, int], str, Any, list[str]] | None:
        """The composition, version number, fitted model (downloaded) and feature order the alias of the pair's target
        points at; None when there is none."""
        incumbent = self.incumbent(algorithm, platform, target)
        if incumbent is None:
            return None
        name = registered_name(algorithm, platform, target)
        model = load_registered(self.tracking_uri, name, incumbent.version)
        return dict(incumbent.composition), incumbent.version, model, list(incumbent.feature_names)

    def remember(self, algorithm: str, platform: str, fingerprint: str, target: Target = Target.TIME) -> None:
        """Note on the registered model which training session judged the pair's target last (what lets an unchanged one be skipped)."""
        self.client.set_registered_model_tag(registered_name(algorithm, platform, target), JUDGED_TAG, fingerprint)

    def register(
        self,
        training_set: TrainingSet,
        candidate: Candidate,
        model: RegressorMixin,
        *,
        refit_seconds: float,
        coverage: float,
        composition: Mapping[str, int],
        decision: Decision,
        alias: bool,
    ) -> str:
        """Log ``model`` (``candidate``'s composition refitted on every row) with its training envelope (if it has one),
        register it as a
        new version of the model of the set's pair and target, and move the ``champion`` alias to it when ``alias``; the
        version's number.

        The version's tags carry what the oracle serves with it (feature order, residual log-ratio
        quantiles and their nominal ``coverage``) and what the guard decided (``role``, ``guard_*``).
        """
        ts = training_set
        name = registered_name(ts.algorithm, ts.platform, ts.target)
        client = self.client
        try:
            client.get_registered_model(name)
        except MlflowException:
            client.create_registered_model(
                name,
                tags={"algorithm": ts.algorithm, "platform": ts.platform, "target": ts.target.value},
                description=f"{LEARNS[ts.target]} of {ts.algorithm} on {ts.platform}.",
            )
        envelope = training_envelope(ts, composition)
        if envelope is not None:
            client.log_text(candidate.run_id, envelope.to_json(), ENVELOPE_ARTIFACT)
        tags = {
            **version_tags(ts, candidate, composition, coverage),
            "role": CHAMPION_ALIAS if alias else "challenger",
            "guard_verdict": decision.verdict.value,
            "guard_reason": decision.reason[:4000],
            "judged_by": decision.metric,
        }
        uri = log_served_model(self.tracking_uri, candidate, model, ts, refit_seconds=refit_seconds)
        with mlflow_uris(self.tracking_uri):  # register_model takes no URI
            version = mlflow.register_model(uri, name, tags=tags)
        if alias:
            client.set_registered_model_alias(name, CHAMPION_ALIAS, version.version)
        return str(version.version)


def version_tags(
    training_set: TrainingSet, candidate: Candidate, composition: Mapping[str, int], coverage: float
) -> dict[str, str]:
    """What a registered version carries: target, feature order, zoo member, composition, quantiles, coverage, CV metrics."""
    ts = training_set
    return {
        "target": ts.target.value,
        "features": json.dumps(ts.feature_names),
        "model_kind": candidate.model_name,
        "rule": "true" if all(is_rule(m) for m in composition) else "false",
        "served_members": json.dumps(dict(composition)),
        "algorithm": ts.algorithm,
        "platform": ts.platform,
        "n_rows": str(len(ts)),
        "source_run_id": candidate.run_id,
        "target_transform": target_transform(candidate.model_name),
        "residual_log_quantiles": json.dumps({str(level): q for level, q in candidate.residual_quantiles.items()}),
        "interval_coverage": str(coverage),
        **{f"cv_{k}": str(v) for k, v in candidate.metrics.items()},
    }


def served_with_envelope(training_set: TrainingSet, composition: Mapping[str, int]) -> bool:
    """Whether a champion of ``composition`` on this set is served with a training envelope: not a site's rule, which
    answers as it is whatever the range, nor a job class, whose features (a user's counts and last runs, the hour) are
    no sizes a monotone power law could extrapolate."""
    return not training_set.carries_requests and not all(is_rule(m) for m in composition)


def training_envelope(
    training_set: TrainingSet, composition: Mapping[str, int], *, law_errors: bool = True
) -> TrainingEnvelope | None:
    """The envelope ``composition`` is served with: that of the set's finished runs (see :mod:`predictor.envelope`), or
    None (:func:`served_with_envelope`)."""
    if not served_with_envelope(training_set, composition):
        return None
    done = training_set.finished
    return TrainingEnvelope.fit(training_set.X[done], training_set.y[done], law_errors=law_errors)


def _composition(client: mlflow.MlflowClient, tags: Mapping[str, str], run_id: str | None) -> dict[str, int]:
    """The members (and weights) a version averages: its tag, else (older versions) its member or its run's ensemble param."""
    if "served_members" in tags:
        return {str(k): int(v) for k, v in json.loads(tags["served_members"]).items()}
    kind = tags.get("model_kind", "")
    if kind != ENSEMBLE or run_id is None:
        return {kind: 1}
    described = client.get_run(run_id).data.params.get("ensemble.members", "")
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"([\w.]+) x(\d+)", described)}


@lru_cache(maxsize=1024)
def _trained_runs(tracking_uri: str, run_id: str | None) -> frozenset[str] | None:
    """Run ids a version was fitted on: those of its candidate's out-of-fold table at ``tracking_uri`` (None when it has none).

    Remembered per run (a registered version never changes), so a worker polling the champions downloads each table once.
    """
    if run_id is None:
        return None
    try:
        return frozenset(load_out_of_fold(tracking_uri, run_id)["run_id"].astype(str))
    except FileNotFoundError:
        return None


def _lazy_predict(
    tracking_uri: str, name: str, version: str, features: list[str]
) -> Callable[[np.ndarray], np.ndarray]:
    """The predictions of version ``version`` of registered model ``name`` on rows in ``features`` order, loaded on first use."""
    loaded: list[Any] = []

    def predict(X: np.ndarray) -> np.ndarray:
        if not loaded:
            loaded.append(load_registered(tracking_uri, name, version))
        return np.asarray(loaded[0].predict(pd.DataFrame(X, columns=features)), dtype="float64")

    return predict


def load_registered(tracking_uri: str, name: str, version: str) -> Any:
    """Version ``version`` of registered scikit-learn model ``name`` in the registry at ``tracking_uri``, loaded."""
    location = registry_client(tracking_uri).get_model_version_download_uri(name, version)
    with tempfile.TemporaryDirectory() as folder:
        path = mlflow.artifacts.download_artifacts(artifact_uri=location, dst_path=folder, tracking_uri=tracking_uri)
        return mlflow.sklearn.load_model(path)


def list_champions(tracking_uri: str, target: Target = Target.TIME) -> list[ModelVersion]:
    """The champion version of every model of ``target`` (run time or peak memory) in the registry at ``tracking_uri``, by
    registered name."""
    client = registry_client(tracking_uri)
    prefix = registered_name("", "", target).removesuffix("--")
    models = all_pages(
        lambda token: client.search_registered_models(filter_string=f"name LIKE '{prefix}-%'", page_token=token)
    )
    champions = [
        client.get_model_version(m.name, m.aliases[CHAMPION_ALIAS]) for m in models if CHAMPION_ALIAS in m.aliases
    ]
    return sorted(champions, key=lambda v: v.name)
