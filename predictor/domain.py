"""Domain types shared by the store, the oracle, the API and the scheduler.

These are plain validated records; the API has its own payload models and the
store its own tables, each converting to and from these.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


class CacheState(str, Enum):
    WARM = "warm"
    COLD = "cold"
    UNKNOWN = "unknown"


class Source(str, Enum):
    PRODUCTION = "production"  # a real job of a real user
    PROBE = "probe"  # a run the project made to learn (profiling, sweeps, idle-time runs)
    IMPORT = "import"  # brought in from a file or a foreign log


def utcnow() -> datetime:
    return datetime.now(UTC)


class Measurement(BaseModel):
    """One finished run of an algorithm on a platform: the unit the models learn from."""

    model_config = ConfigDict(extra="forbid")

    run_id: str = Field(min_length=1, max_length=200, description="Unique id; storing the same run twice keeps one.")
    algorithm: str = Field(min_length=1)
    platform: str = Field(min_length=1)
    machine: str = Field(default="unknown", min_length=1)
    params: dict[str, Any] = Field(default_factory=dict)
    features: dict[str, float] = Field(default_factory=dict)
    wall_seconds: float = Field(ge=0)
    cpu_seconds: float | None = Field(default=None, ge=0)
    max_rss_kb: int | None = Field(default=None, ge=0)
    exit_status: int = 0
    cache_state: CacheState = CacheState.UNKNOWN
    source: Source = Source.PRODUCTION
    recorded_at: datetime = Field(default_factory=utcnow)
    context: dict[str, Any] = Field(default_factory=dict, description="Circumstances of the run, e.g. load average.")

    @field_validator("wall_seconds", "cpu_seconds")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

    @field_validator("features")
    @classmethod
    def _finite_features(cls, value: dict[str, float]) -> dict[str, float]:
        bad = [k for k, v in value.items() if not math.isfinite(v)]
        if bad:
            raise ValueError(f"non-finite feature values: {', '.join(sorted(bad))}")
        return value

    @property
    def succeeded(self) -> bool:
        return self.exit_status == 0


class Estimate(BaseModel):
    """Predicted wall seconds for one job on one platform, and what produced it."""

    platform: str
    seconds: float | None = None
    lower: float | None = None
    upper: float | None = None
    coverage: float | None = Field(default=None, description="Nominal coverage of [lower, upper].")
    limit: float | None = Field(default=None, description="Upper estimate at the limit quantile: a walltime request.")
    limit_quantile: float | None = None
    model_name: str | None = None
    model_version: str | None = None
    flavor: str | None = None
    features: dict[str, float] = Field(default_factory=dict)
    fallback: bool = False
    reason: str | None = None

    @property
    def available(self) -> bool:
        return self.seconds is not None
