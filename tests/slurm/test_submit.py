"""What the plugin sets in a job: time_min only below the job's limit (issue 39); memory (issue 31) only for a job that
asked for none, where the site asks for it."""

from __future__ import annotations

import pytest

from predictor.domain import Estimate
from predictor.memsize import MIB
from slurm.rules import JobFacts, JobMapping
from slurm.submit import advise

MAPPING = JobMapping("mafft", "cpu1")


@pytest.mark.parametrize(
    ("memory_limit", "seconds", "given", "raise_missing", "expected"),
    [
        (3500 * MIB + 1, 60.0, False, True, "3501M"),  # rounded up to whole megabytes: the request covers the limit
        (3500 * MIB, None, False, True, "3500M"),  # a memory model without a time model still sets memory
        (3500 * MIB, 60.0, True, True, None),  # the user's --mem is never changed
        (3500 * MIB, 60.0, False, False, None),  # the site did not ask for it
        (None, 60.0, False, True, None),  # no memory model: memory left alone
    ],
)
def test_memory_is_set_only_where_the_user_gave_none_and_the_site_asks(
    memory_limit: float | None, seconds: float | None, given: bool, raise_missing: bool, expected: str | None
) -> None:
    estimate = Estimate(
        platform="cpu1", seconds=seconds, limit=None if seconds is None else 120.0, memory_limit=memory_limit
    )
    advice = advise(
        JobFacts(), MAPPING, estimate, time_limit=30, memory_given=given, raise_missing_memory=raise_missing
    )
    assert advice.memory == expected
    assert advice.time_limit is None  # the time limit is the user's


@pytest.mark.parametrize(
    ("limit", "time_limit", "default_time", "expected"),
    [
        (90.0, 30, None, 2),  # a limit of 1.5 minutes, under the user's 30: rounded up to 2
        (1800.0, 30, None, None),  # a limit of exactly the request: nothing for Slurm to gain
        (7200.0, 30, None, None),  # above the request: never a time_min at or over what the user asked for
        (600.0, None, 5, None),  # no user limit: the partition's default caps it just the same
        (600.0, None, None, 10),  # no limit known at all: the served limit
        (None, 30, None, None),  # no limit served: none set
    ],
)
def test_time_min_is_set_only_from_a_limit_below_the_jobs_own(
    limit: float | None, time_limit: int | None, default_time: int | None, expected: int | None
) -> None:
    estimate = Estimate(platform="cpu1", seconds=30.0, limit=limit)
    advice = advise(JobFacts(), MAPPING, estimate, time_limit=time_limit, default_time=default_time)
    assert advice.time_min == expected


def test_a_raised_missing_limit_sets_no_time_min_at_the_same_value() -> None:
    advice = advise(
        JobFacts(),
        MAPPING,
        Estimate(platform="cpu1", seconds=30.0, limit=600.0),
        time_limit=None,
        raise_missing_limit=True,
    )
    assert (advice.time_limit, advice.time_min) == (10, None)


@pytest.mark.parametrize(
    ("limit", "planned", "expected", "why"),
    [
        (90.0, True, 2, "the served limit, below the job's limit"),
        (90.0, False, None, "not asked for"),  # the site's planning keeps its own rule: Slurm plans with the request
        (7200.0, True, None, "the served limit is not below the job's limit"),
        (None, True, None, "no limit served"),
    ],
)
def test_the_advice_says_why_time_min_is_set_or_not(
    limit: float | None, planned: bool, expected: int | None, why: str
) -> None:
    """Issue 39: whether time_min is set is also the site's (its planning decision); the advice says why either way."""
    estimate = Estimate(platform="cpu1", seconds=30.0, limit=limit)
    advice = advise(JobFacts(), MAPPING, estimate, time_limit=30, plan_time_min=planned)
    assert (advice.time_min, advice.time_min_reason) == (expected, why)
    assert advice.comment.startswith("predictor: algorithm=mafft")  # the tag is written whatever the planning
