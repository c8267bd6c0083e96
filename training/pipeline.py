"""The training pipeline: measurements -> training sets -> zoo x k-fold CV -> tracked runs -> guarded champions.

One call trains one target (:class:`~predictor.domain.Target`): run time, or peak memory in bytes. Both
go the same way (zoo, folds, tracking, guard, intervals); each (algorithm, platform, target) has its own
champion, and members that only estimate run times (they read a requested time) are left out of memory.

All fold fits (every algorithm, platform, model and fold) fan out over ``settings.n_jobs`` local
processes, or over a Ray cluster (``settings.executor``), while this process tracks each candidate as its folds come in. Each pair's best candidate
is judged against the serving champion by the guard (:mod:`training.guard`); then only what the
decisions register is refitted on every row, in the same processes, and registered. Tracking and
the registry are MLflow's by default, or in memory (:mod:`training.memory`) for simulations. Each call is one
:class:`~training.session.TrainingSession`, whose phases it runs in turn.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from models import available_models
from predictor.domain import Target
from training.champions import MlflowChampions, check_selection_metric
from training.dataset import MeasurementFrames, TrainingSet, load_training_sets
from training.session import (
    ChampionBook,
    Progress,
    Tracker,
    TrainingOutcome,
    TrainingSession,
    applicable_members,
    fold_plan_path,
    forward_plan,
    guard_settings,
    selection_metric,
    session_fingerprint,
)
from training.settings import TrainingSettings
from training.tracking import MlflowTracker

__all__ = [
    "DEFAULT_MODELS",
    "JOB_CLASS_MODELS",
    "ChampionBook",
    "Progress",
    "Tracker",
    "TrainingOutcome",
    "count_steps",
    "decision_row",
    "default_members",
    "fold_plan_path",
    "guard_settings",
    "run_training",
    "selection_metric",
    "session_fingerprint",
    "train",
]

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
    "online_log",
    "online_area_log",
    "cascade",
    "cascade_log",
)

# A job class's runs (thousands, with the job-history features of features/history.py) are trained with members
# that fit them in seconds: the site's rules, the power laws, boosted trees and the online learners. The networks and
# the SVR search cost minutes per fit on such sets, and a replay retrains each class again and again.
JOB_CLASS_MODELS: tuple[str, ...] = (
    "mean",
    "requested_time",
    "last_two_mean",
    "linear_log",
    "tobit_log",
    "lightgbm_log",
    "online_log",
    "online_median_log",
    "online_area_log",
    "sc15",
)


def count_steps(
    settings: TrainingSettings, training_sets: Sequence[TrainingSet], *, models: Sequence[str] | None = None
) -> int:
    """How many times :func:`train` with the same arguments will call ``progress`` at least: once per fold fit, once per pair.

    Members the serving champions need for their comparison are fitted too and add steps.
    """
    explicit = models if models is not None else settings.train_models
    return sum(
        len(names) * forward_plan(settings, ts).n_folds + 1
        for ts in training_sets
        if (names := applicable_members(_chosen(explicit, ts), ts))
    )


def run_training(
    settings: TrainingSettings,
    store: MeasurementFrames,
    *,
    algorithms: Iterable[str] | None = None,
    models: Sequence[str] | None = None,
    progress: Progress | None = None,
    force: bool = False,
    target: Target = Target.TIME,
) -> list[TrainingOutcome]:
    """Train ``target`` of every stored pair of ``algorithms`` (all by default) under the guard (overridden with ``force``)."""
    sets = load_training_sets(store, algorithms, target=target)
    return train(settings, sets, models=models, progress=progress, force=force, target=target)


def train(
    settings: TrainingSettings,
    training_sets: Sequence[TrainingSet],
    *,
    models: Sequence[str] | None = None,
    progress: Progress | None = None,
    tracker: Tracker | None = None,
    champions: ChampionBook | None = None,
    force: bool = False,
    retrain: bool = False,
    dry_run: bool = False,
    target: Target = Target.TIME,
) -> list[TrainingOutcome]:
    """Cross-validate ``models`` on each set, log them, let the guard judge the best against the serving champion, register.

    Every set must be of ``target`` (a ValueError otherwise): its sessions, champions and registered
    names are that target's; members that cannot estimate it are left out.

    The fold fits of every set share one pool of processes; each candidate is logged as soon as
    its folds are in, and each set is judged as soon as its last candidate is. The serving
    champion's members are fitted on the same folds when ``models`` leave them out, so the guard
    compares like with like (:mod:`training.guard`). Then what the decisions register is refitted
    on every row, together, and registered; ``dry_run`` stops before that. ``retrain`` trains a set
    again even when the session that judged its champion saw the same runs; ``force`` does too, and promotes each
    set's best candidate whatever the guard says. Members that do not apply to a set are left out
    of it; ``progress`` is called once per fold fit, as fits finish, and once per judged set.
    """
    explicit = models if models is not None else settings.train_models
    _check_request(settings, training_sets, explicit, target)
    tracker = tracker or MlflowTracker(settings)
    book = champions or MlflowChampions(settings.resolved_tracking_uri)
    session = TrainingSession(settings, tracker, book, target, progress, force=force, dry_run=dry_run)
    session.plan([(ts, _chosen(explicit, ts)) for ts in training_sets], retrain=retrain)
    with session.tracked():
        session.cross_validate()
        session.register()
        return session.outcomes()


def _check_request(
    settings: TrainingSettings, training_sets: Sequence[TrainingSet], explicit: Sequence[str] | None, target: Target
) -> None:
    """Refuse, before any work, unknown members, unknown selection metrics and sets of another target than ``target``."""
    if explicit is not None:
        _models(explicit)
    check_selection_metric(settings.selection_metric)
    check_selection_metric(settings.job_class_metric)
    if others := sorted(
        {f"{ts.algorithm}/{ts.platform} ({ts.target.value})" for ts in training_sets if ts.target is not target}
    ):
        raise ValueError(f"training {target.value} on sets of another target: {', '.join(others)}")


def decision_row(outcome: TrainingOutcome, trigger: str) -> dict[str, Any]:
    """The ``model_decisions`` row of an outcome (what ``predictor models history`` lists)."""
    d = outcome.decision
    return {
        "decided_at": datetime.now(UTC),
        "algorithm": outcome.algorithm,
        "platform": outcome.platform,
        "target": outcome.target.value,
        "decision": d.verdict.value,
        "trigger": trigger[:200],
        "challenger": d.challenger[:200],
        "incumbent": d.incumbent[:200] if d.incumbent else None,
        "version": ",".join(outcome.registered)[:64] or None,
        "serving_version": outcome.version,
        "n_rows": outcome.n_rows,
        "reason": d.reason,
        "details": dict(d.details),
    }


def default_members(ts: TrainingSet) -> tuple[str, ...]:
    """The members a set is trained with when none are named: :data:`JOB_CLASS_MODELS` for a job class (a set that
    carries its users' requests), else :data:`DEFAULT_MODELS`."""
    return JOB_CLASS_MODELS if ts.carries_requests else DEFAULT_MODELS


def _chosen(explicit: Sequence[str] | None, ts: TrainingSet) -> list[str]:
    """The members asked for ``ts``: those named, else its defaults."""
    return _models(explicit if explicit is not None else default_members(ts))


def _models(models: Sequence[str]) -> list[str]:
    """The requested zoo members (registered ones only), unknown names refused before any work."""
    known = available_models()
    chosen = list(models)
    unknown = [m for m in chosen if m not in known]
    if unknown or not chosen:
        raise ValueError(f"unknown or no models: {', '.join(unknown) or '(none)'}; known: {', '.join(known)}")
    return chosen
