"""Domain types shared by the store, the oracle, the API and the scheduler.

These are plain validated records; the API has its own payload models (the estimates' are these records, with
what only the API adds) and the store its own tables, each converting to and from these.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from enum import Enum
from typing import Any, Generic, Self, TypeVar, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, computed_field, field_validator

from predictor.memsize import optional_slurm_memory

# re-exported: its home is predictor.target (the CLI imports it light)
from predictor.target import Target as Target
from predictor.walltime import optional_walltime


class CacheState(str, Enum):
    WARM = "warm"
    COLD = "cold"
    UNKNOWN = "unknown"


class Source(str, Enum):
    PRODUCTION = "production"  # a real job of a real user
    # a run the project made to learn (profiling, sweeps, idle-time runs)
    PROBE = "probe"
    # brought in from a file or a foreign log
    IMPORT = "import"


MAX_WALL_SECONDS = 366 * 86_400
"""The longest run an observation may report (a year): a longer one is a unit or typing error, refused at the edge
and kept out of the fallback estimate."""


def utcnow() -> datetime:
    return datetime.now(UTC)


T = TypeVar("T")


class typed_property(property, Generic[T]):
    """A read-only ``property`` whose value has the getter's type, for ``@computed_field`` to decorate: mypy does not
    support decorators on top of ``@property`` itself (its ``prop-decorator`` error)."""

    def __init__(self, fget: Callable[[Any], T]) -> None:
        super().__init__(fget)

    @overload
    def __get__(self, instance: None, owner: type | None = None, /) -> Self: ...
    @overload
    def __get__(self, instance: object, owner: type | None = None, /) -> T: ...
    def __get__(self, instance: object, owner: type | None = None, /) -> Self | T:
        return super().__get__(instance, owner)


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
    censored: bool = Field(
        default=False,
        description="The run was stopped before it finished (time limit, kill): wall_seconds is a lower bound on its run time.",
    )
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

    @field_validator("censored")
    @classmethod
    def _censored_ran(cls, value: bool, info: ValidationInfo) -> bool:
        """A censored run's wall time is the bound it gives, so it must have run for some time."""
        if value and info.data.get("wall_seconds", 1.0) <= 0:
            raise ValueError("a censored run needs wall_seconds > 0 (the time it ran before it was stopped)")
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

    @property
    def informative(self) -> bool:
        """Whether training learns from it: a finished run (its time), or a censored one (a lower bound)."""
        return self.succeeded or self.censored


# A measurement's one-value fields, in order: a column each in the store, in files and in frames (the objects
# params, features and context are spread over columns of their own).
SCALAR_FIELDS = tuple(name for name in Measurement.model_fields if name not in ("params", "features", "context"))


class Estimate(BaseModel):
    """Predicted wall seconds (and peak memory) for one job on one platform, and what produced it: the one estimate
    record, which the API answers with its Slurm strings (:class:`AnsweredEstimate`)."""

    platform: str
    seconds: float | None = Field(
        default=None, description="Estimated wall seconds; null when nothing can be estimated."
    )
    lower: float | None = Field(default=None, description="Lower end of the interval.")
    upper: float | None = Field(default=None, description="Upper end of the interval.")
    coverage: float | None = Field(default=None, description="Nominal coverage of [lower, upper].")
    limit: float | None = Field(default=None, description="Upper estimate at limit_quantile: a walltime request.")
    limit_quantile: float | None = None
    model_name: str | None = None
    model_version: str | None = None
    flavor: str | None = None
    member: str | None = Field(
        default=None, description="The zoo member (or ensemble) the champion is: what answered, learned or a rule."
    )
    rule: bool = Field(
        default=False,
        description="True when one of the site's simple rules answered (the measured median, the user's request, the "
        "user's last two runs): no learned member beat it on the runs that came after the ones it trained on.",
    )
    fallback: bool = Field(default=False, description="True when the profile table's mean answered instead of a model.")
    extrapolating: bool = Field(
        default=False,
        description="The job lies outside what the model was trained on: a monotone power law answered and the interval is widened.",
    )
    out_of_domain: list[str] = Field(default_factory=list, description="Features beyond their trained range.")
    reason: str | None = Field(
        default=None,
        description="Why there is no model estimate, why it extrapolates, or that an answer was capped at what a "
        "platform can run (a year; its memory).",
    )
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

    @property
    def available(self) -> bool:
        return self.seconds is not None


class AnsweredEstimate(Estimate):
    """An estimate as the API answers it: the record and its Slurm strings (walltimes and memory sizes), derived from it."""

    @computed_field(description="``seconds`` as a Slurm walltime, rounded up (HH:MM:SS or D-HH:MM:SS).")
    @typed_property
    def walltime(self) -> str | None:
        return optional_walltime(self.seconds)

    @computed_field(description="``limit`` as a Slurm walltime, rounded up: a value for `sbatch --time`.")
    @typed_property
    def limit_walltime(self) -> str | None:
        return optional_walltime(self.limit)

    @computed_field(description="``memory`` as a Slurm memory size, whole mebibytes rounded up (e.g. 3500M).")
    @typed_property
    def memory_slurm(self) -> str | None:
        return optional_slurm_memory(self.memory)

    @computed_field(description="``memory_limit`` as a Slurm memory size, rounded up: a value for `sbatch --mem`.")
    @typed_property
    def memory_limit_slurm(self) -> str | None:
        return optional_slurm_memory(self.memory_limit)


class EstimateColumns(BaseModel):
    """Estimates of many rows of one algorithm on one platform, as columns (None where a row has no finite estimate)."""

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
    member: str | None = None
    rule: bool = False
    fallback: bool = False
    reason: str | None = None
    extrapolating: list[bool] | None = Field(
        default=None, description="Per row: outside what the time or the memory model was trained on."
    )
    memory: list[float | None] | None = Field(
        default=None, description="Peak bytes per row; null without a memory champion."
    )
    memory_lower: list[float | None] | None = None
    memory_upper: list[float | None] | None = None
    memory_limit: list[float | None] | None = Field(
        default=None, description="Peak bytes at memory_limit_quantile per row."
    )
    memory_limit_quantile: float | None = None
    memory_model_name: str | None = None
    memory_model_version: str | None = None


class ServedEstimate(BaseModel):
    """The estimate a finished run was given before it ran, kept beside its measurement to score the model live."""

    model_config = ConfigDict(extra="forbid")

    run_id: str = Field(min_length=1, max_length=200)
    algorithm: str = Field(min_length=1, max_length=200)
    platform: str = Field(min_length=1, max_length=200)
    seconds: float = Field(gt=0, allow_inf_nan=False)
    lower: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    upper: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    limit: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    model_name: str | None = Field(default=None, max_length=200)
    model_version: str | None = Field(default=None, max_length=64)
    extrapolating: bool = False
    origin: str = Field(
        default="service", max_length=16, description="client (it said what it was served), service or scheduler."
    )
    served_at: datetime = Field(default_factory=utcnow)
    memory: float | None = Field(default=None, gt=0, description="Peak bytes served; None: no memory estimate.")
    memory_lower: float | None = Field(default=None, ge=0)
    memory_upper: float | None = Field(default=None, ge=0)
    memory_limit: float | None = Field(default=None, ge=0, description="Memory limit served, bytes.")
    memory_model_name: str | None = Field(default=None, max_length=200)
    memory_model_version: str | None = Field(default=None, max_length=64)

    @field_validator("memory", "memory_lower", "memory_upper", "memory_limit")
    @classmethod
    def _finite_memory(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

    @classmethod
    def of(cls, run_id: str, algorithm: str, estimate: Estimate, origin: str) -> ServedEstimate | None:
        """The record of ``estimate`` served for run ``run_id``; None when it gave no time."""
        if estimate.seconds is None or not estimate.seconds > 0:
            return None
        return cls(
            run_id=run_id,
            algorithm=algorithm,
            platform=estimate.platform,
            seconds=estimate.seconds,
            lower=estimate.lower,
            upper=estimate.upper,
            limit=estimate.limit,
            model_name=estimate.model_name,
            model_version=estimate.model_version,
            extrapolating=estimate.extrapolating,
            origin=origin,
            **served_memory(estimate),
        )


def served_memory(estimate: Estimate) -> dict[str, Any]:
    """The memory fields of a :class:`ServedEstimate` for ``estimate``: its peak-memory estimate, interval and limit, and
    the champion that gave them; none when it gave no memory (no memory champion, or no finite positive peak), and a
    bound that is not a finite number of bytes is left out rather than refused (the run is recorded all the same)."""
    if estimate.memory is None or not (math.isfinite(estimate.memory) and estimate.memory > 0):
        return {}
    finite = {
        name: value if value is not None and math.isfinite(value) and value >= 0 else None
        for name, value in (
            ("memory_lower", estimate.memory_lower),
            ("memory_upper", estimate.memory_upper),
            ("memory_limit", estimate.memory_limit),
        )
    }
    return {
        "memory": estimate.memory,
        **finite,
        "memory_model_name": estimate.memory_model_name,
        "memory_model_version": estimate.memory_model_version,
    }
