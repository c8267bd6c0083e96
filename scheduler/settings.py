"""The scheduler's settings, read from ``PREDICTOR_SCHEDULER_*`` and its probing's from ``PREDICTOR_PROBE_*``.

Read by the process that runs the scheduler: ``predictor serve`` (embedded) or ``predictor scheduler``; the probe
commands (``predictor probe ...``) read the probes' folder too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from predictor.settings import Settings

# data.acquisition.RULES (tests/scheduler/test_probing_service.py keeps them equal)
ProbeRule = Literal["uncertainty", "coverage"]


class SchedulerSettings(BaseSettings):
    """The one scheduler of a database: its policy, where it runs and its lease (``PREDICTOR_SCHEDULER_POLICY`` is ``policy``)."""

    model_config = SettingsConfigDict(env_prefix="PREDICTOR_SCHEDULER_", extra="ignore")

    policy: str = Field(
        default="edf",
        description="The embedded scheduler's policy spec, e.g. edf, easy:order=sjbf or conservative (its predicted starts); "
        "easy:planned=true follows the site's newest planning decision (`predictor plan choose`).",
    )
    embedded: bool = Field(
        default=True,
        description="Whether `predictor serve` (one worker) runs the scheduler in its process; off when it runs as `predictor scheduler`.",
    )
    port: int = Field(default=8001, description="Port `predictor scheduler` serves the scheduler's routes on.")
    lease_s: float = Field(
        default=15.0,
        gt=0,
        description="Lease time of the one scheduler: a standby takes over this long after its holder stops.",
    )


class ProbeSettings(BaseSettings):
    """Idle-time probing: the plan the scheduler probes idle machines with and its budget (``PREDICTOR_PROBE_PLAN`` is ``plan``)."""

    model_config = SettingsConfigDict(env_prefix="PREDICTOR_PROBE_", extra="ignore")

    plan: Path | None = Field(
        default=None, description="Sweep plan whose jobs the scheduler probes idle machines with (unset: no probing)."
    )
    budget_s: float = Field(
        default=600.0, ge=0, description="Machine-seconds of probes each platform may run per clock hour."
    )
    cap_s: float = Field(default=120.0, gt=0, description="Longest one probe may run: killed there, stored censored.")
    rule: ProbeRule = Field(
        default="coverage",
        description="Acquisition rule that ranks the probe plan's candidates (coverage: measured on real runs, docs/results/probing.md).",
    )
    workdir: Path | None = Field(
        default=None,
        description="Where the probes' inputs are made, read by every machine (default HOME/sweep-inputs).",
    )

    def resolved_workdir(self, settings: Settings) -> Path:
        """The probes' inputs folder, absolute: ``workdir``, else ``sweep-inputs`` under the service's home."""
        return (self.workdir or settings.resolved_home / "sweep-inputs").expanduser().resolve()
