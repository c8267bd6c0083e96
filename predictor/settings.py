"""The core's settings, read from ``PREDICTOR_*`` environment variables with embedded defaults.

Every default points inside one home directory (``PREDICTOR_HOME``, default
``./.predictor``), so a fresh clone runs with a SQLite store and a local MLflow
backend and nothing else. Each component's own settings live beside it (the API's in
``serving/settings.py``, training's in ``training/settings.py``, ...); cli/settings.py says which command reads which.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from predictor.intervals import MAX_COVERAGE

PROJECT_ROOT = Path(__file__).resolve().parent.parent
BUNDLED_DATA = PROJECT_ROOT / "data"


class Settings(BaseSettings):
    """What every process of the service shares: its home, the store, the registry, the catalog, the data roots, the
    live window and the estimates' quantiles."""

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
    live_window: int = Field(default=200, ge=1, description="Latest runs per pair that live error is measured over.")
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

    @field_validator("store_url")
    @classmethod
    def _readable_store_url(cls, url: str | None) -> str | None:
        """Refuse a store URL SQLAlchemy cannot read, or whose database it does not know, when the settings are read:
        the message names no part of the URL (it may carry a password)."""
        if url is not None:
            check_database_url(url)
        return url

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


def check_database_url(url: str) -> None:
    """Raise ValueError, naming no part of ``url``, when SQLAlchemy cannot parse it or knows no such database dialect."""
    # imported here: a command that sets no store URL does not pay for it
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        raise ValueError(
            "not a database URL SQLAlchemy can read (expected dialect[+driver]://user:password@host:port/database, "
            "the port a number, or sqlite:///path)"
        ) from None
    try:
        parsed.get_dialect()
    except NoSuchModuleError:
        raise ValueError(f"no database dialect {parsed.drivername!r} (e.g. postgresql+psycopg, sqlite)") from None
