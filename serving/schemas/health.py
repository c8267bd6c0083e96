"""Readiness: whether the service serves champions, and why not when it does not fully."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Readiness = Literal["ready", "degraded", "not_ready"]


class TrainingOut(BaseModel):
    """The retrain worker's progress, as it keeps it under the home (:mod:`predictor.training_status`)."""

    state: Literal["training", "waiting", "stopped"] = Field(
        description="'training': a pass is under way; 'waiting': between passes; 'stopped': the worker is not running."
    )
    summary: str = Field(description="The same in one line, as `predictor models list` prints it.")
    target: str | None = Field(description="What the pass under way trains: 'time' or 'memory'.")
    pairs: list[str] = Field(description="The pairs (algorithm/platform) it trains.")
    done: int = Field(description="Steps (fold fits, judgements, registrations) done in this pass...")
    total: int = Field(
        description="...of about this many (it grows by the champions' own members and the registrations)."
    )
    step: str | None = Field(description="The last step done.")
    started_at: str | None = Field(description="When the pass under way started (UTC).")
    updated_at: str | None
    last_pass_at: str | None = Field(description="When the last pass ended.")
    last_decisions: dict[str, int] = Field(description="What the last pass decided: count per verdict (promoted, ...).")
    next_pass_at: str | None


class ReadyOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "status": "ready",
                    "champions": 2,
                    "memory_champions": 2,
                    "source": "registry",
                    "registry_error": None,
                    "last_refresh": "2026-11-22T05:00:00Z",
                    "reasons": [],
                }
            ]
        }
    )

    status: Readiness = Field(
        description="'degraded': serving, with the reasons; 'not_ready' (503): champions exist but none is served."
    )
    champions: int = Field(description="Time champions served.")
    memory_champions: int = Field(default=0, description="Peak-memory champions served.")
    source: str = Field(description="'registry', 'cache' (registry unreachable at start) or 'none'.")
    registry_error: str | None
    last_refresh: datetime | None
    reasons: list[str] = Field(
        default_factory=list,
        description="Why the service is not fully ready: registry, champions that cannot be loaded, scheduler inbox.",
    )
    training: TrainingOut | None = Field(
        default=None,
        description="The retrain worker's progress on this home (null when none has run): until a pair's champion "
        "arrives, it is answered with the median of its measured runs.",
    )
