"""The training pipeline: measurements -> training sets -> zoo x k-fold CV -> tracked runs -> champions.

All fold fits (every algorithm, platform, model and fold) fan out over ``settings.n_jobs`` local
processes while this process tracks each candidate as its folds come in. Then only what is
served, each pair's champion (or the members of its winning ensemble), is refitted on every row,
in the same processes, and promoted.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import mlflow
from mlflow.entities import Run
from sklearn.base import RegressorMixin

from models import available_models, make_model
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
    "tobit_log",
    "linear_log_smeared",
    "lad",
    "lad_log",
    "sparse_lad_log",
    "quadratic_log",
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


@dataclass(frozen=True)
class Pick:
    """A set's champion among its tracked candidates, and the members (with weights) its served model averages."""

    set_index: int
    champion: Candidate
    served: dict[str, int]
    candidates: list[Candidate]


def count_steps(settings: Settings, training_sets: Sequence[TrainingSet], *, models: Sequence[str] | None = None) -> int:
    """How many times :func:`train` with the same arguments will call ``progress``: once per fold fit, once per champion."""
    chosen = _models(models)
    return sum(len(names) * _n_folds(settings, ts) + 1 for ts in training_sets if (names := _members(chosen, ts)))


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
    """Cross-validate ``models`` on each set, log them under a parent run per algorithm, refit and promote the best.

    The fold fits of every set share one pool of processes; each candidate is logged as soon as
    its folds are in, while other fits still run, and each set's champion is picked as soon as
    its last candidate is. Then the champions (or their ensembles' members) are refitted on
    every row, together, and promoted. Members that do not apply to a set (features they need
    are absent, too few rows) are left out of it; ``progress`` is called once per fold fit, as
    fits finish, and once per promoted champion.
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
    picks: list[Pick] = []
    order = [*chosen, ENSEMBLE]
    with training_sessions(settings, sorted({ts.algorithm for ts in sets}), chosen) as parents:
        for index, result in _cross_validate_all(settings, sets, plans, members, progress):
            ts, found = sets[index], candidates[index]
            parent = parents[ts.algorithm]
            results[index].append(result)
            model = make_model(result.model_name, seed=settings.seed)
            found.append(log_candidate(parent, ts, plans[index], result, model, coverage=settings.interval_coverage))
            if len(found) == len(members[index]):
                weights: Counter[str] = Counter()
                if len(found) > 1:
                    ensemble, weights = _ensemble(settings, parent, ts, plans[index], results[index])
                    found.append(ensemble)
                found.sort(key=lambda c: order.index(c.model_name))
                best = best_candidate(found, settings.selection_metric)
                served = dict(weights) if best.model_name == ENSEMBLE else {best.model_name: 1}
                picks.append(Pick(index, best, served, found))
        outcomes = [
            _promote(settings, parents[sets[pick.set_index].algorithm], sets[pick.set_index], pick, model, seconds)
            for pick, model, seconds in _refit_served(settings, sets, plans, picks, progress)
        ]
    return sorted(outcomes, key=lambda o: (o.algorithm, o.platform))


def _ensemble(
    settings: Settings, parent: Run, ts: TrainingSet, plan: FoldPlan, results: Sequence[CVResult]
) -> tuple[Candidate, Counter[str]]:
    """Greedy ensemble selection over the set's members, logged as one more candidate (it fits nothing itself)."""
    result, weights = cross_validated_ensemble(results, ts, plan, settings.selection_metric)
    names = [r.model_name for r in results if r.model_name in weights]
    model = AveragedRegressor([(n, make_model(n, seed=settings.seed)) for n in names], [weights[n] for n in names])
    described = ", ".join(f"{n} x{weights[n]}" for n in names)
    candidate = log_candidate(
        parent, ts, plan, result, model, coverage=settings.interval_coverage, params={"ensemble.members": described}
    )
    return candidate, weights


def _cross_validate_all(
    settings: Settings,
    sets: Sequence[TrainingSet],
    plans: Sequence[FoldPlan],
    members: Sequence[Sequence[str]],
    progress: Progress | None,
) -> Iterator[tuple[int, CVResult]]:
    """Every fold fit of each set's ``members`` (the ones that apply to it), in parallel.

    Yields (set index, cross-validation) for each member as soon as its last fold is in, so
    tracking in this process overlaps the fits still running in the workers.
    """
    fits = [Fit(index, name, fold) for index, names in enumerate(members) for name in names for fold in range(plans[index].n_folds)]
    folds: dict[tuple[int, str], list[FoldFit]] = {}
    for fit, result in run_fits(fits, sets, plans, seed=settings.seed, n_jobs=settings.n_jobs):
        key = (fit.set_index, fit.model_name)
        found = folds.setdefault(key, [])
        found.append(result)
        ts, plan = sets[fit.set_index], plans[fit.set_index]
        if progress is not None:
            progress(f"{ts.algorithm}/{ts.platform} {fit.model_name} fold {fit.fold + 1}/{plan.n_folds}")
        if len(found) == plan.n_folds:
            yield fit.set_index, collect(fit.model_name, ts, plan, folds.pop(key))


def _refit_served(
    settings: Settings, sets: Sequence[TrainingSet], plans: Sequence[FoldPlan], picks: Sequence[Pick], progress: Progress | None
) -> Iterator[tuple[Pick, RegressorMixin, float]]:
    """Each pick's served model fitted on every row of its set, and the seconds its fits took, in parallel.

    A single champion is refitted; an ensemble is assembled from its members' refits.
    """
    by_set = {pick.set_index: pick for pick in picks}
    fits = [Fit(pick.set_index, name, None) for pick in picks for name in pick.served]
    refits: dict[int, dict[str, Refit]] = {}
    for fit, result in run_fits(fits, sets, plans, seed=settings.seed, n_jobs=settings.n_jobs):
        pick, done = by_set[fit.set_index], refits.setdefault(fit.set_index, {})
        done[fit.model_name] = result
        if len(done) < len(pick.served):
            continue
        ts = sets[fit.set_index]
        if progress is not None:
            progress(f"{ts.algorithm}/{ts.platform} champion {pick.champion.model_name} refit")
        seconds = sum(r.seconds for r in done.values())
        if pick.champion.model_name == ENSEMBLE:
            fitted = [(name, done[name].model) for name in pick.served]
            yield pick, AveragedRegressor.from_fitted(fitted, list(pick.served.values()), ts.X), seconds
        else:
            yield pick, done[pick.champion.model_name].model, seconds


def _promote(
    settings: Settings, parent: Run, ts: TrainingSet, pick: Pick, model: RegressorMixin, refit_seconds: float
) -> TrainingOutcome:
    """Promote the set's champion with its refitted ``model`` and note it on the parent run."""
    best = pick.champion
    version = promote(ts, best, model, refit_seconds=refit_seconds, coverage=settings.interval_coverage)
    client = mlflow.MlflowClient()
    client.set_tag(parent.info.run_id, f"champion.{ts.platform}", best.model_name)
    client.set_tag(parent.info.run_id, f"champion_version.{ts.platform}", str(version.version))
    return TrainingOutcome(
        algorithm=ts.algorithm,
        platform=ts.platform,
        champion=best.model_name,
        version=str(version.version),
        metrics={c.model_name: c.metrics for c in pick.candidates},
    )


def _save_plan(settings: Settings, ts: TrainingSet) -> FoldPlan:
    """The set's seeded fold plan (repeats of one job, i.e. equal feature rows, in one fold), written where peer tools find it."""
    plan = FoldPlan.create(ts.run_ids, settings.cv_folds, settings.seed, groups=ts.jobs)
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
