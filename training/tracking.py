"""Experiment tracking in MLflow: an experiment per algorithm and target, a parent run per session, a child run per candidate.

Run-time sessions go to ``runtime/<algorithm>``, peak-memory ones to ``memory/<algorithm>``; every run
is tagged with its ``target``.

Every call goes through a client of the settings' tracking URI (:func:`predictor.registry.registry_client`); the one
fluent call that takes no URI, a served model's logging, sets MLflow's process-wide URIs for itself alone
(:func:`predictor.thirdparty.mlflow_uris`). Nothing here touches MLflow at import time.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import TypeVar

import mlflow
import numpy as np
import pandas as pd
from mlflow.entities import Metric, Param, Run
from mlflow.exceptions import MlflowException
from mlflow.models import infer_signature
from mlflow.store.entities import PagedList
from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID, MLFLOW_RUN_NAME
from sklearn.base import RegressorMixin

from features.history import REQUEST_TIME
from models.zoo import target_transform
from predictor.addresses import redact_addresses
from predictor.domain import Target
from predictor.intervals import residual_log_quantiles
from predictor.registry import registry_client
from predictor.settings import Settings
from predictor.thirdparty import mlflow_uris
from training import plots
from training.crossval import CVResult, inner_attribute
from training.dataset import TrainingSet
from training.folds import FoldPlan
from training.intervals import cross_fitted_coverage, cross_fitted_exceedance
from training.settings import TrainingSettings

# What a served zoo member needs installed; named here so MLflow need not infer it (slow: a subprocess per model).
MODEL_REQUIREMENTS = ("scikit-learn", "lightgbm", "numpy", "pandas", "scipy", "skops")
# Each candidate's out-of-fold predictions, as an artifact of its run (see out_of_fold_table).
OUT_OF_FOLD = "out_of_fold.csv"
OUT_OF_FOLD_COLUMNS = ("run_id", "job", "fold", "measured_seconds", "predicted_seconds", "prior_seconds", "censored")


@dataclass(frozen=True)
class Candidate:
    """A cross-validated model tracked in a child run: what champion selection chooses among."""

    model_name: str
    run_id: str
    metrics: dict[str, float]
    residual_quantiles: dict[float, float] = field(default_factory=dict)


Page = TypeVar("Page")


def all_pages(search: Callable[[str | None], PagedList[Page]]) -> list[Page]:
    """Every item of a paged client search (``search(page_token)``), page after page."""
    items: list[Page] = []
    token = None
    while True:
        page = search(token)
        items += page
        token = page.token
        if not token:
            return items


EXPERIMENT_PREFIX = {Target.TIME: "runtime/", Target.MEMORY: "memory/"}


def experiment_name(algorithm: str, target: Target = Target.TIME) -> str:
    """The MLflow experiment of ``algorithm``'s training sessions of ``target``."""
    return f"{EXPERIMENT_PREFIX[target]}{algorithm}"


def ensure_experiment(
    client: mlflow.MlflowClient, settings: Settings, algorithm: str, target: Target = Target.TIME
) -> str:
    """Id of the algorithm's experiment of ``target``, created with its artifacts under the artifact root on first use."""
    name = experiment_name(algorithm, target)
    experiment = client.get_experiment_by_name(name)
    if experiment is not None:
        return experiment.experiment_id
    location = settings.resolved_artifact_root / algorithm
    location.mkdir(parents=True, exist_ok=True)
    return client.create_experiment(name, artifact_location=location.as_uri())


@contextmanager
def training_sessions(
    client: mlflow.MlflowClient,
    settings: TrainingSettings,
    algorithms: Sequence[str],
    models: Sequence[str],
    target: Target = Target.TIME,
) -> Iterator[dict[str, Run]]:
    """The parent run of each algorithm's training session of ``target``, all open at once; candidates are logged as children.

    Opening every session together lets the fits of all algorithms share one pool of processes. The
    runs end FINISHED, or FAILED if training raised.
    """
    parents: dict[str, Run] = {}
    status = "FAILED"
    try:
        for algorithm in algorithms:
            tags = {"algorithm": algorithm, "target": target.value, MLFLOW_RUN_NAME: f"train-{algorithm}"}
            run = client.create_run(ensure_experiment(client, settings, algorithm, target), tags=tags)
            params = {
                "algorithm": algorithm,
                "target": target.value,
                "models": ",".join(models),
                "cv_folds": settings.cv_folds,
                "seed": settings.seed,
            }
            client.log_batch(run.info.run_id, params=_params(params))
            parents[algorithm] = run
        yield parents
        status = "FINISHED"
    finally:
        for run in parents.values():
            client.set_terminated(run.info.run_id, status)


def candidate_numbers(
    training_set: TrainingSet, plan: FoldPlan, result: CVResult, coverage: float, limit_quantile: float
) -> tuple[dict[str, float], dict[float, float]]:
    """A candidate's metrics (with ``interval_coverage``, cross-fitted; for a set that carries its users' requests, also
    ``limit_exceeded`` and ``request_exceeded``, the shares of runs past the limit it would have served at
    ``limit_quantile`` and past their own request) and its residual log-ratio quantiles."""
    ts, rows = training_set, result.scored
    quantiles = residual_log_quantiles(ts.y[rows], result.predictions[rows], ts.censored[rows])
    metrics = {
        **result.metrics,
        "interval_coverage": cross_fitted_coverage(ts.y, result.predictions, plan, coverage, ts.censored),
    }
    if ts.carries_requests and ts.target is Target.TIME:
        request = ts.X[REQUEST_TIME].to_numpy(dtype="float64")
        exceeded = cross_fitted_exceedance(ts.y, result.predictions, plan, limit_quantile, ts.censored, request)
        metrics["limit_exceeded"], metrics["request_exceeded"] = exceeded
    return metrics, quantiles


def log_candidate(
    client: mlflow.MlflowClient,
    parent: Run,
    training_set: TrainingSet,
    plan: FoldPlan,
    result: CVResult,
    model: RegressorMixin,
    *,
    coverage: float,
    limit_quantile: float,
    params: Mapping[str, object] | None = None,
) -> Candidate:
    """Log one model's cross-validation as a child run of ``parent`` through ``client``: ``model``'s settings, extra ``params``, metrics, files.

    Besides the metrics of :func:`~training.metrics.compute_metrics` the candidate gets its
    out-of-fold residual log-ratio quantiles (what its intervals would serve) and
    ``interval_coverage``, the share of runs inside intervals of nominal ``coverage`` built
    from the other folds' residuals. What each fold's fit chose (tuned settings, the growth
    curve of a cascade network) is logged per fold; the model itself only if it is served.
    """
    ts = training_set
    metrics, quantiles = candidate_numbers(ts, plan, result, coverage, limit_quantile)
    tags = {
        "algorithm": ts.algorithm,
        "platform": ts.platform,
        "target": ts.target.value,
        "model_kind": result.model_name,
        "target_transform": target_transform(result.model_name),
    }
    params = {
        "model_kind": result.model_name,
        "target": ts.target.value,
        "algorithm": ts.algorithm,
        "platform": ts.platform,
        "n_rows": len(ts),
        "n_features": len(ts.feature_names),
        "n_folds": plan.n_folds,
        "interval_nominal_coverage": coverage,
        **_model_params(model),
        **(params or {}),
    }
    tags[MLFLOW_PARENT_RUN_ID] = parent.info.run_id
    tags[MLFLOW_RUN_NAME] = f"{result.model_name}@{ts.platform}"
    run = client.create_run(parent.info.experiment_id, tags=tags)
    run_id = run.info.run_id
    client.log_batch(
        run_id,
        metrics=_metrics(metrics, result),
        params=_params(params),
    )
    with tempfile.TemporaryDirectory() as tmp:
        _write_artifacts(Path(tmp), ts, plan, result, quantiles)
        client.log_artifacts(run_id, tmp)
    client.set_terminated(run_id)
    return Candidate(result.model_name, run_id=run_id, metrics=metrics, residual_quantiles=quantiles)


def log_served_model(
    tracking_uri: str, candidate: Candidate, model: RegressorMixin, training_set: TrainingSet, *, refit_seconds: float
) -> str:
    """Log ``model``, ``candidate`` refitted on every row, in the candidate's run at ``tracking_uri`` with signature and input
    example; its URI.

    Only the candidate that gets promoted is refitted and logged: a refit and a model artifact
    cost more than all of a candidate's metrics and plots, and the others are never served. The
    run also gets the refit's seconds and the settings its inner search chose on every row.
    """
    X = training_set.X
    tuned = inner_attribute(model, "best_params_") or {}
    registry_client(tracking_uri).log_batch(
        candidate.run_id,
        metrics=[Metric("refit_seconds", refit_seconds, int(time.time() * 1000), 0)],
        params=_params({f"tuned.{k}": v for k, v in tuned.items()}),
    )
    with mlflow_uris(tracking_uri), mlflow.start_run(run_id=candidate.run_id, nested=True):  # log_model takes no URI
        info = mlflow.sklearn.log_model(
            model,
            name="model",
            signature=infer_signature(X, model.predict(X)),
            input_example=X.head(3),
            skops_trusted_types=_trusted_types(model),
            pip_requirements=[f"{name}=={version(name)}" for name in MODEL_REQUIREMENTS],
        )
    return info.model_uri


def _params(values: Mapping[str, object]) -> list[Param]:
    """Run parameters for one batched call (MLflow stores them as text)."""
    return [Param(k, str(v)) for k, v in values.items()]


def _metrics(pooled: Mapping[str, float], result: CVResult) -> list[Metric]:
    """Every metric of a candidate, for one batched call.

    Pooled; per fold (step = fold), with the numeric settings each fold's search chose; the fit
    seconds; a grown network's held-out error per size (step = hidden units), averaged over the
    folds that reached that size.
    """
    now = int(time.time() * 1000)
    metrics = [Metric(f"cv_{k}", float(v), now, 0) for k, v in pooled.items()]
    for fold, fold_metrics in enumerate(result.fold_metrics):
        metrics += [Metric(f"fold_{k}", float(v), now, fold) for k, v in fold_metrics.items()]
    for fold, tuned in enumerate(result.tuned):
        metrics += [
            Metric(f"fold_tuned.{k}", float(v), now, fold) for k, v in tuned.items() if isinstance(v, (int, float))
        ]
    metrics.append(Metric("fit_seconds", result.fit_seconds, now, 0))
    by_size: dict[int, list[float]] = {}
    for curve in result.curves:
        for units, error in zip(curve["hidden_units"], curve.get("validation_mse", [])):
            by_size.setdefault(int(units), []).append(float(error))
    metrics += [
        Metric("curve_validation_mse", float(np.mean(errors)), now, units) for units, errors in sorted(by_size.items())
    ]
    return metrics


def _write_artifacts(
    folder: Path,
    ts: TrainingSet,
    plan: FoldPlan,
    result: CVResult,
    quantiles: Mapping[float, float],
) -> None:
    """A candidate's files: features, residual quantiles, the fold plan, the out-of-fold predictions and its figures."""
    (folder / "features.json").write_text(json.dumps({"features": ts.feature_names}))
    (folder / "residual_log_quantiles.json").write_text(json.dumps({str(q): v for q, v in quantiles.items()}))
    plan.save(folder / "folds.csv")
    out_of_fold_table(ts, plan, result).to_csv(folder / OUT_OF_FOLD, index=False)
    title = f"{result.model_name}: {ts.algorithm} on {ts.platform}"
    rows = result.scored
    figures = {
        "pred_vs_actual.svg": plots.pred_vs_actual(ts.y[rows], result.predictions[rows], title),
        "relative_errors.svg": plots.relative_errors(ts.y[rows], result.predictions[rows], title),
    }
    if result.curves:
        figures["learning_curve.svg"] = plots.learning_curves(result.curves, title)
    for name, figure in figures.items():
        plots.save(figure, folder / name)


def out_of_fold_table(ts: TrainingSet, plan: FoldPlan, result: CVResult) -> pd.DataFrame:
    """Each run's job, fold, measured seconds, out-of-fold prediction and prior (its training folds' mean), in row order.

    The ``*_seconds`` columns hold the set's target: bytes of peak memory in a memory session's table
    (the names are the ones peer tools and older sessions read).

    Logged with every candidate so its figures and metrics can be redrawn, or compared with
    another model's or tool's predictions on the same folds (resampling jobs), without refitting anything.
    ``censored`` marks runs stopped before they finished: their measured seconds are a lower bound.
    """
    columns = (ts.run_ids, ts.jobs, plan.folds, ts.y, result.predictions, result.priors, ts.censored)
    return pd.DataFrame(dict(zip(OUT_OF_FOLD_COLUMNS, columns, strict=True)))


def load_out_of_fold(tracking_uri: str, run_id: str) -> pd.DataFrame:
    """The :func:`out_of_fold_table` a candidate's run at ``tracking_uri`` logged.

    ``FileNotFoundError`` if the run has none, or one without every column of today's (older sessions).
    """
    try:
        path = mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=OUT_OF_FOLD, tracking_uri=tracking_uri)
    except (OSError, MlflowException) as exc:
        raise FileNotFoundError(f"run {run_id} has no {OUT_OF_FOLD}: {redact_addresses(str(exc))}") from exc
    table = pd.read_csv(path, dtype={"run_id": str})
    # written before censored runs were trained on: none of its runs was
    if "censored" not in table:
        table["censored"] = False
    missing = sorted(set(OUT_OF_FOLD_COLUMNS) - set(table.columns))
    if missing:
        raise FileNotFoundError(f"run {run_id}'s {OUT_OF_FOLD} predates column(s) {', '.join(missing)}")
    return table


def _model_params(model: RegressorMixin) -> dict[str, object]:
    """The model's scalar hyper-parameters, prefixed ``model.`` (nested estimators are left out)."""
    return {
        f"model.{k}": v
        for k, v in model.get_params(deep=True).items()
        if v is None or isinstance(v, (bool, int, float, str))
    }


def _trusted_types(model: RegressorMixin) -> list[str]:
    """Types skops must trust to load ``model`` again; this process built it, so all it contains."""
    import skops.io

    return skops.io.get_untrusted_types(data=skops.io.dumps(model))


class MlflowTracker:
    """Training tracked in MLflow: an experiment per algorithm and target, a parent run per session, a child run per candidate."""

    def __init__(self, settings: TrainingSettings) -> None:
        self.settings = settings
        self.client = registry_client(settings.resolved_tracking_uri)

    def sessions(
        self, algorithms: Sequence[str], models: Sequence[str], target: Target = Target.TIME
    ) -> AbstractContextManager[dict[str, Run]]:
        """The parent run of each algorithm's session of ``target`` (see :func:`training_sessions`)."""
        return training_sessions(self.client, self.settings, algorithms, models, target)

    def log_candidate(
        self,
        session: Run,
        training_set: TrainingSet,
        plan: FoldPlan,
        result: CVResult,
        model: RegressorMixin,
        *,
        params: Mapping[str, object] | None = None,
    ) -> Candidate:
        """One candidate as a child run of ``session`` (see :func:`log_candidate`)."""
        return log_candidate(
            self.client,
            session,
            training_set,
            plan,
            result,
            model,
            coverage=self.settings.interval_coverage,
            limit_quantile=self.settings.limit_quantile,
            params=params,
        )

    def note(self, session: Run, tags: Mapping[str, str]) -> None:
        """Tag the session's parent run (what was decided for each platform)."""
        for key, value in tags.items():
            self.client.set_tag(session.info.run_id, key, value)
