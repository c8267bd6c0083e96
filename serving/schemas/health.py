"""Readiness: whether the service serves champions, and why not when it does not fully."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


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

    status: Literal["ready", "degraded", "not_ready"] = Field(
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
