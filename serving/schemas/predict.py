"""Estimates: one job, a batch of jobs, or a matrix of feature rows, and their answers (the domain's estimate
records with what only the API adds)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator
from pydantic.json_schema import JsonDict

from predictor.domain import AnsweredEstimate, EstimateColumns, typed_property
from predictor.memsize import optional_slurm_memory
from serving.schemas.common import Coverage, FiniteFloat, Name, ParamValue, Probability, StrictModel

FEATURES_EXAMPLE: JsonDict = {
    "input.bytes": 13240.0,
    "input.sequences": 40.0,
    "input.residues": 12000.0,
    "input.mean_length": 300.0,
    "input.min_length": 300.0,
    "input.max_length": 300.0,
}
JOB_EXAMPLE: JsonDict = {"algorithm": "mafft", "params": {"input": "samples/family-40x300.fa"}}
ESTIMATE_EXAMPLE: JsonDict = {
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
    "member": "quadratic_log",
    "rule": False,
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


class PredictRequest(StrictModel):
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


class IntervalOptions(StrictModel):
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
            "examples": [
                {
                    "algorithm": "mafft",
                    "platforms": ["cpu1"],
                    "columns": list(FEATURES_EXAMPLE),
                    "rows": [list(FEATURES_EXAMPLE.values()), [5210.0, 20.0, 5000.0, 250.0, 250.0, 250.0]],
                }
            ]
        },
    )

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


class EstimateOut(AnsweredEstimate):
    """The estimate for one platform, or the reason there is none."""

    # in every answer
    seconds: float | None = Field(description="Estimated wall seconds; null when nothing can be estimated.")


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


class EstimateColumnsOut(EstimateColumns):
    """One platform's estimates for every row, as columns (null where a row has no finite estimate)."""

    @computed_field(
        description="``memory`` per row as Slurm memory sizes (e.g. 3500M); null without a memory champion."
    )
    @typed_property
    def memory_slurm(self) -> list[str | None] | None:
        return None if self.memory is None else [optional_slurm_memory(m) for m in self.memory]

    @computed_field(description="``memory_limit`` per row as Slurm memory sizes: values for `sbatch --mem`.")
    @typed_property
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
