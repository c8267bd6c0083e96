"""The training pipeline: measurements -> training sets -> zoo x k-fold CV -> tracked runs -> champions.

All fits (every algorithm, platform, model and fold, and each model's refit on every row) fan out
over ``settings.n_jobs`` local processes; tracking and promotion happen in this process meanwhile.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import mlflow
import pandas as pd
from mlflow.entities import Run

from models import available_models
from models.ensemble import ENSEMBLE, AveragedRegressor
from models.zoo import applicable
from predictor.settings import Settings
from training.champions import best_candidate, check_selection_metric, promote
from training.crossval import CVResult, FoldFit, collect
from training.dataset import MeasurementFrames, TrainingSet, load_training_sets
from training.ensemble import cross_validated_ensemble
from training.fanout import Fit, Refit, run_fits
from training.folds import FoldPlan
from training.tracking import (
    Candidate,
    configure_mlflow,
    log_candidate,
    training_sessions,
)

log = logging.getLogger(__name__)

# Every family on raw and on log seconds (cheap ones also smeared): cross-validation picks the target transform.
# Raw-seconds SVR is registered but not a default: it lost to ``svr_log`` on all 14 bundled pairs, by
# 5 to 45 points of RAE, at the same cost (README, "Peers on the same folds").
DEFAULT_MODELS: tuple[str, ...] = (
    "mean",
    "profile_mean",
    "last_two_mean",
    "requested_time",
    "linear",
    "linear_log",
    "linear_log_smeared",
    "lad",
    "lad_log",
    "simple_linear",
    "simple_linear_log",
    "isotonic",
    "isotonic_log",
    "svr_log",
    "mlp",
    "mlp_log",
    "lightgbm",
    "lightgbm_log",
    "lightgbm_log_smeared",
    "cascade",
    "cascade_log",
)

Progress = Callable[[str], None]


@dataclass(frozen=True)
class TrainingOutcome:
    """What one (algorithm, platform) got: its new champion and every candidate's pooled CV metrics."""

    algorithm: str
    platform: str
    champion: str
    version: str
    metrics: dict[str, dict[str, float]]


def fold_plan_path(settings: Settings, algorithm: str, platform: str) -> Path:
    """Where training writes the fold plan of a pair, for peer tools to cross-validate on the very same folds."""
    return settings.resolved_home / "folds" / f"{algorithm}-{platform}.csv"


def count_steps(settings: Settings, training_sets: Sequence[TrainingSet], *, models: Sequence[str] | None = None) -> int:
    """How many times :func:`train` with the same arguments will call ``progress``."""
    chosen = _models(models)
    return sum(len(_members(chosen, ts)) * (_n_folds(settings, ts) + 1) for ts in training_sets)


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
    """Cross-validate ``models`` on each set, log them under a parent run per algorithm, promote the best.

    The fits of every set share one pool of processes; each candidate is logged as soon as its
    fits are in, and each set's champion promoted as soon as its last candidate is, while other
    fits still run. Members that do not apply to a set (features they need are absent, too few
    rows) are left out of it; ``progress`` is called once per fit, as fits finish.
    """
    chosen = _models(models)
    check_selection_metric(settings.selection_metric)
    configure_mlflow(settings)
    usable: list[tuple[TrainingSet, list[str]]] = []
    for ts in sorted(training_sets, key=lambda ts: (ts.algorithm, ts.platform)):
        if names := _members(chosen, ts):
            usable.append((ts, names))
        else:
            log.warning("skipping %s on %s: none of the models applies to its %d runs", ts.algorithm, ts.platform, len(ts))
    # Largest sets first: their fits cost most, and the last to finish should be a small one.
    usable.sort(key=lambda pair: len(pair[0]), reverse=True)
    sets, members = [ts for ts, _ in usable], [names for _, names in usable]
    plans = [_save_plan(settings, ts) for ts in sets]
    candidates: list[list[Candidate]] = [[] for _ in sets]
    results: list[list[CVResult]] = [[] for _ in sets]
    outcomes = []
    order = [*chosen, ENSEMBLE]
    with training_sessions(settings, sorted({ts.algorithm for ts in sets}), chosen) as parents:
        for index, result, refit in _fit_all(settings, sets, plans, members, progress):
            ts, found = sets[index], candidates[index]
            parent = parents[ts.algorithm]
            results[index].append(result)
            found.append(
                log_candidate(
                    parent, ts, plans[index], result, refit.model, refit_seconds=refit.seconds, coverage=settings.interval_coverage
                )
            )
            if len(found) == len(members[index]):
                if len(found) > 1:
                    found.append(_ensemble(settings, parent, ts, plans[index], results[index], found))
                outcomes.append(_promote_best(settings, parent, ts, sorted(found, key=lambda c: order.index(c.model_name))))
    return sorted(outcomes, key=lambda o: (o.algorithm, o.platform))


def _ensemble(
    settings: Settings, parent: Run, ts: TrainingSet, plan: FoldPlan, results: Sequence[CVResult], members: Sequence[Candidate]
) -> Candidate:
    """Greedy ensemble selection over the set's members, logged as one more candidate (it fits nothing itself)."""
    result, weights = cross_validated_ensemble(results, ts, plan, settings.selection_metric)
    refits = {c.model_name: c.model for c in members}
    names = [c.model_name for c in members if c.model_name in weights]
    model = AveragedRegressor.from_fitted([(n, refits[n]) for n in names], [weights[n] for n in names], ts.X)
    described = ", ".join(f"{n} x{weights[n]}" for n in names)
    return log_candidate(
        parent, ts, plan, result, model, refit_seconds=0.0, coverage=settings.interval_coverage, params={"ensemble.members": described}
    )


def _fit_all(
    settings: Settings,
    sets: Sequence[TrainingSet],
    plans: Sequence[FoldPlan],
    members: Sequence[Sequence[str]],
    progress: Progress | None,
) -> Iterator[tuple[int, CVResult, Refit]]:
    """Every fold fit and refit of each set's ``members`` (the ones that apply to it), in parallel.

    Yields (set index, cross-validation, refit) for each member as soon as its last fit is in, so
    tracking in this process overlaps the fits still running in the workers.
    """
    fits = [
        Fit(index, name, fold)
        for index, names in enumerate(members)
        for name in names
        for fold in [*range(plans[index].n_folds), None]
    ]
    folds: dict[tuple[int, str], list[FoldFit]] = {}
    refits: dict[tuple[int, str], Refit] = {}
    for fit, result in run_fits(fits, sets, plans, seed=settings.seed, n_jobs=settings.n_jobs):
        key = (fit.set_index, fit.model_name)
        if isinstance(result, Refit):
            refits[key] = result
        else:
            folds.setdefault(key, []).append(result)
        ts, plan = sets[fit.set_index], plans[fit.set_index]
        if progress is not None:
            step = "refit" if fit.fold is None else f"fold {fit.fold + 1}/{plan.n_folds}"
            progress(f"{ts.algorithm}/{ts.platform} {fit.model_name} {step}")
        if key in refits and len(folds.get(key, [])) == plan.n_folds:
            yield fit.set_index, collect(fit.model_name, ts, plan, folds.pop(key)), refits.pop(key)


def _promote_best(settings: Settings, parent: Run, ts: TrainingSet, candidates: list[Candidate]) -> TrainingOutcome:
    """Promote the set's best candidate and note it on the parent run."""
    best = best_candidate(candidates, settings.selection_metric)
    version = promote(ts, best, coverage=settings.interval_coverage)
    client = mlflow.MlflowClient()
    client.set_tag(parent.info.run_id, f"champion.{ts.platform}", best.model_name)
    client.set_tag(parent.info.run_id, f"champion_version.{ts.platform}", str(version.version))
    return TrainingOutcome(
        algorithm=ts.algorithm,
        platform=ts.platform,
        champion=best.model_name,
        version=str(version.version),
        metrics={c.model_name: c.metrics for c in candidates},
    )


def job_groups(ts: TrainingSet) -> list[int]:
    """One label per run, equal for runs of the same job (the same feature values)."""
    return pd.util.hash_pandas_object(ts.X, index=False).tolist()


def _save_plan(settings: Settings, ts: TrainingSet) -> FoldPlan:
    """The set's seeded fold plan (repeats of one job, i.e. equal feature rows, in one fold), written where peer tools find it."""
    plan = FoldPlan.create(ts.run_ids, settings.cv_folds, settings.seed, groups=job_groups(ts))
    path = fold_plan_path(settings, ts.algorithm, ts.platform)
    path.parent.mkdir(parents=True, exist_ok=True)
    plan.save(path)
    return plan


def _n_folds(settings: Settings, ts: TrainingSet) -> int:
    """Folds of the set's plan: the setting, or one per run when there are fewer runs."""
    return min(settings.cv_folds, len(ts))


def _members(chosen: Sequence[str], ts: TrainingSet) -> list[str]:
    """The chosen members that apply to ``ts``."""
    return [name for name in chosen if applicable(name, ts.feature_names, len(ts))]


def _models(models: Sequence[str] | None) -> list[str]:
    """The requested zoo members (the registered defaults when None), unknown names refused before any work."""
    known = available_models()
    chosen = [m for m in DEFAULT_MODELS if m in known] if models is None else list(models)
    unknown = [m for m in chosen if m not in known]
    if unknown or not chosen:
        raise ValueError(f"unknown or no models: {', '.join(unknown) or '(none)'}; known: {', '.join(known)}")
    return chosen
