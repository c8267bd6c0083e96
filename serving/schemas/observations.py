"""Observations: finished runs a client records, the estimate each was served, and what the service did with them."""

from __future__ import annotations

import itertools
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict, StrictBool, model_validator

from predictor.domain import CacheState, Source
from serving.schemas.common import FiniteFloat, FreeJson, Int32, Int64, Measured, Name, ParamValue, StrictModel
from serving.schemas.predict import FEATURES_EXAMPLE


class ObservationIn(StrictModel):
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
    memory: FiniteFloat | None = Field(
        default=None, gt=0, description="The peak memory served, bytes (the predict routes' `memory`)."
    )
    memory_lower: FiniteFloat | None = Field(default=None, ge=0)
    memory_upper: FiniteFloat | None = Field(default=None, ge=0)
    memory_limit: FiniteFloat | None = Field(
        default=None, ge=0, description="The memory limit served, bytes (`memory_limit`)."
    )
    memory_model_name: Name | None = None
    memory_model_version: Annotated[str, Field(min_length=1, max_length=64)] | None = None

    @model_validator(mode="after")
    def _ordered(self) -> ServedIn:
        """Refuse what no answer of the service is: its estimates hold ``lower <= seconds <= upper <= limit``, and
        the same of memory; memory's bounds come with a memory estimate."""
        for names in (
            ("lower", "seconds", "upper", "limit"),
            ("memory_lower", "memory", "memory_upper", "memory_limit"),
        ):
            given = [(name, value) for name in names if (value := getattr(self, name)) is not None]
            for (low, a), (high, b) in itertools.pairwise(given):
                if a > b:
                    raise ValueError(
                        f"{low} ({a:g}) is above {high} ({b:g}): served estimates hold {' <= '.join(names)}"
                    )
        if self.memory is None and (self.memory_lower, self.memory_upper, self.memory_limit) != (None, None, None):
            raise ValueError("memory_lower, memory_upper and memory_limit come with the memory they bound")
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
