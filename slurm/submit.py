"""What the job_submit plugin changes in a job: ``time_min`` set to the served limit, the estimate tagged in the comment,
and, where the site asks for it, the served memory limit for a job that asked for no memory.

Slurm's backfill may lower a job's time limit to its ``time_min`` to start it early, and then kills it there (sbatch(1),
``--time-min``). So ``time_min`` is the served ``limit``, the upper estimate the service calibrates to be exceeded
rarely, not the point estimate, which about half of the runs outlive; an estimate without a limit sets none. Slurm
counts limits in whole minutes: ``time_min`` is rounded up to a minute and set only when below the job's time limit
(the user's limit when given, else the partition's default): an estimate whose limit is not below it gives Slurm
nothing to gain, and Slurm refuses a ``time_min`` over it. Whether to set one at all is the site's (``plan_time_min``:
the route follows the site's planning decision, :mod:`scheduler.planning`); the advice says why it is set or not
(``time_min_reason``). The user's limit is
never changed; a job without one gets the served ``limit`` only where the site asks for it (``raise_missing_limit``).
Without an estimate (no model yet) nothing is set but the tag, so that the job's run is still learned from when it
ends. Memory likewise: a job that asked for none (no ``--mem``, ``--mem-per-cpu`` or ``--mem-per-gpu``) gets the
served ``memory_limit`` (whole megabytes, rounded up) only where the site asks for it (``raise_missing_memory``) and
the pair has a memory model; a user's request is never changed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from predictor.domain import Estimate
from predictor.memsize import slurm_memory
from predictor.walltime import optional_walltime, slurm_walltime
from slurm.rules import JobFacts, JobMapping
from slurm.words import tagged_comment


@dataclass(frozen=True)
class SubmitAdvice:
    """The changes to make: ``time_min`` and ``time_limit`` in minutes, ``memory`` a Slurm size (``3500M``) (None:
    leave it), the comment."""

    time_min: int | None
    time_limit: int | None
    comment: str
    # the estimate as a Slurm walltime, for the log and the user
    estimate: str | None
    limit: str | None
    memory: str | None = None
    time_min_reason: str = ""  # why time_min is set, or why not


def minutes(seconds: float) -> int:
    """Seconds as Slurm's whole minutes, rounded up, at least one."""
    return max(1, math.ceil(seconds / 60))


def advise(
    facts: JobFacts,
    mapping: JobMapping,
    estimate: Estimate | None,
    *,
    time_limit: int | None,
    default_time: int | None = None,
    raise_missing_limit: bool = False,
    memory_given: bool = False,
    raise_missing_memory: bool = False,
    plan_time_min: bool = True,
) -> SubmitAdvice:
    """The plugin's changes for a job estimated at ``estimate`` (None, or without seconds: the tag alone); limits in
    minutes, None: unset. ``memory_given``: the user asked for memory; ``plan_time_min`` false: no ``time_min``."""
    memory = None
    if estimate is not None and estimate.memory_limit is not None and raise_missing_memory and not memory_given:
        memory = slurm_memory(estimate.memory_limit)
    if estimate is None or estimate.seconds is None:
        words = {"algorithm": mapping.algorithm, "platform": mapping.platform, **mapping.params}
        return SubmitAdvice(None, None, tagged_comment(facts.comment, words), None, None, memory, "no estimate")
    new_limit = None
    if time_limit is None and raise_missing_limit and estimate.limit is not None:
        new_limit = minutes(estimate.limit)
    cap = time_limit or new_limit or default_time
    time_min = None if estimate.limit is None else minutes(estimate.limit)
    if not plan_time_min:
        time_min, why = None, "not asked for"
    elif time_min is None:
        why = "no limit served"
    elif cap is not None and time_min >= cap:
        # a limit not below what the job may run already: a time_min would change nothing, or kill
        time_min = None
        why = "the served limit is not below the job's limit"
    else:
        why = "the served limit" + (", below the job's limit" if cap is not None else "")
    tag = {
        "algorithm": mapping.algorithm,
        "platform": mapping.platform,
        "estimate": round(estimate.seconds, 1),
        "limit": None if estimate.limit is None else round(estimate.limit, 1),
        "model": estimate.model_name,
        "version": estimate.model_version,
        **_memory_words(estimate),
        **mapping.params,
    }
    return SubmitAdvice(
        time_min,
        new_limit,
        tagged_comment(facts.comment, tag),
        slurm_walltime(estimate.seconds),
        optional_walltime(estimate.limit),
        memory,
        why,
    )


def _memory_words(estimate: Estimate) -> dict[str, object]:
    """The tag's words of the peak memory served (whole bytes, rounded up) and the memory champion that served it; none
    without a memory estimate."""
    if estimate.memory is None or not math.isfinite(estimate.memory):
        return {}
    limit = estimate.memory_limit
    return {
        "memory": math.ceil(estimate.memory),
        "memory_limit": math.ceil(limit) if limit is not None and math.isfinite(limit) else None,
        "memory_model": estimate.memory_model_name,
        "memory_version": estimate.memory_model_version,
    }
