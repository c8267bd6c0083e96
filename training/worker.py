"""The retrain worker: it watches the store and retrains a pair's target when its data or its live error says so.

Each target of a pair (run time, peak memory) has its own champion and is judged on its own rule. A
pair's target is *due* when

- it has no champion yet and enough finished runs to train on (for peak memory: runs that measured it);
- runs arrived since its last *attempt* (the champion's training, or the newest decision recorded for the pair, kept
  or not): at least ``retrain_min_new_runs`` of them, and at least ``retrain_min_new_fraction`` of the runs the
  champion was trained on (so a pair of 50 runs retrains after 20 more, one of 5,000 after 500);
- or its live error drifted: over at least ``drift_min_runs`` runs served by the current version *since the last
  attempt*, its live RAE exceeds ``drift_rae_factor`` times its forward-validated RAE (peak memory against the runs'
  measured peaks, where a memory champion's answer was recorded). RAE whatever metric chose the champion: a job
  class is chosen by its median log error, but its drift judged on that median retrained HPC2N's class 12 times
  instead of 27 and served it at MdALE 0.89 instead of 0.68 (the last two runs: 0.76), wagap's classes at 1.49
  instead of 1.39 (1.42; docs/results/live-accuracy.md). A window's RAE weighs the served answers against the
  window's own mean: over 30 runs of a job class it fires far more readily, and the retrains it asks for keep the
  class's members fresh. A site's rule drifts like any champion: its answers follow the runs by themselves,
  but when they miss the runs since far more than they missed the runs it was chosen on, a member fitted on those runs
  may now beat it (a class's newcomers whose runs no user's history foretells).

Both count from the last attempt, so a champion the guard keeps while its live error stays high is tried again once
per ``drift_min_runs`` new runs, not at every check: judging the drift on the whole window again, whose runs the last
attempt already saw, asked for a retrain at every job end (58 retrains in 300 replayed jobs).

Due pairs are trained by the same pipeline as ``predictor train`` (same tracking, same guard), each
decision recorded in the store with what triggered it. The service's champion watcher picks up a
moved alias on its next poll. The same :func:`retrain_due` runs inside the simulator, on its clock.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from predictor.domain import Target
from predictor.live import LiveWindows, live_metrics, served_window
from predictor.online import LiveMember
from predictor.passes import every_interval
from training.dataset import MeasurementFrames, load_training_sets, target_rows
from training.folds import MIN_ROWS
from training.guard import Incumbent
from training.live_members import refresh_live_members
from training.pipeline import ChampionBook, Progress, Tracker, TrainingOutcome, count_steps, decision_row, train
from training.settings import WorkerSettings

log = logging.getLogger(__name__)
# what drift is judged on, whatever metric chose the champion (see the module docstring)
DRIFT_METRIC = "rae"
Starting = Callable[[Target, list[str], int], None]
"""Told before a target's training in a pass: the target, its pairs (``algorithm/platform``), about how many steps."""


@dataclass(frozen=True)
class Trigger:
    """Why a pair's target is due for training."""

    algorithm: str
    platform: str
    reason: str
    target: Target = Target.TIME


class WorkerStore(MeasurementFrames, LiveWindows, Protocol):
    """The part of the measurement store the worker reads and writes (:class:`predictor.store.MeasurementStore` fits)."""

    def count(
        self, algorithm: str | None = None, platform: str | None = None, *, informative_only: bool = False
    ) -> int: ...

    def add_decision(self, row: dict[str, Any]) -> None: ...

    def decisions(
        self, algorithm: str | None = None, platform: str | None = None, limit: int = 100, target: str | None = None
    ) -> list[dict[str, Any]]: ...

    def set_live_member(self, key: tuple[str, str, Target], member: LiveMember | None) -> None: ...


def due(
    settings: WorkerSettings, store: WorkerStore, book: ChampionBook, targets: Sequence[Target] = tuple(Target)
) -> list[Trigger]:
    """Every (pair, target) of the store that is due for training, and why (see the module docstring)."""
    triggers = []
    for target in targets:
        for algorithm, platform in store.pairs():
            reason = why_due(settings, store, algorithm, platform, book.incumbent(algorithm, platform, target), target)
            if reason is not None:
                triggers.append(Trigger(algorithm, platform, reason, target))
    return triggers


def why_due(
    settings: WorkerSettings,
    store: WorkerStore,
    algorithm: str,
    platform: str,
    incumbent: Incumbent | None,
    target: Target = Target.TIME,
) -> str | None:
    """Why one pair's ``target``, served by ``incumbent``, is due for training now; None when it is not."""
    runs = runs_of(store, algorithm, platform, target)
    if incumbent is None:
        return f"no champion; {runs} runs" if runs >= MIN_ROWS else None
    trained = incumbent.n_rows or 0
    attempted = max(trained, last_attempt(store, algorithm, platform, target))
    new = runs - attempted
    if new >= settings.retrain_min_new_runs and new >= settings.retrain_min_new_fraction * trained:
        since = f"version {incumbent.version} ({trained} runs)"
        if attempted > trained:
            since = f"the last attempt ({attempted} runs; {since} serves)"
        return f"{new} new runs since {since}"
    # the drift window holds at most the new runs: fewer than drift_min_runs cannot drift, and need no read
    if new < settings.drift_min_runs:
        return None
    return _drift(settings, store, algorithm, platform, incumbent, new, target)


def last_attempt(store: WorkerStore, algorithm: str, platform: str, target: Target) -> int:
    """Runs the newest decision recorded for the pair's ``target`` was made on (0: none recorded)."""
    found = store.decisions(algorithm, platform, limit=1, target=target.value)
    return int(found[0].get("n_rows") or 0) if found else 0


def runs_of(store: WorkerStore, algorithm: str, platform: str, target: Target) -> int:
    """Runs of the pair that tell ``target``: finished or censored (the store counts them), and for memory, with a peak memory."""
    if target is Target.TIME:
        return store.count(algorithm, platform, informative_only=True)
    return len(target_rows(store.frame(algorithm, platform, with_censored=True), target))


def _drift(
    settings: WorkerSettings,
    store: WorkerStore,
    algorithm: str,
    platform: str,
    incumbent: Incumbent,
    new: int,
    target: Target,
) -> str | None:
    """Why the live error of the serving version of ``target`` over the pair's ``new`` runs since the last attempt
    drifted from its forward-validated error, on RAE (:data:`DRIFT_METRIC`), or None."""
    metric = DRIFT_METRIC
    validated = incumbent.metrics.get(metric)
    if validated is None or not validated > 0:
        return None
    window = served_window(store, algorithm, platform, min(settings.live_window, new), target, incumbent.version)
    if len(window) < settings.drift_min_runs:
        return None
    live = live_metrics(window, target)[metric]
    if live > settings.drift_rae_factor * validated:
        return (
            f"live {metric.upper()} {live:.2f} over {len(window)} runs since the last attempt > "
            f"{settings.drift_rae_factor:g} x forward-validated {validated:.2f}"
        )
    return None


def retrain_due(
    settings: WorkerSettings,
    store: WorkerStore,
    *,
    book: ChampionBook | None = None,
    tracker: Tracker | None = None,
    models: Sequence[str] | None = None,
    progress: Progress | None = None,
    targets: Sequence[Target] = tuple(Target),
    on_start: Starting | None = None,
) -> list[TrainingOutcome]:
    """Train every due pair's due ``targets`` once, under the guard, and record each decision with its trigger.

    ``on_start`` hears, before each target's training, which pairs it trains and about how many steps ``progress``
    will be called for."""
    # the registry of the settings, not whatever MLflow's process-wide default points at (a stale ./mlflow.db)
    if book is None:
        from training.champions import MlflowChampions

        book = MlflowChampions(settings.resolved_tracking_uri)
    outcomes: list[TrainingOutcome] = []
    for target in targets:
        triggers = due(settings, store, book, [target])
        if not triggers:
            continue
        reasons = {(t.algorithm, t.platform): t.reason for t in triggers}
        loaded = load_training_sets(store, {t.algorithm for t in triggers}, target=target)
        sets = [ts for ts in loaded if (ts.algorithm, ts.platform) in reasons]
        if on_start is not None:
            on_start(
                target, [f"{ts.algorithm}/{ts.platform}" for ts in sets], count_steps(settings, sets, models=models)
            )
        trained = train(
            settings, sets, models=models, progress=progress, tracker=tracker, champions=book, target=target
        )
        refresh_live_members(store, book, trained)
        for outcome in trained:
            reason = reasons[(outcome.algorithm, outcome.platform)]
            store.add_decision(decision_row(outcome, f"worker: {reason}"))
            log.info(
                "%s/%s %s: %s (%s)",
                outcome.algorithm,
                outcome.platform,
                target.value,
                outcome.decision.verdict.value,
                outcome.decision.reason,
            )
        outcomes += trained
    return outcomes


def run(
    settings: WorkerSettings,
    store: WorkerStore,
    *,
    once: bool = False,
    stop: threading.Event | None = None,
    on_pass: Callable[[list[TrainingOutcome]], None] | None = None,
    progress: Progress | None = None,
    on_start: Starting | None = None,
) -> None:
    """Retrain what is due now, then every ``worker_interval_s`` until ``stop`` is set (or once); ``progress`` and
    ``on_start`` follow each pass's training (:func:`retrain_due`), ``on_pass`` hears its outcomes.

    Runs at ``worker_nice`` niceness and in ``worker_n_jobs`` processes, so the API on the same
    machine keeps its cores. A pass that fails is logged and the next one tries again.
    """
    os.nice(settings.worker_nice)
    settings = settings.model_copy(update={"n_jobs": settings.worker_n_jobs})

    def one_pass() -> list[TrainingOutcome]:
        return retrain_due(settings, store, progress=progress, on_start=on_start)

    if once:  # a failing pass fails the command
        outcomes = one_pass()
        if on_pass is not None:
            on_pass(outcomes)
        return
    every_interval(
        one_pass, settings.worker_interval_s, stop or threading.Event(), what="retrain pass", log=log, on_pass=on_pass
    )
