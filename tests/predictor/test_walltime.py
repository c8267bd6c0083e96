"""Slurm walltimes from seconds: rounded up, days split off, nonsense refused."""

from __future__ import annotations

import math

import pytest

from predictor.walltime import optional_walltime, parse_walltime, slurm_walltime


@pytest.mark.parametrize(
    ("seconds", "walltime"),
    [
        (0, "00:00:00"),
        (0.001, "00:00:01"),
        (59.2, "00:01:00"),
        (60, "00:01:00"),
        (3599.01, "01:00:00"),
        (86_399, "23:59:59"),
        (86_399.5, "1-00:00:00"),
        (86_400, "1-00:00:00"),
        (3 * 86_400 + 4 * 3600 + 5 * 60 + 6, "3-04:05:06"),
        (12 * 86_400 + 0.5, "12-00:00:01"),
    ],
)
def test_seconds_become_a_slurm_walltime_rounded_up(seconds: float, walltime: str) -> None:
    assert slurm_walltime(seconds) == walltime


def test_no_seconds_is_no_walltime() -> None:
    assert optional_walltime(None) is None and optional_walltime(59.2) == "00:01:00"


@pytest.mark.parametrize("seconds", [-0.5, -60, math.nan, math.inf])
def test_negative_and_non_finite_seconds_are_refused(seconds: float) -> None:
    with pytest.raises(ValueError, match="finite, non-negative"):
        slurm_walltime(seconds)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("5", 300.0),  # sacct -c: a bare number is minutes
        ("5:30", 330.0),
        ("00:00:02", 2.0),
        ("01:02:03", 3723.0),
        ("2-00", 2 * 86_400.0),
        ("1-02:03", 86_400 + 2 * 3600 + 3 * 60.0),
        ("3-04:05:06", 3 * 86_400 + 4 * 3600 + 5 * 60 + 6.0),
        ("UNLIMITED", None),
        ("Partition_Limit", None),
        ("", None),
    ],
)
def test_slurm_durations_read_as_slurm_reads_them(text: str, seconds: float | None) -> None:
    assert parse_walltime(text) == seconds


@pytest.mark.parametrize("walltime", ["00:00:01", "23:59:59", "1-00:00:00", "12-00:00:01"])
def test_a_printed_walltime_reads_back(walltime: str) -> None:
    value = parse_walltime(walltime)
    assert value is not None and slurm_walltime(value) == walltime


@pytest.mark.parametrize("text", ["1:2:3:4", "-5", "a:b", "1-2:3:4:5", "5 min"])
def test_a_bad_duration_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a Slurm duration"):
        parse_walltime(text)
