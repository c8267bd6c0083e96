"""Slurm's settings, read from ``PREDICTOR_SLURM_*``: the site's rule file, the cluster's name in run ids, and when the
plugin sets ``time_min``.

Read by the processes that meet Slurm's jobs: ``predictor serve`` (the plugin's routes), ``predictor slurm ...`` and
``predictor ingest`` of a Slurm log.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

PLUGIN_TOKEN = re.compile(r"[A-Za-z0-9._~-]{16,512}")


class SlurmSettings(BaseSettings):
    """How Slurm's jobs map to the catalog (``PREDICTOR_SLURM_RULES`` is ``rules``)."""

    model_config = SettingsConfigDict(env_prefix="PREDICTOR_SLURM_", extra="ignore")

    rules: Path | None = Field(
        default=None, description="Rule file mapping Slurm jobs to algorithms and platforms (docs/slurm.md)."
    )
    cluster: str = Field(
        default="slurm", min_length=1, max_length=40, description="The Slurm cluster's name in the run ids of its jobs."
    )
    time_min: Literal["planned", "always", "never"] = Field(
        default="planned",
        description="When the plugin's route sets time_min from the served limit: planned (only while the newest "
        "planning decision of this cluster, `predictor plan choose`, plans with the service), always, or never.",
    )
    plugin_token: SecretStr | None = Field(
        default=None,
        description="What the job_submit plugin sends to be known as the plugin: only it is answered from a user's "
        "history (a job class); unset, no caller is.",
    )
    input_max_bytes: int = Field(
        default=1 << 30,
        gt=0,
        description="Largest input file (under the data roots) a job's words make an accounting import read.",
    )
    input_budget_s: float = Field(
        default=5.0, gt=0, description="Seconds an accounting import reads one job's input files at most."
    )

    @field_validator("plugin_token")
    @classmethod
    def _token_text(cls, value: SecretStr | None) -> SecretStr | None:
        """A token the plugin's Lua carries as it is: 16 or more of letters, digits, ``-``, ``_``, ``.``, ``~``."""
        if value is not None and not PLUGIN_TOKEN.fullmatch(value.get_secret_value()):
            raise ValueError("must be 16 or more letters, digits, '-', '_', '.' or '~' (e.g. `openssl rand -hex 32`)")
        return value
