"""The champions served, and what a reload changed."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from predictor.domain import Target


class ModelOut(BaseModel):
    """The champion serving one (algorithm, platform)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "algorithm": "mafft",
                    "platform": "cpu1",
                    "target": "time",
                    "name": "runtime-mafft-cpu1",
                    "version": "3",
                    "flavor": "sklearn",
                    "model_kind": "lightgbm_log",
                    "features": ["input.sequences", "input.mean_length"],
                    "metrics": {"rae": 31.2, "within_factor_2": 0.93},
                    "registered_at": "2026-11-22T04:26:03Z",
                    "fit_seconds": 0.41,
                    "intervals": True,
                    "prediction_path": "fast",
                    "origin": "registry",
                }
            ]
        }
    )

    algorithm: str
    platform: str
    target: Target = Field(
        default=Target.TIME, description="What it estimates: 'time' (wall seconds) or 'memory' (peak bytes)."
    )
    name: str
    version: str
    flavor: str
    model_kind: str | None = Field(default=None, description="Zoo member, e.g. lightgbm_log.")
    features: list[str]
    metrics: dict[str, float] = Field(description="Cross-validation metrics (Weka-style).")
    registered_at: datetime | None = Field(default=None, description="When training registered this version.")
    fit_seconds: float | None = Field(default=None, description="Seconds the final fit on all rows took.")
    intervals: bool = Field(description="Whether residual quantiles give this model intervals and limits.")
    prediction_path: str = Field(description="'fast' (numpy, checked against predict at load) or 'generic'.")
    origin: str = Field(description="'registry', or 'cache' when loaded from the local disk cache.")
    live: dict[str, float | None] | None = Field(
        default=None,
        description="Live error of the estimates of this champion's target its pair was served over its latest runs "
        "(peak memory: those served a memory estimate that measured their peak): runs, rae, within_25pct, "
        "underestimate_rate, limit_exceeded, interval_coverage (null where nothing applies); null before any.",
    )


class ReloadResponse(BaseModel):
    """What a reload did: the pairs whose champion changed, and the state afterwards."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "changed": ["mafft/cpu1", "mafft/cpu1 (memory)"],
                    "removed": [],
                    "champions": 2,
                    "memory_champions": 1,
                    "source": "registry",
                    "registry_error": None,
                }
            ]
        }
    )

    changed: list[str] = Field(
        description="Pairs whose champion changed; a memory champion's as `algorithm/platform (memory)`."
    )
    removed: list[str]
    champions: int = Field(description="Time champions served.")
    memory_champions: int = Field(default=0, description="Peak-memory champions served.")
    source: str
    registry_error: str | None
