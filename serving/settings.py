"""The API's settings, read from ``PREDICTOR_API_*`` environment variables: where it listens, its token, its limits.

Read by ``predictor serve`` and ``predictor scheduler`` (the processes that serve HTTP) and by the clients that find
the API through them (:meth:`serving.client.PredictorClient.for_settings`, ``predictor slurm install-plugin``).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from predictor.apitoken import read_token
from predictor.settings import Settings


class ApiSettings(BaseSettings):
    """The HTTP API's knobs (``PREDICTOR_API_PORT`` is ``port``)."""

    model_config = SettingsConfigDict(env_prefix="PREDICTOR_API_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = Field(default=1, ge=1, description="API worker processes `predictor serve` runs behind its port.")
    token: SecretStr | None = Field(
        default=None, description="Bearer token for write and admin endpoints (default: the one generated under HOME)."
    )
    max_body_bytes: int = Field(default=4 << 20, gt=0, description="Largest request body the API reads.")
    max_header_bytes: int = Field(
        default=32 << 10, gt=0, description="Largest request line plus headers the API reads (431 beyond)."
    )
    header_timeout_s: float = Field(
        default=10.0, gt=0, description="How long a request line plus headers may take to arrive (408 beyond)."
    )
    max_batch: int = Field(default=1000, gt=0, description="Most jobs or observations in one API call.")
    feature_budget_s: float = Field(default=5.0, gt=0, description="Feature-extraction time budget per API request.")
    reload_interval_s: float = Field(
        default=30.0, ge=0, description="How often the API polls the champion aliases (0: never)."
    )
    registry_wait_s: float = Field(
        default=15.0,
        gt=0,
        description="How long the API waits for the registry at start before serving cached champions.",
    )
    registry_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="How long one request to the model registry may take (no retries); a reload waits no longer for the registry.",
    )
    log_level: str = Field(default="info", description="Level of the API's structured JSON logs.")

    @classmethod
    def of(cls, settings: Settings, **values: Any) -> ApiSettings:
        """The API settings of the service homed at ``settings.home``: without ``PREDICTOR_API_TOKEN`` (or a ``token``
        given), the token ``predictor serve`` generated under the home, if it did. ``values`` override the environment."""
        api = cls(**values)
        if api.token is None and (token := read_token(settings.home)) is not None:
            api.token = SecretStr(token)
        return api

    @property
    def url(self) -> str:
        """The API's base URL as its own host and port give it."""
        return f"http://{self.host}:{self.port}"
