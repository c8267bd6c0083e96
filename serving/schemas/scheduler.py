"""The embedded scheduler's resources: jobs submitted and read back, machine and job events, orders."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from scheduler.service import MAX_HEALTHY, MAX_MEMORY, MAX_SLOTS
from serving.schemas.common import Count, FiniteFloat, Name, Text
from serving.schemas.predict import PredictRequest

# ids travel in URL paths: letters, digits and a few marks
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@+-]*$"
Ident = Annotated[str, Field(min_length=1, max_length=200, pattern=ID_PATTERN)]


class JobIn(PredictRequest):
    """A job to run: the estimate request plus what the scheduler needs (each field is the scheduler Job's of that name)."""

    id: Ident | None = Field(
        default=None, description="Client-chosen id; resubmitting a known id changes nothing (default: a new UUID)."
    )
    deadline: FiniteFloat | None = Field(default=None, description="Unix time by which it should end.")
    priority: Count = Field(
        default=0, ge=-100, le=100, description="Above 0 may cancel or pause lower-priority running jobs."
    )
    depends_on: list[Ident] = Field(
        default_factory=list, max_length=100, description="Jobs that must end cleanly first."
    )
    stream_from: Ident | None = Field(
        default=None, description="A producer whose output this job reads as it is written."
    )
    size: Count = Field(default=1, ge=1, le=1_000_000, description="Slots (CPUs) it occupies on a machine.")
    memory: Count | None = Field(
        default=None,
        ge=1,
        le=MAX_MEMORY,
        description="Bytes it may use, over all its slots; never changed. Without it, the job is "
        "planned with the memory limit of the pair's memory champion (planned_memory), where there is one.",
    )


class RunOut(BaseModel):
    machine: str
    start: float
    attempt: int
    estimate: float | None
    orphan: bool = Field(description="Its machine was lost; it may still be alive there.")


class JobOut(BaseModel):
    """What the scheduler knows and decided about one job (times are Unix seconds; each field is the Job's of that name)."""

    id: str
    seq: int = Field(description="The job's number: submission order, the cursor of GET /v1/jobs.")
    algorithm: str
    status: str
    submit: float
    deadline: float | None
    priority: int
    depends_on: list[str]
    stream_from: str | None
    size: int
    memory: int | None = Field(description="Bytes its user asked for (null: none).")
    estimates: dict[str, float | None]
    planned_memory: dict[str, int] = Field(
        description="Without memory: bytes it is planned with per platform, the memory champion's memory limit (platforms "
        "without a memory champion are absent: there its memory counts for nothing)."
    )
    planned_machine: str | None = Field(description="The machine it is deferred for, if waiting.")
    planned_start: float | None = Field(
        description="Its predicted start while waiting: the plan's (conservative backfilling reserves one for every job; "
        "EASY for the first that cannot start; EDF for those deferred to a busy machine)."
    )
    runs: list[RunOut]
    attempts: int
    progress: float
    started: float | None
    ended: float | None
    message: str


class JobPageOut(BaseModel):
    """One page of the queue, oldest first."""

    jobs: list[JobOut]
    cursor: int = Field(
        description="Pass as ``after`` for the next page (the last job's number, or ``after`` when none)."
    )


class RejectedJobOut(BaseModel):
    """A job of a submitted list that was not taken: its position, id, the status it would have had alone and why."""

    index: int
    id: str | None
    status: int
    detail: str


class JobsOut(BaseModel):
    jobs: list[JobOut]
    rejected: list[RejectedJobOut] = Field(
        default_factory=list,
        description="Jobs of a list not submitted (bad input, or needing a rejected job); the others were.",
    )


class MachineEventIn(BaseModel):
    """G (gained: new, or back with the jobs still healthy on it) or L (lost)."""

    model_config = ConfigDict(extra="forbid")

    event: Literal["gained", "lost"]
    platform: Name | None = Field(default=None, description="Needed for a new machine.")
    slots: Count = Field(default=1, ge=1, le=MAX_SLOTS)
    node_memory: Count | None = Field(
        default=None,
        ge=1,
        le=MAX_MEMORY,
        description="A new machine's bytes of memory (per node; null: memory never limits it).",
    )
    healthy: list[Ident] = Field(
        default_factory=list, max_length=MAX_HEALTHY, description="On return: jobs that kept running on it."
    )


class JobEventIn(BaseModel):
    """E (ended cleanly) or T (failed) for the job's run on ``machine``."""

    model_config = ConfigDict(extra="forbid")

    event: Literal["ended", "failed"]
    machine: Ident
    reason: Text = ""


class OrderOut(BaseModel):
    kind: str
    job: str
    machine: str
    target: str | None
    attempt: int | None
    requeue: bool
    reason: str


class OrdersOut(BaseModel):
    orders: list[OrderOut]


class ProbeOut(BaseModel):
    """What a probe order is about: the run to make through the profile wrapper (its measurement's run id) and its cap."""

    run_id: str
    algorithm: str
    platform: str
    params: dict[str, Any]
    cap_s: float = Field(description="Kill the run after this many seconds and store it censored.")


class IssuedOrderOut(OrderOut):
    seq: int
    issued_at: float
    probe: ProbeOut | None = Field(default=None, description="For probe and cancel_probe orders: the probe.")


class IssuedOrdersOut(BaseModel):
    orders: list[IssuedOrderOut]
    cursor: int = Field(description="Pass as ``after`` to get only newer orders.")
