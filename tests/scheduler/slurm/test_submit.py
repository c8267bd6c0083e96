"""What the plugin sets in a job: memory (issue 31) only for a job that asked for none, where the site asks for it."""

from __future__ import annotations

import pytest

from predictor.domain import Estimate
from predictor.memsize import MIB
from scheduler.slurm.rules import JobFacts, JobMapping
from scheduler.slurm.submit import advise

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
