"""Slurm's job_submit plugin: a job's facts as job_submit.lua sends them, and the changes to make to it.

The route needs no token, so every field is bounded: text is one line (no control character but tab, so the text
answer's ``key=value`` lines cannot gain one), minutes and counts stay below Slurm's NO_VAL.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictInt

MAX_TEXT = 65_536
# Slurm's largest finite limit (NO_VAL and INFINITE are above)
MAX_MINUTES = 2**32 - 3
CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # every control character but tab


def _one_line(value: str) -> str:
    """Refuse a control character: a NUL, or a newline that would add a ``key=value`` line to the text answer."""
    if found := CONTROL.search(value):
        raise ValueError(f"must be one line of text: control character {found.group()!r} at position {found.start()}")
    return value


Line = Annotated[str, Field(max_length=MAX_TEXT), AfterValidator(_one_line)]
ShortLine = Annotated[str, Field(max_length=4096), AfterValidator(_one_line)]
Minutes = Annotated[StrictInt, Field(ge=1, le=MAX_MINUTES)]  # a JSON integer: true is no 1
# a uid, a gid, CPUs, nodes, megabytes: below Slurm's NO_VAL
Count = Annotated[StrictInt, Field(ge=0, le=MAX_MINUTES)]


class SlurmJobIn(BaseModel):
    """A job as job_submit.lua sees it; limits in minutes, absent when the user gave none."""

    model_config = ConfigDict(extra="forbid")

    name: ShortLine = Field(default="", description="The job name (sbatch's default: the script's file name).")
    comment: Line = ""
    partition: ShortLine | None = None
    work_dir: ShortLine | None = None
    directives: Line = Field(default="", description="The words of the script's #PREDICTOR lines.")
    environment: Line = Field(default="", description="The value of the job's PREDICTOR_JOB variable.")
    time_limit: Minutes | None = None
    default_time: Minutes | None = Field(default=None, description="The partition's default limit.")
    raise_missing_limit: StrictBool = Field(default=False, description="Give a job without a limit the served limit.")
    memory_given: StrictBool = Field(
        default=False, description="The user asked for memory (--mem, --mem-per-cpu or --mem-per-gpu)."
    )
    raise_missing_memory: StrictBool = Field(
        default=False, description="Give a job that asked for no memory the served memory limit."
    )
    user_id: Count | None = Field(default=None, description="The submitting user's uid.")
    user_name: ShortLine | None = Field(
        default=None, description="The submitting user's name (its uid's, as slurmctld knows it)."
    )
    group_id: Count | None = None
    account: ShortLine | None = None
    qos: ShortLine | None = None
    min_cpus: Count | None = Field(default=None, description="CPUs asked for.")
    min_nodes: Count | None = Field(default=None, description="Nodes asked for.")
    pn_min_memory: Count | None = Field(
        default=None, description="Memory per node asked for, in MB (absent when asked per CPU)."
    )
    array_inx: ShortLine | None = Field(default=None, description="The array's index expression (--array).")


class SlurmAdviceOut(BaseModel):
    """The changes to make (minutes; ``time_limit`` null: leave it) and the estimate behind them."""

    algorithm: str
    platform: str
    time_min: int | None = Field(
        description="The served limit in minutes, rounded up; null without an estimate (no model yet: only the tag is "
        "written), without a limit below the job's, or where the site's planning does not ask for it."
    )
    time_min_reason: str = Field(
        default="",
        description="Why time_min is set or not: the served limit against the job's limit, and PREDICTOR_SLURM_TIME_MIN "
        "(planned: the cluster's newest planning decision, `predictor plan choose`).",
    )
    time_limit: int | None
    comment: Line
    estimate: str | None = Field(description="The estimate as a Slurm walltime, rounded up.")
    limit: str | None = Field(description="The served limit (upper estimate) as a Slurm walltime.")
    memory: str | None = Field(
        default=None,
        description="The memory to request (--mem), a Slurm size such as 3500M: the served memory limit, for a job that asked for none "
        "where the site raises missing memory; null: leave it.",
    )
    memory_limit: float | None = Field(
        default=None, description="The served peak-memory limit in bytes (null without a memory model)."
    )
    seconds: float | None
    model_name: str | None
    model_version: str | None
    member: str | None = Field(
        default=None, description="The zoo member (or ensemble) that answered, learned or one of the site's rules."
    )
    rule: bool = Field(
        default=False,
        description="True when one of the site's simple rules answered (for a job class: the user's request or last "
        "two runs); its limit is then the job's own.",
    )
    reason: str | None = Field(default=None, description="Why there is no estimate, when there is none.")
