"""Training's settings, read from the same ``PREDICTOR_*`` names as ever: cross-validation, the zoo members, where the
fits run, the champion guard's thresholds; and the retrain worker's triggers and pace.

Training's functions read the core's settings (the home, the registry, the coverage of the intervals) and training's
knobs together, so :class:`TrainingSettings` is the core's :class:`~predictor.settings.Settings` plus training's
knobs, and :class:`WorkerSettings` adds the retrain worker's. Read by ``predictor train``, ``predictor worker`` and the
simulations that retrain; cli/settings.py lists every command.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from predictor.settings import Settings

Executor = Literal["local", "ray"]


class TrainingSettings(Settings):
    """The core's settings plus training's: folds, seed, selection metric, members, where fits run, the guard."""

    cv_folds: int = Field(
        default=10, ge=2, description="Windows forward validation scores a pair's later runs in, at most."
    )
    forward_start: float = Field(
        default=0.5,
        gt=0,
        lt=1,
        description="Share of a pair's runs, the earliest, that forward validation only trains on.",
    )
    seed: int = 20261122
    selection_metric: str = Field(
        default="rae",
        description="Forward-validation metric (lower is better) that picks a catalog program's champions.",
    )
    job_class_metric: str = Field(
        default="mdale",
        description="Forward-validation metric that picks a job class's champions (sets carrying the users' requests).",
    )
    train_models: list[str] | None = Field(
        default=None,
        description="Zoo members training and the worker use when none are named (JSON list; unset: the defaults).",
    )
    n_jobs: int = Field(default=-1, description="Local processes training fits models in (-1: one per core).")
    executor: Executor = Field(
        default="local", description="Where training's fold fits run: local processes or a Ray cluster."
    )
    ray_address: str = Field(
        default="auto",
        description="The Ray cluster training uses with executor=ray (auto: the one on this node; ray://host:port).",
    )
    guard_margin: float = Field(
        default=0.0, ge=0, description="A challenger must lead the champion by more than this (% points)."
    )
    guard_confidence: float = Field(
        default=0.9, gt=0.5, lt=1, description="One-sided bootstrap confidence the guard asks of a lead."
    )
    guard_min_new_jobs: int = Field(
        default=10, ge=1, description="New jobs needed to test a refreshed champion against the served one."
    )
    guard_refresh_tolerance: float = Field(
        default=5.0,
        ge=0,
        description="A refresh is refused only when worse than the served version by more than this (% points).",
    )
    guard_recent_min_runs: int = Field(
        default=30,
        ge=1,
        description="A learned champion must not lose to the site's rule on the runs since the serving version was "
        "trained, when there are at least this many.",
    )


class WorkerSettings(TrainingSettings):
    """Training's settings plus the retrain worker's: when a pair is due again, and how often and how gently it looks."""

    retrain_min_new_runs: int = Field(default=20, ge=1, description="New runs of a pair that can trigger a retrain...")
    retrain_min_new_fraction: float = Field(
        default=0.5, ge=0, description="...when they are also this share of the runs its champion was trained on."
    )
    drift_rae_factor: float = Field(
        default=1.5,
        gt=1,
        description="Retrain when the live error exceeds the champion's forward-validated one this many times...",
    )
    drift_min_runs: int = Field(default=30, ge=1, description="...over at least this many runs served by it.")
    worker_interval_s: float = Field(default=60.0, gt=0, description="How often the retrain worker looks at the store.")
    worker_n_jobs: int = Field(
        default=1, description="Processes the retrain worker trains in (leave cores to the API)."
    )
    worker_nice: int = Field(default=10, ge=0, le=19, description="Niceness the retrain worker runs at, below the API.")
