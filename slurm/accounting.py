"""Finished Slurm jobs from ``sacct -P`` output or the ``jobcomp/filetxt`` completion log, as typed records.

``sacct`` columns (``sacct -P -o <columns>``; ``-c`` reads the completion log instead of the database): the
required :data:`SACCT_REQUIRED` and any of :data:`SACCT_OPTIONAL`::

    sacct -P -o JobID,JobName,State,Elapsed,Timelimit,ReqCPUS,ReqMem,Partition,Comment,ExitCode,NodeList,Start,End,Submit,WorkDir,User,Cluster,Group,Account,QOS,ReqNodes,NNodes,MaxRSS

A job is its allocation line; its steps (``123.batch``, ``123.0``) are not jobs, but Slurm writes ``MaxRSS`` (the
largest resident set of a step's tasks) on them only, so a job's ``max_rss_kb`` is the largest of its steps' (give
``sacct`` without ``-X`` to have them). ``Timelimit`` may be raw minutes (``sacct -c``) or a duration, ``State`` may
read ``CANCELLED by 0``. The ``jobcomp/filetxt`` log has one job per line, its ``Key=Value`` fields in the fixed order
Slurm writes them (:data:`JOBCOMP_LINE`: ``JobId=5 UserId=ana(1001) GroupId=... Name=x JobState=TIMEOUT ...
ExitCode=0:15``), read by that order: the job's name is free text that may hold words such as ``JobId=4242``, so the
id, user and group are read from the line's start, before the name, and the fields after it from their places after
the name (a line in any other shape is refused). Slurm 22.05 does not write the comment there, so a completion read
from it carries none unless the caller adds it. ``ReqMem`` (the
log's ``mem=`` in ``Tres``, the job's whole memory) is read as megabytes, a per-CPU amount (``c``) times the CPUs.
The completion log has no ``MaxRSS``, and neither has ``sacct -c``: without slurmdbd a job's peak memory is unknown
(but for a job killed ``OUT_OF_MEMORY``, whose peak reached its request).
Times without a zone are the machine's local time, as Slurm prints them.

A line that cannot be a job Slurm ran is refused with its field and why (never a traceback, never stored): a duration
longer than Slurm's longest, a count or memory size no machine has, a time before 1970 or more than a day ahead of
this machine's clock (``9999-12-31`` would keep a job running in its user's history for ever), an end before its
start.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from predictor.memsize import MIB, MemorySizeError, parse_slurm_memory
from predictor.walltime import parse_walltime

SACCT_REQUIRED = ("JobID", "JobName", "State", "Elapsed", "Timelimit", "ReqCPUS", "ReqMem", "Partition", "Comment")
SACCT_OPTIONAL = (
    "ExitCode",
    "NodeList",
    "Start",
    "End",
    "Submit",
    "WorkDir",
    "User",
    "Cluster",
    "Group",
    "Account",
    "QOS",
    "ReqNodes",
    "NNodes",
    "MaxRSS",
)
SACCT_COLUMNS = SACCT_REQUIRED + SACCT_OPTIONAL
FINISHED = frozenset({"COMPLETED"})
STOPPED = frozenset({"TIMEOUT", "OUT_OF_MEMORY", "PREEMPTED", "DEADLINE"})  # the system ended the run before it was
# done (a limit, a preemption): censored, its time and memory lower bounds
FAILED = frozenset({"FAILED", "NODE_FAIL", "BOOT_FAIL", "CANCELLED"})
# states of a job that ended; any other (PENDING, RUNNING, REQUEUED, ...) did not
ENDED = FINISHED | STOPPED | FAILED
# waiting or running: squeue's states
QUEUED = frozenset({"PENDING", "RUNNING", "SUSPENDED", "CONFIGURING", "REQUEUED"})
SQUEUE_FIELDS = (
    "id",
    "state",
    "user",
    "group",
    "account",
    "partition",
    "qos",
    "limit",
    "cpus",
    "nodes",
    "submit",
    "start",
    "work_dir",
    "name",
)
# the fields above, the name last (it may hold a '|')
SQUEUE_FORMAT = "%i|%T|%u|%g|%a|%P|%q|%l|%C|%D|%V|%S|%Z|%j"
JOBCOMP_LINE = re.compile(
    r"JobId=(?P<JobId>\d+) UserId=(?P<UserId>[^\s()]*)\((?P<Uid>\d+)\) GroupId=(?P<GroupId>[^\s()]*)\((?P<Gid>\d+)\) "
    r"Name=(?P<Name>(?s:.*)) JobState=(?P<JobState>[A-Z_]+) Partition=(?P<Partition>\S*) TimeLimit=(?P<TimeLimit>\S*) "
    r"StartTime=(?P<StartTime>\S*) EndTime=(?P<EndTime>\S*) NodeList=(?P<NodeList>\S*) NodeCnt=(?P<NodeCnt>\d*) "
    r"ProcCnt=(?P<ProcCnt>\d*) WorkDir=(?P<WorkDir>(?s:.*?)) ReservationName=(?P<ReservationName>\S*) Tres=(?P<Tres>\S*) "
    r"Account=(?P<Account>\S*) QOS=(?P<QOS>\S*) WcKey=(?P<WcKey>\S*) Cluster=(?P<Cluster>\S*) "
    r"SubmitTime=(?P<SubmitTime>\S*) EligibleTime=(?P<EligibleTime>\S*)"
    r"(?: ArrayJobId=(?P<ArrayJobId>\d+) ArrayTaskId=(?P<ArrayTaskId>\d+))?"
    r"(?: HetJobId=(?P<HetJobId>\d+) HetJobOffset=(?P<HetJobOffset>\d+))?"
    r" DerivedExitCode=(?P<DerivedExitCode>\S*) ExitCode=(?P<ExitCode>\S*)\s*"
)
"""A ``jobcomp/filetxt`` record as Slurm 22.05 writes it (``jobcomp_filetxt.c``): every field in its place. The name is
the one free text before the state; read greedily, it ends at the record's last `` JobState=`` that the fixed fields
follow, so words in a name can never stand for the fields before it (the id, the user) nor after it. Slurm writes the
name and the working directory raw, line breaks included: such a record spans lines (see :func:`read_jobcomp`)."""
_JOBCOMP_ID = re.compile(r"JobId=(\d+) ")
# characters of one accounting line: a longer one is refused unread
MAX_LINE = 65_536
# Slurm keeps CPUs and nodes in 32 bits (NO_VAL and INFINITE above)
MAX_COUNT = 2**32 - 3
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)  # Slurm keeps times as Unix seconds
# how far past this machine's clock a time may lie (the cluster's clock may run ahead)
CLOCK_SKEW = timedelta(days=1)
_MEMORY = re.compile(r"(?:^|,)mem=([^,]+)")


class AccountingError(ValueError):
    """One line that cannot be read, with its field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field, self.message = field, message


@dataclass(frozen=True)
class SlurmJob:
    """One finished (or ended) run of a Slurm job as accounting reports it; times in UTC, durations in seconds."""

    job_id: str
    name: str
    # the first word: COMPLETED, FAILED, TIMEOUT, CANCELLED, ...
    state: str
    elapsed: float
    time_limit: float | None
    partition: str | None
    comment: str = ""
    req_cpus: int | None = None
    req_mem: str | None = None
    exit_code: int = 0
    signal: int = 0
    node_list: str | None = None
    start: datetime | None = None
    end: datetime | None = None
    submit: datetime | None = None
    work_dir: str | None = None
    user: str | None = None
    group: str | None = None
    account: str | None = None
    qos: str | None = None
    req_nodes: int | None = None
    # the array's job id and this task's index, for an array's task (sacct's JobID
    array_job: str | None = None
    # 40_2, the completion log's ArrayJobId and ArrayTaskId)
    array_task: str | None = None
    # the largest resident set of its steps' tasks (sacct's MaxRSS), KiB; None: unknown
    max_rss_kb: int | None = None

    @property
    def req_mem_mb(self) -> int | None:
        """The memory asked for in MB (a per-CPU amount times the CPUs); None when unknown."""
        try:
            return round(parse_slurm_memory(self.req_mem or "", cpus=self.req_cpus or 1) / MIB)
        except MemorySizeError:
            return None

    def with_comment(self, comment: str) -> SlurmJob:
        return replace(self, comment=comment)


# a line number and its job, its problem, or None (a step)
Parsed = tuple[int, "SlurmJob | AccountingError | None"]


def read_sacct(lines: Iterable[str]) -> Iterator[Parsed]:
    """Each data line of ``sacct -P`` output (header first) as a job, a problem, or None for a job step, read as they
    come (a job is given once the line after its steps is read: sacct prints a job's steps right after it).

    AccountingError (line 1) when the header lacks a required column.
    """
    numbered = enumerate(lines, start=1)
    header: list[str] = []
    for _number, line in numbered:
        if line.strip():
            header = line.rstrip("\r\n").split("|")
            break
    missing = [c for c in SACCT_REQUIRED if c not in header]
    if not header or missing:
        raise AccountingError(
            "header",
            f"sacct output lacks columns {', '.join(missing or SACCT_REQUIRED)}; run sacct -P -X -o {','.join(SACCT_COLUMNS)}",
        )
    # the last job read and the lines after it, given once its steps are read
    held: list[Parsed] = []
    step_rss: int | None = None  # the largest MaxRSS of its steps, KiB
    for number, line in numbered:
        if not line.strip():
            continue
        cells = line.rstrip("\r\n").split("|")
        if len(cells) != len(header):
            problem = f"has {len(cells)} fields but the header has {len(header)} (a '|' in a field?)"
            held.append((number, AccountingError("(row)", problem)))
            continue
        row = dict(zip(header, cells, strict=True))
        job_id, step, _ = row["JobID"].partition(".")
        if step:
            try:
                rss = _max_rss(row.get("MaxRSS", ""))
            except AccountingError as exc:
                held.append((number, exc))
                continue
            job = held[0][1] if held else None
            if isinstance(job, SlurmJob) and job.job_id == job_id and rss is not None:
                step_rss = max(rss, step_rss or 0)
            held.append((number, None))
            continue
        yield from _with_steps(held, step_rss)
        held, step_rss = [(number, _parsed(_sacct_job, row))], None
    yield from _with_steps(held, step_rss)


def _with_steps(held: list[Parsed], step_rss: int | None) -> list[Parsed]:
    """A job read (the first of ``held``) with its steps' largest MaxRSS, and the lines after it, in order."""
    if held and isinstance(job := held[0][1], SlurmJob) and step_rss is not None:
        held = [(held[0][0], replace(job, max_rss_kb=max(step_rss, job.max_rss_kb or 0))), *held[1:]]
    return held


def read_squeue(text: str) -> list[SlurmJob]:
    """The jobs of ``squeue -h --format=`` :data:`SQUEUE_FORMAT` output: waiting and running ones, as they stand (no end;
    a start only once running). A line that cannot be read is left out: the queue is read again at the next pass."""
    out = []
    for line in text.splitlines():
        cells = line.split("|", len(SQUEUE_FIELDS) - 1)
        if len(cells) == len(SQUEUE_FIELDS):
            row = dict(zip(SQUEUE_FIELDS, cells, strict=True))
            if not isinstance(job := _parsed(_squeue_job, row), AccountingError):
                out.append(job)
    return out


def read_jobcomp(
    lines: Sequence[str], first_line: int = 1, breaks: Mapping[str, int] | None = None
) -> Iterator[Parsed]:
    """Each record of a ``jobcomp/filetxt`` log as a job or a problem (``first_line``: the number of the first given).

    A record is one line, but for a job of ``breaks`` (job id -> the line breaks its name and working directory hold,
    as slurmctld tells them): its line and as many after it, read as one record. Without it such a record's lines are
    read one by one, and a line made of a name's end can claim any job's id and user: the caller confirms the jobs.
    """
    index = 0
    while index < len(lines):
        number, line = first_line + index, lines[index]
        found = _JOBCOMP_ID.match(line)
        span = 1 + (breaks or {}).get(found.group(1), 0) if found else 1
        index += span
        if span > 1:
            line = "\n".join(lines[index - span : index])
        if line.strip():
            try:
                fields = jobcomp_fields(line)
            except AccountingError as exc:
                yield number, exc
                continue
            yield number, _parsed(_jobcomp_job, fields)


def jobcomp_id(line: str) -> str | None:
    """The job id a completion line starts with (None: it starts with none, e.g. the rest of a name's line break)."""
    found = _JOBCOMP_ID.match(line)
    return found.group(1) if found else None


def jobcomp_fields(line: str) -> dict[str, str]:
    """A completion line's fields by :data:`JOBCOMP_LINE` (absent optional ones left out); AccountingError for a line
    in any other shape."""
    line = line.rstrip("\r\n")
    if len(line) > MAX_LINE:
        raise AccountingError("(line)", f"{len(line)} characters, over {MAX_LINE}: not a completion line")
    found = JOBCOMP_LINE.fullmatch(line)
    if found is None:
        raise AccountingError(
            "(line)",
            "not a jobcomp/filetxt line: expected JobId=, UserId=, GroupId=, Name=, JobState=, ... ExitCode= in Slurm's order",
        )
    return {key: value.strip() for key, value in found.groupdict().items() if value is not None}


def _parsed(read: Callable[[dict[str, str]], SlurmJob], fields: dict[str, str]) -> SlurmJob | AccountingError:
    """The job ``read`` makes of a line's fields, or the problem it found."""
    try:
        return read(fields)
    except AccountingError as exc:
        return exc


def _sacct_job(row: dict[str, str]) -> SlurmJob:
    code, signal = _exit(row.get("ExitCode", "0:0"))
    array_job, _, array_task = row["JobID"].partition("_")  # an array's task: <array job>_<index>
    array_job = array_job if array_task else ""
    job = SlurmJob(
        job_id=_required(row, "JobID"),
        name=row["JobName"],
        state=_state(row["State"]),
        elapsed=_required_duration("Elapsed", row["Elapsed"]),
        time_limit=_duration("Timelimit", row["Timelimit"]),
        partition=row["Partition"] or None,
        comment=row["Comment"],
        req_cpus=_count("ReqCPUS", row["ReqCPUS"]),
        req_mem=row["ReqMem"] or None,
        exit_code=code,
        signal=signal,
        node_list=_nodes(row.get("NodeList", "")),
        start=_time("Start", row.get("Start", "")),
        end=_time("End", row.get("End", "")),
        submit=_time("Submit", row.get("Submit", "")),
        work_dir=row.get("WorkDir") or None,
        user=row.get("User") or None,
        group=row.get("Group") or None,
        account=row.get("Account") or None,
        qos=row.get("QOS") or None,
        req_nodes=_count("ReqNodes", row.get("ReqNodes", "")) or _count("NNodes", row.get("NNodes", "")),
        array_job=array_job or None,
        array_task=array_task or None,
        max_rss_kb=_max_rss(row.get("MaxRSS", "")),
    )
    return _possible(job, "Start", "End")


def _max_rss(text: str) -> int | None:
    """sacct's MaxRSS (``123456K``, ``1.5G``) in KiB; None when empty."""
    if not text.strip():
        return None
    try:
        return parse_slurm_memory(text) // 1024
    except MemorySizeError as exc:
        raise AccountingError("MaxRSS", str(exc)) from None


def _squeue_job(row: dict[str, str]) -> SlurmJob:
    state = _state(row["state"])
    running = state not in ("PENDING", "REQUEUED")
    return SlurmJob(
        job_id=_required(row, "id"),
        name=row["name"],
        state=state,
        elapsed=0.0,
        time_limit=_duration("limit", row["limit"]),
        partition=_text(row["partition"]),
        req_cpus=_count("cpus", row["cpus"]),
        req_nodes=_count("nodes", row["nodes"]),
        start=_time("start", row["start"]) if running else None,
        submit=_time("submit", row["submit"]),
        work_dir=_text(row["work_dir"]),
        user=_text(row["user"]),
        group=_text(row["group"]),
        account=_text(row["account"]),
        qos=_text(row["qos"]),
    )


def _text(value: str) -> str | None:
    """squeue's text field; None for an empty one (``(null)``)."""
    return None if value in ("", "(null)") else value


def _jobcomp_job(f: dict[str, str]) -> SlurmJob:
    start, end = _time("StartTime", f.get("StartTime", "")), _time("EndTime", f.get("EndTime", ""))
    if start is None or end is None:
        raise AccountingError("StartTime", "a completion line needs StartTime and EndTime")
    code, signal = _exit(f.get("ExitCode", "0:0"))
    memory = _MEMORY.search(f.get("Tres", ""))
    job = SlurmJob(
        job_id=_required(f, "JobId"),
        name=f.get("Name", ""),
        state=_state(_required(f, "JobState")),
        elapsed=max((end - start).total_seconds(), 0.0),
        time_limit=_duration("TimeLimit", f.get("TimeLimit", "")),
        partition=f.get("Partition") or None,
        req_cpus=_count("ProcCnt", f.get("ProcCnt", "")),
        req_mem=memory.group(1) if memory else None,
        exit_code=code,
        signal=signal,
        node_list=_nodes(f.get("NodeList", "")),
        start=start,
        end=end,
        submit=_time("SubmitTime", f.get("SubmitTime", "")),
        work_dir=f.get("WorkDir") or None,
        user=_name(f.get("UserId", "")),
        group=_name(f.get("GroupId", "")),
        account=f.get("Account") or None,
        qos=f.get("QOS") or None,
        req_nodes=_count("NodeCnt", f.get("NodeCnt", "")),
        array_job=_array(f.get("ArrayJobId", "")),
        array_task=_array(f.get("ArrayTaskId", "")),
    )
    return _possible(job, "StartTime", "EndTime")


def _possible(job: SlurmJob, start: str, end: str) -> SlurmJob:
    """``job``, unless it ended before it started or asked for a memory no machine has (AccountingError naming the
    field)."""
    if job.start is not None and job.end is not None and job.end < job.start:
        raise AccountingError(
            end, f"{job.end.isoformat()} is before its {start} {job.start.isoformat()}: no run ends so"
        )
    if job.req_mem:
        try:
            parse_slurm_memory(job.req_mem, cpus=job.req_cpus or 1)
        except MemorySizeError as exc:
            raise AccountingError("ReqMem", str(exc)) from None
    return job


def _required(row: dict[str, str], key: str) -> str:
    value = row.get(key, "").strip()
    if not value:
        raise AccountingError(key, "missing")
    return value


def _state(text: str) -> str:
    """``CANCELLED by 0`` -> ``CANCELLED``; ``CANCELLED+`` (sacct's truncation mark) -> ``CANCELLED``."""
    words = text.split()
    if not words:
        raise AccountingError("State", "missing")
    return words[0].rstrip("+").upper()


def _duration(field: str, text: str) -> float | None:
    try:
        return parse_walltime(text)
    except ValueError as exc:  # too many digits for an int included
        raise AccountingError(field, str(exc)[:200]) from None


def _required_duration(field: str, text: str) -> float:
    seconds = _duration(field, text)
    if seconds is None:
        raise AccountingError(field, f"missing or unlimited: {text!r}")
    return seconds


def _count(field: str, text: str) -> int | None:
    text = text.strip()
    if not text:
        return None
    if not text.isdigit():
        raise AccountingError(field, f"expected a whole number, got {text[:40]!r}")
    if len(text) > 10 or int(text) > MAX_COUNT:
        raise AccountingError(field, f"{text[:40]!r} is over {MAX_COUNT}, the most Slurm counts")
    return int(text)


def _name(text: str) -> str | None:
    """``root(0)`` -> ``root``: the name the completion log gives beside the id."""
    return text.split("(")[0].strip() or None


def _array(text: str) -> str | None:
    """An array's job id or task index from the completion log; None for a job that is no array's task (empty, 0, or
    ``NO_VAL``)."""
    text = text.strip()
    return None if not text or text in ("0", "4294967294", "N/A", "None") else text


def _exit(text: str) -> tuple[int, int]:
    """``code:signal`` as two integers (0, 0 when absent)."""
    code, _, signal = text.strip().partition(":")
    try:
        return int(code or 0), int(signal or 0)
    except ValueError:
        raise AccountingError("ExitCode", f"expected code:signal, got {text!r}") from None


def _nodes(text: str) -> str | None:
    text = text.strip()
    return None if not text or text in ("None assigned", "(null)") else text


def _time(field: str, text: str) -> datetime | None:
    """A Slurm time (local, ISO without zone) in UTC; None for ``Unknown``, ``None`` or empty."""
    text = text.strip()
    if not text or text in ("Unknown", "None", "N/A"):
        return None
    try:
        value = datetime.fromisoformat(text).astimezone(UTC)
    # year 1 in a zone east of UTC is year 0 in UTC
    except (ValueError, OverflowError):
        raise AccountingError(field, f"not a time: {text[:40]!r}") from None
    if value < EPOCH:
        raise AccountingError(field, f"{text} is before 1970: not a time Slurm keeps")
    if value > datetime.now(UTC) + CLOCK_SKEW:
        raise AccountingError(field, f"{text} is more than a day ahead of this machine's clock: not a time that was")
    return value
