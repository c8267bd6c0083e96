"""sacct -P output and jobcomp/filetxt lines read as typed jobs: states, durations, exit codes, steps, bad lines."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from slurm.accounting import (
    SACCT_COLUMNS,
    AccountingError,
    SlurmJob,
    jobcomp_fields,
    read_jobcomp,
    read_sacct,
    read_squeue,
)

HEADER = "|".join(SACCT_COLUMNS)


def _row(**cells: str) -> str:
    base = {
        "JobID": "7",
        "JobName": "align",
        "State": "COMPLETED",
        "Elapsed": "00:01:05",
        "Timelimit": "00:10:00",
        "ReqCPUS": "2",
        "ReqMem": "4000M",
        "Partition": "debug",
        "Comment": "",
        "ExitCode": "0:0",
        "NodeList": "n1",
        "Start": "2026-03-01T10:00:00",
        "End": "2026-03-01T10:01:05",
        "Submit": "2026-03-01T09:59:00",
        "WorkDir": "/w",
        "User": "ana",
        "Cluster": "c1",
        "Group": "lab",
        "Account": "proj",
        "QOS": "normal",
        "ReqNodes": "1",
        "NNodes": "1",
        "MaxRSS": "",
    }
    base.update(cells)
    return "|".join(base[c] for c in SACCT_COLUMNS)


def test_sacct_lines_become_jobs_and_steps_are_left_out() -> None:
    lines = [
        HEADER,
        _row(Comment="mine predictor: algorithm=mafft input=/d/x.fa estimate=60"),
        _row(JobID="7.batch"),
        _row(JobID="8", State="CANCELLED by 0", Elapsed="1-02:03:04", Timelimit="UNLIMITED", ExitCode="0:15"),
        _row(JobID="9", Timelimit="5"),
    ]
    parsed = list(read_sacct(lines))
    assert [n for n, _ in parsed] == [2, 3, 4, 5]
    first, step, cancelled, minutes = (job for _, job in parsed)
    assert step is None
    assert isinstance(first, SlurmJob) and isinstance(cancelled, SlurmJob) and isinstance(minutes, SlurmJob)
    assert first.elapsed == 65.0 and first.time_limit == 600.0 and first.req_cpus == 2 and first.req_mem == "4000M"
    assert first.comment.endswith("estimate=60")
    assert first.start == datetime(2026, 3, 1, 10, 0, tzinfo=UTC)  # the machine's local time is UTC here
    assert cancelled.state == "CANCELLED" and cancelled.time_limit is None and cancelled.signal == 15
    assert cancelled.elapsed == 86_400 + 2 * 3600 + 3 * 60 + 4
    assert minutes.time_limit == 300.0  # sacct -c prints raw minutes


def test_a_bad_sacct_line_is_a_problem_of_its_own_and_a_missing_column_refuses_the_file() -> None:
    parsed = list(read_sacct([HEADER, _row(Elapsed="soon"), "1|2", _row(JobID="3")]))
    assert [type(job) for _, job in parsed] == [AccountingError, AccountingError, SlurmJob]
    assert parsed[0][1].field == "Elapsed"
    with pytest.raises(AccountingError, match="lacks columns Comment"):
        list(read_sacct(["JobID|JobName|State|Elapsed|Timelimit|ReqCPUS|ReqMem|Partition", "1|a|COMPLETED|1|1|1|1|p"]))


def test_jobcomp_lines_become_jobs() -> None:
    line = (
        "JobId=12 UserId=root(0) GroupId=root(0) Name=align two JobState=TIMEOUT Partition=debug TimeLimit=1 "
        "StartTime=2026-11-26T12:45:35 EndTime=2026-11-26T12:46:40 NodeList=vm NodeCnt=1 ProcCnt=2 WorkDir=/w "
        "ReservationName= Tres=cpu=2,mem=1000M,node=1 Account= QOS= WcKey= Cluster=unknown "
        "SubmitTime=2026-11-26T12:45:34 EligibleTime=2026-11-26T12:45:34 DerivedExitCode=0:0 ExitCode=0:15"
    )
    assert jobcomp_fields(line)["Name"] == "align two" and jobcomp_fields(line)["ReservationName"] == ""
    ((number, job),) = read_jobcomp([line], first_line=40)
    assert number == 40 and isinstance(job, SlurmJob)
    assert (job.job_id, job.name, job.state, job.elapsed, job.time_limit) == ("12", "align two", "TIMEOUT", 65.0, 60.0)
    assert (job.req_cpus, job.req_mem, job.node_list, job.user, job.signal) == (2, "1000M", "vm", "root", 15)
    ((_, bad),) = read_jobcomp([line.replace("StartTime=2026-11-26T12:45:35", "StartTime=Unknown")])
    assert isinstance(bad, AccountingError) and bad.field == "StartTime"
    ((_, shapeless),) = read_jobcomp(["JobId=13 JobState=FAILED StartTime=Unknown EndTime=2026-11-26T12:46:40"])
    assert isinstance(shapeless, AccountingError) and shapeless.field == "(line)"


def test_a_job_name_cannot_forge_the_fields_of_its_completion_line() -> None:
    """Issue 41: words in a name (``Name=%s`` is written raw) are the name; the id, user and state are the line's own."""
    forged = "sim JobId=4242 UserId=victim(1001) GroupId=victim(1001) Name=x JobState=OUT_OF_MEMORY"
    line = (
        f"JobId=77 UserId=mallory(1002) GroupId=lab(100) Name={forged} JobState=TIMEOUT Partition=debug TimeLimit=1 "
        "StartTime=2026-11-26T12:45:35 EndTime=2026-11-26T12:46:40 NodeList=vm NodeCnt=1 ProcCnt=2 WorkDir=/w "
        "ReservationName= Tres=cpu=2,mem=1000M,node=1 Account= QOS= WcKey= Cluster=unknown "
        "SubmitTime=2026-11-26T12:45:34 EligibleTime=2026-11-26T12:45:34 DerivedExitCode=0:0 ExitCode=0:15"
    )
    ((_, job),) = read_jobcomp([line])
    assert isinstance(job, SlurmJob)
    assert (job.job_id, job.user, job.group, job.state, job.name) == ("77", "mallory", "lab", "TIMEOUT", forged)


def test_the_submit_time_context_is_read_from_sacct_and_the_completion_log() -> None:
    """Issue 29: user, group, account, QOS, nodes, memory in MB per node and the array task, as the history keeps them."""
    lines = [
        HEADER,
        _row(JobID="40_2", ReqMem="2G", ReqNodes="3"),
        _row(JobID="8", ReqMem="500Mc", ReqNodes="", NNodes="2"),
    ]
    (_, first), (_, per_cpu) = read_sacct(lines)
    assert isinstance(first, SlurmJob) and isinstance(per_cpu, SlurmJob)
    assert (first.user, first.group, first.account, first.qos, first.req_nodes) == ("ana", "lab", "proj", "normal", 3)
    assert (first.req_mem_mb, first.array_job, first.array_task) == (2048, "40", "2")
    assert (per_cpu.req_mem_mb, per_cpu.req_nodes, per_cpu.array_job) == (
        1000,
        2,
        None,
    )  # 500 MB per CPU x 2 CPUs; allocated nodes
    line = (
        "JobId=5 UserId=bo(1001) GroupId=lab(100) Name=x JobState=COMPLETED Partition=debug TimeLimit=5 "
        "StartTime=2026-11-26T12:45:35 EndTime=2026-11-26T12:46:40 NodeList=n[1-2] NodeCnt=2 ProcCnt=4 WorkDir=/w "
        "ReservationName= Tres=cpu=4,mem=1000M,node=2 Account=proj QOS= WcKey= Cluster=c SubmitTime=2026-11-26T12:45:34 "
        "EligibleTime=2026-11-26T12:45:34 DerivedExitCode=0:0 ExitCode=0:0"
    )
    ((_, job),) = read_jobcomp([line])
    assert isinstance(job, SlurmJob)
    assert (job.user, job.group, job.account, job.qos, job.req_nodes, job.req_mem_mb) == (
        "bo",
        "lab",
        "proj",
        None,
        2,
        1000,
    )


def test_squeue_lines_become_waiting_and_running_jobs() -> None:
    """Issue 29: the queue as its users' history: a pending job has no start (squeue shows its expected one), a running
    one has; a line that cannot be read is left out."""
    text = (
        "41|PENDING|ana|lab|proj|debug|normal|1:00:00|4|1|2026-11-26T12:45:34|2026-11-26T13:00:00|/w|name | with bar\n"
        "42|RUNNING|bo|lab|(null)|debug|normal|UNLIMITED|2|1|2026-11-26T12:40:00|2026-11-26T12:41:00|/w|x\n"
        "43|RUNNING|bo|lab|proj|debug|normal|soon|2|1|2026-11-26T12:40:00|2026-11-26T12:41:00|/w|bad limit\n"
    )
    pending, running = read_squeue(text)
    assert (pending.job_id, pending.state, pending.user, pending.name, pending.time_limit, pending.req_cpus) == (
        "41",
        "PENDING",
        "ana",
        "name | with bar",
        3600.0,
        4,
    )
    assert (
        pending.start is None
        and pending.submit == datetime(2026, 11, 26, 12, 45, 34, tzinfo=UTC)
        and pending.end is None
    )
    assert (running.state, running.start, running.time_limit, running.account) == (
        "RUNNING",
        datetime(2026, 11, 26, 12, 41, tzinfo=UTC),
        None,
        None,
    )


def test_a_jobs_peak_memory_is_the_largest_maxrss_of_its_steps() -> None:
    """Issue 31: sacct writes MaxRSS on step lines only (without -X); the job line gets the largest, in KiB."""
    lines = [
        HEADER,
        _row(JobID="7", State="OUT_OF_MEMORY", ExitCode="0:125"),
        _row(JobID="7.batch", MaxRSS="51200K"),
        _row(JobID="7.0", MaxRSS="1.5G"),
        _row(JobID="8"),
        _row(JobID="8.batch", MaxRSS=""),
        _row(JobID="9.batch", MaxRSS="lots"),
    ]
    parsed = dict(read_sacct(lines))
    oom, plain, bad = parsed[2], parsed[5], parsed[7]
    assert isinstance(oom, SlurmJob) and oom.state == "OUT_OF_MEMORY" and oom.max_rss_kb == 1536 * 1024
    assert isinstance(plain, SlurmJob) and plain.max_rss_kb is None  # no step said
    assert isinstance(bad, AccountingError) and bad.field == "MaxRSS" and "'lots'" in bad.message
    assert parsed[3] is None and parsed[4] is None  # the steps are no jobs
