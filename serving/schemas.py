"""Pydantic payloads at the API boundary, kept apart from the domain types."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]


class PredictRequest(BaseModel):
    """One job: an algorithm, its parameters, and optionally the platforms to estimate for."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"algorithm": "mafft", "params": {"input": "samples/family-40x300.fa"}}]},
    )

    algorithm: str = Field(min_length=1, max_length=100)
    params: dict[str, Any] = Field(default_factory=dict)
    platforms: list[str] | None = Field(default=None, max_length=100)
    features: dict[str, FiniteFloat] | None = Field(
        default=None, description="Precomputed features; when given, input files are not read."
    )


class EstimateOut(BaseModel):
    """The estimate for one platform, or the reason there is none."""

    platform: str
    seconds: float | None
    lower: float | None = None
    upper: float | None = None
    coverage: float | None = None
    limit: float | None = None
    limit_quantile: float | None = None
    model_name: str | None = None
    model_version: str | None = None
    flavor: str | None = None
    fallback: bool = False
    reason: str | None = None
    features: dict[str, float] = Field(default_factory=dict)


class PredictResponse(BaseModel):
    algorithm: str
    estimates: list[EstimateOut]


class PlatformOut(BaseModel):
    name: str
    kind: str
    cores: int
    clock_ghz: float
    memory_gb: float
    disk: str
    power_watts: float


class ParameterOut(BaseModel):
    name: str
    type: str
    required: bool
    default: Any = None
    min: float | None = None
    max: float | None = None
    choices: list[str] | None = None
    extractor: str | None = None


class AlgorithmOut(BaseModel):
    name: str
    description: str
    parameters: list[ParameterOut]
    platforms: list[str]


class ModelOut(BaseModel):
    algorithm: str
    platform: str
    name: str
    version: str
    flavor: str
    features: list[str]
    metrics: dict[str, float]


class ErrorOut(BaseModel):
    detail: str
