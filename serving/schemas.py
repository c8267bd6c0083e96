"""Pydantic payloads at the API boundary, kept apart from the domain types.

Every number a client sends must be finite, every string is bounded and free of NUL characters, and
integers fit the store's columns, so nothing a client sends can fail further in (a 500) instead of here (a 422).
"""

from __future__ import annotations

import itertools
import math
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    StrictBool,
    computed_field,
    model_validator,
)

from predictor.domain import CacheState, Source, Target
from predictor.intervals import MAX_COVERAGE
from predictor.memsize import optional_slurm_memory
from predictor.walltime import optional_walltime

FiniteFloat = Annotated[float, Strict(), Field(allow_inf_nan=False)]  # a JSON number: true is no 1.0, "2" no 2.0
Measured = FiniteFloat
Count = Annotated[int, Strict()]  # a JSON integer: true is no 1
Text = Annotated[str, Field(max_length=4096, pattern=r"^[^\x00]*$")]
Name = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[^\x00]*$")]
Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
Int32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
ParamValue = StrictBool | Int64 | FiniteFloat | Text
Probability = Annotated[float, Field(gt=0, lt=1)]
Coverage = Annotated[float, Field(gt=0, le=MAX_COVERAGE)]
MAX_DEPTH = 8

FEATURES_EXAMPLE = {
    "input.bytes": 13240.0, "input.sequences": 40.0, "input.residues": 12000.0, "input.mean_length": 300.0,
    "input.min_length": 300.0, "input.max_length": 300.0,
}  # fmt: skip
JOB_EXAMPLE = {"algorithm": "mafft", "params": {"input": "samples/family-40x300.fa"}}
ESTIMATE_EXAMPLE = {
    "platform": "cpu1",
    "seconds": 0.61,
    "lower": 0.45,
    "upper": 0.93,
    "coverage": 0.9,
    "limit": 1.02,
    "limit_quantile": 0.95,
    "walltime": "00:00:01",
    "limit_walltime": "00:00:02",
    "model_name": "runtime-mafft-cpu1",
    "model_version": "3",
    "flavor": "sklearn",
    "fallback": False,
    "reason": None,
    "features": {"input.sequences": 40.0, "input.mean_length": 300.0},
    "memory": 52428800.0,
    "memory_lower": 41943040.0,
    "memory_upper": 68157440.0,
    "memory_limit": 73400320.0,
    "memory_limit_quantile": 0.99,
    "memory_slurm": "50M",
    "memory_limit_slurm": "70M",
    "memory_model_name": "memory-mafft-cpu1",
    "memory_model_version": "2",
}


def _plain_json(value: Any, depth: int = 0) -> Any:
    """Check a free-form JSON value: finite numbers, 64-bit integers, no NUL characters, bounded nesting."""
    if depth > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        for key, item in value.items():
            _plain_json(key, depth + 1)
            _plain_json(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _plain_json(item, depth + 1)
    elif isinstance(value, str) and "\x00" in value:
        raise ValueError("text must not contain NUL characters")
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError("numbers must be finite")
    elif isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
        raise ValueError("integers must fit in 64 bits")
    return value


FreeJson = Annotated[dict[str, Any], AfterValidator(_plain_json)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PredictRequest(_Strict):
    """One job: an algorithm, its parameters (input files as paths under the data roots), or precomputed features."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [JOB_EXAMPLE, {"algorithm": "mafft", "features": FEATURES_EXAMPLE, "platforms": ["cpu1"]}]
        },
    )

    algorithm: Name
    params: dict[Name, ParamValue] = Field(default_factory=dict, max_length=100)
    platforms: list[Name] | None = Field(
        default=None, max_length=100, description="Only these platforms (default: all eligible)."
    )
    features: dict[Name, FiniteFloat] | None = Field(
        default=None, max_length=1000, description="Precomputed features; when given, input files are not read."
    )


class IntervalOptions(_Strict):
    """Per-call overrides of the interval coverage and the limits' quantiles (service defaults otherwise)."""

    coverage: Coverage | None = Field(default=None, description="Nominal coverage of [lower, upper].")
    limit_quantile: Probability | None = Field(default=None, description="Quantile of the walltime limit.")
    memory_limit_quantile: Probability | None = Field(default=None, description="Quantile of the peak-memory limit.")


class SinglePredictRequest(PredictRequest, IntervalOptions):
    """One job, with optional interval settings."""


class MatrixPredictRequest(IntervalOptions):
    """Many jobs of one algorithm as rows of precomputed features: the lean form of a batch (no file is read)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"algorithm": "mafft", "platforms": ["cpu1"], "columns": list(FEATURES_EXAMPLE),
                          "rows": [list(FEATURES_EXAMPLE.values()), [5210.0, 20.0, 5000.0, 250.0, 250.0, 250.0]]}]
        },
    )  # fmt: skip

    algorithm: Name
    platforms: list[Name] | None = Field(
        default=None, max_length=100, description="Only these platforms (default: all eligible)."
    )
    params: dict[Name, ParamValue] = Field(
        default_factory=dict, max_length=100, description="Plain parameters shared by every row."
    )
    columns: list[Name] = Field(min_length=1, max_length=1000, description="Feature names, one per value of each row.")
    rows: list[list[FiniteFloat]] = Field(min_length=1, description="One list of feature values per job.")

    @model_validator(mode="after")
    def _rectangular(self) -> MatrixPredictRequest:
        if len(set(self.columns)) != len(self.columns):
            raise ValueError("columns must be distinct")
        width = len(self.columns)
        bad = next((i for i, row in enumerate(self.rows) if len(row) != width), None)
        if bad is not None:
            raise ValueError(f"row {bad} has {len(self.rows[bad])} values but there are {width} columns")
        return self


class EstimateOut(BaseModel):
    """The estimate for one platform, or the reason there is none."""

    platform: str
    seconds: float | None = Field(description="Estimated wall seconds; null when nothing can be estimated.")
    lower: float | None = Field(default=None, description="Lower end of the interval.")
    upper: float | None = Field(default=None, description="Upper end of the interval.")
    coverage: float | None = Field(default=None, description="Nominal coverage of [lower, upper].")
    limit: float | None = Field(default=None, description="Upper estimate at limit_quantile: a walltime request.")
    limit_quantile: float | None = None
    model_name: str | None = None
    model_version: str | None = None
    flavor: str | None = None
    fallback: bool = Field(default=False, description="True when the profile table's mean answered instead of a model.")
    extrapolating: bool = Field(
        default=False,
        description="The job lies outside what the model was trained on: a monotone power law answered and the interval is widened.",
    )
    out_of_domain: list[str] = Field(default_factory=list, description="Features beyond their trained range.")
    reason: str | None = Field(default=None, description="Why there is no model estimate, or why it extrapolates.")
    features: dict[str, float] = Field(default_factory=dict, description="The features the model used.")
    memory: float | None = Field(
        default=None, description="Estimated peak resident memory, bytes; null when the pair has no memory champion."
    )
    memory_lower: float | None = Field(default=None, description="Lower end of the memory interval, bytes.")
    memory_upper: float | None = Field(default=None, description="Upper end of the memory interval, bytes.")
    memory_limit: float | None = Field(
        default=None, description="Peak memory at memory_limit_quantile, bytes: a memory request (`sbatch --mem`)."
    )
    memory_limit_quantile: float | None = None
    memory_model_name: str | None = Field(default=None, description="The memory champion that answered.")
    memory_model_version: str | None = None

    @computed_field(description="``seconds`` as a Slurm walltime, rounded up (HH:MM:SS or D-HH:MM:SS).")
    @property
    def walltime(self) -> str | None:
        return optional_walltime(self.seconds)

    @computed_field(description="``limit`` as a Slurm walltime, rounded up: a value for `sbatch --time`.")
    @property
    def limit_walltime(self) -> str | None:
        return optional_walltime(self.limit)

    @computed_field(description="``memory`` as a Slurm memory size, whole mebibytes rounded up (e.g. 3500M).")
    @property
    def memory_slurm(self) -> str | None:
        return optional_slurm_memory(self.memory)

    @computed_field(description="``memory_limit`` as a Slurm memory size, rounded up: a value for `sbatch --mem`.")
    @property
    def memory_limit_slurm(self) -> str | None:
        return optional_slurm_memory(self.memory_limit)


ESTIMATE_FIELDS = tuple(n for n in (*EstimateOut.model_fields, *EstimateOut.model_computed_fields) if n != "platform")
EstimateField = Literal[ESTIMATE_FIELDS]  # type: ignore[valid-type]  # the names of EstimateOut's fields, platform aside


class BatchPredictRequest(IntervalOptions):
    """Many jobs in one call (at most the service's batch limit), estimated with one model call per champion."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"jobs": [JOB_EXAMPLE, {"algorithm": "mafft", "features": FEATURES_EXAMPLE}]}]},
    )

    jobs: list[PredictRequest] = Field(min_length=1)
    fields: list[EstimateField] | None = Field(
        default=None,
        description="Fields of each estimate to answer with (`platform`, `seconds` and the Slurm strings `walltime`, "
        "`limit_walltime`, `memory_slurm` and `memory_limit_slurm` always come); default: all. "
        "Leaving out `features` spares echoing every job's features back.",
    )


class PredictResponse(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"algorithm": "mafft", "estimates": [ESTIMATE_EXAMPLE]}]})

    algorithm: str
    estimates: list[EstimateOut]


class EstimateColumnsOut(BaseModel):
    """One platform's estimates for every row, as columns (null where a row has no finite estimate)."""

    platform: str
    seconds: list[float | None]
    lower: list[float | None] | None = None
    upper: list[float | None] | None = None
    limit: list[float | None] | None = None
    coverage: float | None = None
    limit_quantile: float | None = None
    model_name: str | None = None
    model_version: str | None = None
    flavor: str | None = None
    fallback: bool = False
    reason: str | None = None
    extrapolating: list[bool] | None = Field(
        default=None, description="Per row: outside what the time or the memory model was trained on."
    )
    memory: list[float | None] | None = Field(default=None, description="Peak bytes per row; null without a memory champion.")
    memory_lower: list[float | None] | None = None
    memory_upper: list[float | None] | None = None
    memory_limit: list[float | None] | None = Field(default=None, description="Peak bytes at memory_limit_quantile per row.")
    memory_limit_quantile: float | None = None
    memory_model_name: str | None = None
    memory_model_version: str | None = None

    @computed_field(description="``memory`` per row as Slurm memory sizes (e.g. 3500M); null without a memory champion.")
    @property
    def memory_slurm(self) -> list[str | None] | None:
        return None if self.memory is None else [optional_slurm_memory(m) for m in self.memory]

    @computed_field(description="``memory_limit`` per row as Slurm memory sizes: values for `sbatch --mem`.")
    @property
    def memory_limit_slurm(self) -> list[str | None] | None:
        return None if self.memory_limit is None else [optional_slurm_memory(m) for m in self.memory_limit]


class MatrixPredictResponse(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "algorithm": "mafft",
                    "rows": 2,
                    "estimates": [
                        {
                            "platform": "cpu1",
                            "seconds": [0.61, 0.2],
                            "lower": [0.45, 0.15],
                            "upper": [0.93, 0.3],
                            "limit": [1.02, 0.33],
                            "coverage": 0.9,
                            "limit_quantile": 0.95,
                            "model_name": "runtime-mafft-cpu1",
                            "model_version": "3",
                            "flavor": "sklearn",
                            "fallback": False,
                            "reason": None,
                        }
                    ],
                }
            ]
        }
    )

    algorithm: str
    rows: int
    estimates: list[EstimateColumnsOut]


class JobError(BaseModel):
    """Why one job of a batch was not estimated: the status it would have had alone, and the detail."""

    status: int
    detail: str


class BatchItem(BaseModel):
    """One job's answer in a batch: its estimates, or its error."""

    index: int
    algorithm: str
    estimates: list[EstimateOut] | None = None
    error: JobError | None = None


class BatchPredictResponse(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "results": [
                        {"index": 0, "algorithm": "mafft", "estimates": [ESTIMATE_EXAMPLE], "error": None},
                        {
                            "index": 1,
                            "algorithm": "blast",
                            "estimates": None,
                            "error": {"status": 404, "detail": "unknown algorithm 'blast'; known: clustalo, mafft"},
                        },
                    ]
                }
            ]
        }
    )

    results: list[BatchItem]


class ObservationIn(_Strict):
    """A finished run; ``run_id`` makes recording idempotent (derived from the content when absent)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "run_id": "job-81723",
                    "algorithm": "mafft",
                    "platform": "cpu2",
                    "machine": "node-07",
                    "params": {"input": "samples/family-40x300.fa", "retree": 2},
                    "features": FEATURES_EXAMPLE,
                    "wall_seconds": 0.58,
                    "cpu_seconds": 1.02,
                    "exit_status": 0,
                }
            ]
        },
    )

    run_id: Name | None = None
    algorithm: Name
    platform: Name
    machine: Name | None = None
    params: dict[Name, ParamValue] = Field(default_factory=dict, max_length=100)
    features: dict[Name, Measured] = Field(default_factory=dict, max_length=1000)
    wall_seconds: Measured = Field(ge=0)
    cpu_seconds: Measured | None = Field(default=None, ge=0)
    max_rss_kb: Annotated[Int64, Strict()] | None = Field(default=None, ge=0)
    exit_status: Annotated[Int32, Strict()] = 0
    censored: StrictBool = Field(
        default=False, description="Stopped before it finished (time limit, kill): wall_seconds, > 0, is a lower bound."
    )
    cache_state: CacheState = CacheState.UNKNOWN
    source: Source = Source.PRODUCTION
    recorded_at: Annotated[str, Field(max_length=64, json_schema_extra={"format": "date-time"})] | None = Field(
        default=None,
        description="When the run finished, ISO 8601 (default: now); naive is UTC. Checked as ingest checks it: "
        "a time outside the years 1 to 9999 once in UTC rejects the observation.",
    )
    context: FreeJson = Field(default_factory=dict, description="Circumstances of the run, e.g. load average.")
    served: ServedIn | None = Field(
        default=None,
        description="The estimate this run was given before it ran (what the client asked the API); by default the service "
        "scores the run against what its champion serves for the run's features when it is recorded.",
    )


class ServedIn(BaseModel):
    """The estimate a run was served before it ran, as the predict routes answered it."""

    model_config = ConfigDict(extra="forbid")

    seconds: FiniteFloat = Field(gt=0)
    lower: FiniteFloat | None = Field(default=None, ge=0)
    upper: FiniteFloat | None = Field(default=None, ge=0)
    limit: FiniteFloat | None = Field(default=None, ge=0)
    model_name: Name | None = None
    model_version: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    extrapolating: StrictBool = False

    @model_validator(mode="after")
    def _ordered(self) -> ServedIn:
        """Refuse what no answer of the service is: its estimates hold ``lower <= seconds <= upper <= limit``."""
        given = [(name, value) for name in ("lower", "seconds", "upper", "limit") if (value := getattr(self, name)) is not None]
        for (low, a), (high, b) in itertools.pairwise(given):
            if a > b:
                raise ValueError(f"{low} ({a:g}) is above {high} ({b:g}): served estimates hold lower <= seconds <= upper <= limit")
        return self


class Rejected(BaseModel):
    """An observation that was not stored: its position in the request, the field and why."""

    index: int
    run_id: str | None
    field: str
    message: str


class ObservationsResponse(BaseModel):
    """What one call recorded: newly stored run ids, ids already stored, and rejected observations."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "stored": ["job-81723"],
                    "duplicates": ["job-81722"],
                    "rejected": [
                        {
                            "index": 2,
                            "run_id": "job-81724",
                            "field": "platform",
                            "message": "unknown platform 'gpu9'; known: cpu1, cpu2",
                        }
                    ],
                }
            ]
        }
    )

    stored: list[str]
    duplicates: list[str]
    rejected: list[Rejected]


class ErrorOut(BaseModel):
    detail: str


class ValidationErrorOut(BaseModel):
    """A 422: the summary, and each problem with its location when the payload itself was malformed."""

    detail: str
    errors: list[dict[str, Any]] = Field(default_factory=list)


class PlatformOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"name": "cpu2", "kind": "cpu", "cores": 2, "clock_ghz": 2.45, "memory_gb": 24, "disk": "ssd", "power_watts": 95}
            ]
        }
    )

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
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "mafft",
                    "description": "Multiple sequence alignment with MAFFT.",
                    "parameters": [
                        {"name": "input", "type": "file", "required": True, "extractor": "fasta"},
                        {"name": "retree", "type": "int", "required": False, "default": 2, "min": 1, "max": 2},
                    ],
                    "platforms": ["cpu1", "cpu2"],
                }
            ]
        }
    )

    name: str
    description: str
    parameters: list[ParameterOut]
    platforms: list[str]


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
    target: Target = Field(default=Target.TIME, description="What it estimates: 'time' (wall seconds) or 'memory' (peak bytes).")
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
        description="Live error of the estimates this pair was served over its latest runs: runs, rae, within_25pct, "
        "underestimate_rate, limit_exceeded, interval_coverage (null where nothing applies); null before any.",
    )


class ReloadResponse(BaseModel):
    """What a reload did: the pairs whose champion changed, and the state afterwards."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"changed": ["mafft/cpu1", "mafft/cpu1 (memory)"], "removed": [], "champions": 2, "memory_champions": 1,
                 "source": "registry", "registry_error": None}
            ]
        }
    )  # fmt: skip

    changed: list[str] = Field(description="Pairs whose champion changed; a memory champion's as `algorithm/platform (memory)`.")
    removed: list[str]
    champions: int = Field(description="Time champions served.")
    memory_champions: int = Field(default=0, description="Peak-memory champions served.")
    source: str
    registry_error: str | None


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
