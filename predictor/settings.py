"""Service settings, read from ``PREDICTOR_*`` environment variables with embedded defaults.

Every default points inside one home directory (``PREDICTOR_HOME``, default
``./.predictor``), so a fresh clone runs with a SQLite store and a local MLflow
backend and nothing else.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from predictor.intervals import MAX_COVERAGE

PROJECT_ROOT = Path(__file__).resolve().parent.parent
BUNDLED_DATA = PROJECT_ROOT / "data"
Executor = Literal["local", "ray"]


class Settings(BaseSettings):
    """One settings object for the CLI, the store, training and the API."""

    model_config = SettingsConfigDict(env_prefix="PREDICTOR_", extra="ignore")

    home: Path = Field(default=Path(".predictor"), description="Directory for the embedded store, MLflow and caches.")
    store_url: str | None = Field(default=None, description="SQLAlchemy URL of the measurement store.")
    mlflow_tracking_uri: str | None = Field(default=None, description="MLflow tracking and registry URI.")
    mlflow_artifact_root: Path | None = Field(default=None, description="Artifact folder for a local MLflow backend.")
    catalog_path: Path = Field(
        default=BUNDLED_DATA / "catalog.yaml", description="Catalog of algorithms and platforms."
    )
    site_catalogs: list[Path] = Field(
        default_factory=list, description="A site's own catalogs, merged after catalog_path."
    )
    data_roots: list[Path] = Field(
        default_factory=lambda: [BUNDLED_DATA], description="Folders API clients may name input files under."
    )
    cv_folds: int = Field(default=10, ge=2)
    seed: int = 20261122
    selection_metric: str = Field(
        default="rae", description="Cross-validation metric (lower is better) that picks champions."
    )
    train_models: list[str] | None = Field(
        default=None,
        description="Zoo members training and the worker use when none are named (JSON list; unset: the defaults).",
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
    live_window: int = Field(default=200, ge=1, description="Latest runs per pair that live error is measured over.")
    retrain_min_new_runs: int = Field(default=20, ge=1, description="New runs of a pair that can trigger a retrain...")
    retrain_min_new_fraction: float = Field(
        default=0.1, ge=0, description="...when they are also this share of the runs its champion was trained on."
    )
    drift_rae_factor: float = Field(
        default=1.5,
        gt=1,
        description="Retrain when the live RAE exceeds the champion's cross-validated RAE this many times...",
    )
    drift_min_runs: int = Field(default=30, ge=1, description="...over at least this many runs served by it.")
    worker_interval_s: float = Field(default=60.0, gt=0, description="How often the retrain worker looks at the store.")
    worker_n_jobs: int = Field(
        default=1, description="Processes the retrain worker trains in (leave cores to the API)."
    )
    worker_nice: int = Field(default=10, ge=0, le=19, description="Niceness the retrain worker runs at, below the API.")
    n_jobs: int = Field(default=-1, description="Local processes training fits models in (-1: one per core).")
    executor: Executor = Field(
        default="local", description="Where training's fold fits run: local processes or a Ray cluster."
    )
    ray_address: str = Field(
        default="auto",
        description="The Ray cluster training uses with executor=ray (auto: the one on this node; ray://host:port).",
    )
    interval_coverage: float = Field(
        default=0.9, gt=0, le=MAX_COVERAGE, description="Nominal coverage of the estimate intervals."
    )
    limit_quantile: float = Field(
        default=0.95, gt=0, lt=1, description="Quantile of the walltime limit (an upper estimate)."
    )
    memory_limit_quantile: float = Field(
        default=0.99, gt=0, lt=1, description="Quantile of the peak-memory limit (a memory request)."
    )
    model_cache_dir: Path | None = Field(
        default=None, description="Local copies of the champions (default HOME/champion-cache)."
    )

    @cached_property
    def resolved_home(self) -> Path:
        """The home directory, absolute and created on first use."""
        home = self.home.expanduser().resolve()
        home.mkdir(parents=True, exist_ok=True)
        return home

    @property
    def catalog_paths(self) -> list[Path]:
        """The catalog, then the site's catalogs: what :func:`predictor.catalog.load_catalog` merges."""
        return [self.catalog_path, *self.site_catalogs]

    @property
    def resolved_store_url(self) -> str:
        return self.store_url or f"sqlite:///{self.resolved_home / 'store.db'}"

    @property
    def resolved_tracking_uri(self) -> str:
        return self.mlflow_tracking_uri or f"sqlite:///{self.resolved_home / 'mlflow.db'}"

    @property
    def resolved_artifact_root(self) -> Path:
        return (self.mlflow_artifact_root or self.resolved_home / "mlartifacts").expanduser().resolve()

    @property
    def resolved_model_cache(self) -> Path:
        return (self.model_cache_dir or self.resolved_home / "champion-cache").expanduser().resolve()
