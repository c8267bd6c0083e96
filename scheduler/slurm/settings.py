"""Slurm's settings, read from ``PREDICTOR_SLURM_*``: the site's rule file, the cluster's name in run ids, and when the
plugin sets ``time_min``.

Read by the processes that meet Slurm's jobs: ``predictor serve`` (the plugin's routes), ``predictor slurm ...`` and
``predictor ingest`` of a Slurm log.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


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
