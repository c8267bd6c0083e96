"""Standard Workload Format (SWF) logs: header comments and job records, read line by line.

A job line has the 18 standard fields (Feitelson's Parallel Workloads Archive, version 2.2), or those 18 plus
three extended ones as in the MetaCentrum logs of the Alea simulator: the allocated CPUs as node ids in braces
(``{1241,1241}``, one entry per CPU), the queue name and the node request with its properties
(``1:ppn=8:x86_64:cl_zegox``). ``-1`` means unknown in every numeric field. Lines starting with ``;`` are header
comments, ``; Key: value`` ones are kept in :attr:`SwfLog.header`; blank lines are skipped.

A line that does not fit (another field count, a non-numeric or negative value other than -1, an unknown job
number or submit time, an unknown status) becomes a :class:`SwfProblem` naming its line and field; reading never
stops at one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from features.base import FeatureError

STANDARD_FIELDS = (
    "job",
    "submit",
    "wait",
    "run",
    "allocated_procs",
    "avg_cpu",
    "used_memory",
    "requested_procs",
    "requested_time",
    "requested_memory",
    "status",
    "user",
    "group",
    "executable",
    "queue",
    "partition",
    "preceding_job",
    "think_time",
)
EXTENDED_FIELDS = ("cpus", "queue_name", "node_request")
UNKNOWN = -1
# unknown, failed, completed, partial (2-4), cancelled
STATUSES = (-1, 0, 1, 2, 3, 4, 5)
_INTEGER_FIELDS = frozenset(STANDARD_FIELDS) - {
    "submit",
    "wait",
    "run",
    "avg_cpu",
    "used_memory",
    "requested_time",
    "requested_memory",
    "think_time",
}
# a job without a number or a submit time cannot be placed in the log
_REQUIRED = ("job", "submit")


@dataclass(frozen=True)
class SwfJob:
    """One job line; numeric fields keep the log's -1 for unknown."""

    line: int
    job: int
    submit: float
    wait: float
    run: float
    allocated_procs: int
    avg_cpu: float
    used_memory: float
    requested_procs: int
    requested_time: float
    requested_memory: float
    status: int
    user: int
    group: int
    executable: int
    queue: int
    partition: int
    preceding_job: int
    think_time: float
    nodes: tuple[int, ...] = ()
    queue_name: str | None = None
    node_request: str | None = None

    @property
    def start(self) -> float | None:
        """When the job started (submit + wait), or None when the wait is unknown."""
        return None if self.wait == UNKNOWN else self.submit + self.wait

    @property
    def end(self) -> float | None:
        """When the job ended (submit + wait + run), or None when either is unknown."""
        return None if self.start is None or self.run == UNKNOWN else self.start + self.run

    @property
    def procs(self) -> int | None:
        """Requested processors, else allocated ones, else None."""
        return next((p for p in (self.requested_procs, self.allocated_procs) if p != UNKNOWN), None)


@dataclass(frozen=True)
class SwfProblem:
    """A line that is not a valid job record: where, which field, why, and the line itself."""

    line: int
    field: str
    message: str
    text: str


@dataclass
class SwfLog:
    """A parsed log: its name (the file stem), header entries, valid jobs and problem lines.

    ``start_time`` is the Unix time of the log's zero (``UnixStartTime``; 0 when absent, so submit times are
    Unix times); ``timezone`` the local zone (``TimeZoneString`` when the system knows it, else the ``TimeZone``
    offset in seconds, else UTC).
    """

    name: str
    header: dict[str, str] = field(default_factory=dict)
    jobs: list[SwfJob] = field(default_factory=list)
    problems: list[SwfProblem] = field(default_factory=list)
    start_time: float = 0.0
    timezone: tzinfo = UTC


class _LineError(Exception):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def read_swf(path: str | Path) -> SwfLog:
    """Parse an SWF file; bad job lines become problems, a bad header time raises FeatureError, OSError if unreadable."""
    path = Path(path)
    log = SwfLog(name=path.stem)
    with path.open(encoding="utf-8", errors="replace") as fh:
        for number, raw in enumerate(fh, start=1):
            text = raw.strip()
            if text.startswith(";"):
                key, sep, value = text[1:].partition(":")
                if sep and key.strip():
                    log.header.setdefault(key.strip(), value.strip())
            elif text:
                try:
                    log.jobs.append(_parse_job(text, number))
                except _LineError as exc:
                    log.problems.append(SwfProblem(number, exc.field, exc.message, text))
    log.start_time = _header_number(path, log.header, "UnixStartTime")
    log.timezone = _zone(log.header.get("TimeZoneString")) or _offset(
        path, _header_number(path, log.header, "TimeZone")
    )
    return log


def _header_number(path: Path, header: dict[str, str], key: str) -> float:
    """A numeric header entry, 0 when absent."""
    text = header.get(key, "0")
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise FeatureError(path, f"header {key} is not a number: {text!r}")
    return number


def _offset(path: Path, seconds: float) -> tzinfo:
    """A fixed-offset zone of ``seconds`` east of UTC; FeatureError when a day or more."""
    try:
        return timezone(timedelta(seconds=seconds))
    except ValueError:
        raise FeatureError(path, f"header TimeZone {seconds:g} s is not an offset of less than a day") from None


def _zone(name: str | None) -> tzinfo | None:
    """The named time zone, or None when absent or unknown to this system."""
    try:
        return ZoneInfo(name) if name else None
    except (ZoneInfoNotFoundError, ValueError):
        return None


def _parse_job(text: str, line: int) -> SwfJob:
    """One job line as an SwfJob; raises _LineError naming the first bad field."""
    tokens = text.split()
    if len(tokens) not in (len(STANDARD_FIELDS), len(STANDARD_FIELDS) + len(EXTENDED_FIELDS)):
        raise _LineError(
            "(line)",
            f"has {len(tokens)} fields; expected {len(STANDARD_FIELDS)} (standard SWF) or "
            f"{len(STANDARD_FIELDS) + len(EXTENDED_FIELDS)} (standard + {', '.join(EXTENDED_FIELDS)})",
        )
    values: dict[str, Any] = {name: _value(name, token) for name, token in zip(STANDARD_FIELDS, tokens)}
    if values["status"] not in STATUSES:
        raise _LineError("status", f"unknown status {values['status']}; expected one of {STATUSES}")
    extended = tokens[len(STANDARD_FIELDS) :]
    if extended:
        values.update(nodes=_nodes(extended[0]), queue_name=extended[1], node_request=extended[2])
    return SwfJob(line=line, **values)


def _value(name: str, token: str) -> int | float:
    """A field's number: finite, >= 0 or -1 (unknown, not for required fields), integral where SWF says so."""
    try:
        number = float(token)
    except ValueError:
        raise _LineError(name, f"expected a number, got {token!r}") from None
    if not math.isfinite(number):
        raise _LineError(name, f"must be a finite number, got {token!r}")
    if number < 0 and (number != UNKNOWN or name in _REQUIRED):
        raise _LineError(name, f"must be >= 0{'' if name in _REQUIRED else ' or -1 (unknown)'}, got {token}")
    if name in _INTEGER_FIELDS:
        if not number.is_integer():
            raise _LineError(name, f"expected an integer, got {token!r}")
        return int(number)
    return number


def _nodes(token: str) -> tuple[int, ...]:
    """Distinct node ids of ``{id,id,...}`` (one entry per allocated CPU), in order of first appearance."""
    if not (token.startswith("{") and token.endswith("}")):
        raise _LineError("cpus", f"expected node ids in braces like {{12,12,13}}, got {token!r}")
    inner = token[1:-1]
    try:
        ids = [int(part) for part in inner.split(",")] if inner else []
    except ValueError:
        raise _LineError("cpus", f"node ids must be integers, got {token!r}") from None
    return tuple(dict.fromkeys(ids))
