"""Reading SWF logs: header, standard and extended job lines, every kind of bad line by number, the real logs."""

from __future__ import annotations

from datetime import UTC, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from features import FeatureError
from features.swf import read_swf
from tests.traces import trace

HEADER = """; Version: 2.2
; Computer: test cluster
; UnixStartTime: 1000000000
; TimeZone: 3600
; TimeZoneString: Europe/Stockholm
; Note: a free comment, with: colons
;
"""
GOOD = "    1   0  5  100  4  90.5  -1  4  200  -1  1  7  2  -1  3  1  -1  -1\n"


def write(tmp_path: Path, text: str, name: str = "log.swf") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_standard_line_and_header(tmp_path: Path) -> None:
    log = read_swf(write(tmp_path, HEADER + GOOD + "\n   \n"))
    assert log.name == "log" and log.problems == []
    assert log.header["Computer"] == "test cluster" and log.header["Note"] == "a free comment, with: colons"
    assert log.start_time == 1_000_000_000 and log.timezone == ZoneInfo("Europe/Stockholm")
    (job,) = log.jobs
    assert (job.line, job.job, job.submit, job.wait, job.run, job.avg_cpu) == (8, 1, 0, 5, 100, 90.5)
    assert (job.requested_procs, job.requested_time, job.status, job.user, job.group, job.queue) == (4, 200, 1, 7, 2, 3)
    assert (job.start, job.end, job.procs) == (5, 105, 4)
    assert (job.nodes, job.queue_name, job.node_request) == ((), None, None)
    assert isinstance(job.job, int) and isinstance(job.user, int)


def test_extended_line_keeps_nodes_queue_and_request(tmp_path: Path) -> None:
    line = "7 1356996695 71 1164 12 1 1024 12 1209600 9126 1 101 1 1 -1 1 1 1 {1129,1129,1130} q_2w 2:ppn=6:cl_zegox\n"
    (job,) = read_swf(write(tmp_path, line)).jobs
    assert job.nodes == (1129, 1130) and job.queue_name == "q_2w" and job.node_request == "2:ppn=6:cl_zegox"
    assert job.queue == -1 and job.submit == 1356996695


def test_without_header_times_are_unix_times_in_utc(tmp_path: Path) -> None:
    log = read_swf(write(tmp_path, GOOD))
    assert (log.start_time, log.timezone) == (0.0, UTC)


def test_unknown_zone_name_falls_back_to_the_offset(tmp_path: Path) -> None:
    log = read_swf(write(tmp_path, "; TimeZoneString: Nowhere/Atlantis\n; TimeZone: -18000\n" + GOOD))
    assert log.timezone == timezone(timedelta(hours=-5))


def test_unknowns_give_no_start_end_or_procs(tmp_path: Path) -> None:
    (job,) = read_swf(write(tmp_path, "2 10 -1 -1 -1 -1 -1 -1 -1 -1 -1 3 -1 -1 -1 -1 -1 -1\n")).jobs
    assert (job.start, job.end, job.procs, job.status) == (None, None, None, -1)


@pytest.mark.parametrize(
    ("line", "field", "message"),
    [
        ("1 0 5 100 4\n", "(line)", "has 5 fields; expected 18 (standard SWF) or 21"),
        (GOOD.strip() + " extra\n", "(line)", "has 19 fields"),
        (GOOD.replace(" 100 ", " 1e2x ", 1), "run", "expected a number, got '1e2x'"),
        (GOOD.replace(" 100 ", " nan ", 1), "run", "must be a finite number"),
        (GOOD.replace(" 100 ", " -5 ", 1), "run", "must be >= 0 or -1 (unknown), got -5"),
        (GOOD.replace("    1   0", "   -1   0", 1), "job", "must be >= 0, got -1"),
        (GOOD.replace("    1   0", "    1  -1", 1), "submit", "must be >= 0, got -1"),
        (GOOD.replace("  4  200", "  4.5  200", 1), "requested_procs", "expected an integer, got '4.5'"),
        (GOOD.replace("  1  7  2", "  9  7  2", 1), "status", "unknown status 9"),
        (GOOD.strip() + " {1,x} q a\n", "cpus", "node ids must be integers"),
        (GOOD.strip() + " 1,2 q a\n", "cpus", "expected node ids in braces"),
    ],
)
def test_bad_lines_are_problems_with_line_field_and_text(tmp_path: Path, line: str, field: str, message: str) -> None:
    log = read_swf(write(tmp_path, HEADER + GOOD + line + GOOD.replace("    1 ", "    3 ", 1)))
    assert [job.job for job in log.jobs] == [1, 3]
    (problem,) = log.problems
    assert (problem.line, problem.field, problem.text) == (9, field, line.strip())
    assert message in problem.message


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("; UnixStartTime: soon", r"log\.swf: header UnixStartTime is not a number: 'soon'"),
        ("; TimeZone: 90000", r"log\.swf: header TimeZone 90000 s is not an offset of less than a day"),
    ],
)
def test_bad_header_times_name_the_file(tmp_path: Path, header: str, message: str) -> None:
    with pytest.raises(FeatureError, match=message):
        read_swf(write(tmp_path, header + "\n" + GOOD))


def test_real_hpc2n_log_parses_whole() -> None:
    log = read_swf(trace("hpc2n.swf"))
    assert (len(log.jobs), log.problems) == (3170, [])
    assert log.start_time == 1027839845 and log.timezone == ZoneInfo("Europe/Stockholm")
    assert sum(job.run == -1 for job in log.jobs) == 25


def test_real_wagap_log_parses_with_two_bad_run_times() -> None:
    log = read_swf(trace("wagap-2013.swf"))
    assert len(log.jobs) == 17898 and log.header == {}
    assert [(p.line, p.field) for p in log.problems] == [(4186, "run"), (4200, "run")]
    assert all(job.queue_name and job.node_request and job.nodes for job in log.jobs)
