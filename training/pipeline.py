"""The training pipeline: measurements -> training sets -> zoo x k-fold CV -> tracked runs -> champions."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import groupby

from mlflow.entities import Run

from models import available_models
from predictor.settings import Settings
from training.champions import best_candidate, check_selection_metric, promote
from training.crossval import cross_validate, refit
from training.dataset import MeasurementFrames, TrainingSet, load_training_sets
from training.folds import FoldPlan
from training.tracking import Candidate, configure_mlflow, log_candidate, training_session

DEFAULT_MODELS: tuple[str, ...] = ("mean", "linear", "linear_log", "lightgbm", "lightgbm_log")

Progress = Callable[[str], None]


@dataclass(frozen=True)
class TrainingOutcome:
    """What one (algorithm, platform) got: its new champion and every candidate's pooled CV metrics."""

    algorithm: str
    platform: str
    champion: str
    version: str
    metrics: dict[str, dict[str, float]]


def count_steps(
    settings: Settings,
    store: MeasurementFrames,
    *,
    algorithms: Iterable[str] | None = None,
    models: Sequence[str] | None = None,
) -> int:
    """How many times :func:`run_training` with the same arguments will call ``progress``."""
    return _steps(load_training_sets(store, algorithms), _models(models), settings)


def _steps(training_sets: Sequence[TrainingSet], models: Sequence[str], settings: Settings) -> int:
    """Fits :func:`train` makes: per set and model, one per fold plus the refit on all rows."""
    return sum(len(models) * (min(settings.cv_folds, len(ts)) + 1) for ts in training_sets)


def run_training(
    settings: Settings,
    store: MeasurementFrames,
    *,
    algorithms: Iterable[str] | None = None,
    models: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> list[TrainingOutcome]:
    """Train every stored pair of ``algorithms`` (all by default) and promote a champion for each."""
    return train(settings, load_training_sets(store, algorithms), models=models, progress=progress)


def train(
    settings: Settings,
    training_sets: Sequence[TrainingSet],
    *,
    models: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> list[TrainingOutcome]:
    """Cross-validate ``models`` on each set, log them under a parent run per algorithm, promote the best."""
    models = _models(models)
    check_selection_metric(settings.selection_metric)
    configure_mlflow(settings)
    outcomes = []
    ordered = sorted(training_sets, key=lambda ts: (ts.algorithm, ts.platform))
    for algorithm, group in groupby(ordered, key=lambda ts: ts.algorithm):
        with training_session(settings, algorithm, models) as parent:
            for ts in group:
                plan = FoldPlan.create(ts.run_ids, settings.cv_folds, settings.seed)
                candidates = [_train_one(settings, parent, ts, plan, name, progress) for name in models]
                version = promote(ts, best_candidate(candidates, settings.selection_metric))
                outcomes.append(
                    TrainingOutcome(
                        algorithm=ts.algorithm,
                        platform=ts.platform,
                        champion=version.tags["model_kind"],
                        version=str(version.version),
                        metrics={c.model_name: c.metrics for c in candidates},
                    )
                )
    return outcomes


def _train_one(
    settings: Settings, parent: Run, ts: TrainingSet, plan: FoldPlan, name: str, progress: Progress | None
) -> Candidate:
    """Cross-validate and refit one model on one set, reporting each fit, and log it as a child run."""
    label = f"{ts.algorithm}/{ts.platform} {name}"

    def report(fold: int) -> None:
        if progress is not None:
            progress(f"{label} fold {fold + 1}/{plan.n_folds}")

    result = cross_validate(name, ts, plan, seed=settings.seed, on_fit=report)
    started = time.perf_counter()
    model = refit(name, ts, seed=settings.seed)
    refit_seconds = time.perf_counter() - started
    if progress is not None:
        progress(f"{label} refit")
    return log_candidate(parent, ts, plan, result, model, refit_seconds=refit_seconds)


def _models(models: Sequence[str] | None) -> list[str]:
    """The requested zoo members (the defaults when None), unknown names refused before any work."""
    chosen = list(DEFAULT_MODELS if models is None else models)
    unknown = [m for m in chosen if m not in available_models()]
    if unknown or not chosen:
        known = ", ".join(available_models())
        raise ValueError(f"unknown or no models: {', '.join(unknown) or '(none)'}; known: {known}")
    return chosen
