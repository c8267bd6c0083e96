"""Finished Slurm jobs as measurements: from sacct output and the completion log of a real Slurm, mapped by tag or rule."""

from __future__ import annotations

import gzip
import math
import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from data.ingest import IngestError, IngestReport
from predictor.catalog import Catalog
from predictor.domain import Estimate, Source, Target
from predictor.live import live_metrics
from predictor.memsize import MIB
from predictor.store import MeasurementStore
from predictor.store.job_history import JobHistory
from slurm.accounting import SACCT_COLUMNS
from slurm.ingest import Inputs, ingest_slurm
from slurm.rules import JobFacts, Rule, Rules, map_job
from slurm.submit import advise
from tests.livesrv import eventually
from tests.slurm.conftest import readable
from tests.slurmserver import SlurmCluster

RULES = Rules(partitions={"debug": "cpu-small"})


def _sacct(tmp_path: Path, rows: list[dict[str, str]]) -> Path:
    base = {
        "JobID": "",
        "JobName": "job",
        "State": "COMPLETED",
        "Elapsed": "00:01:00",
        "Timelimit": "00:10:00",
        "ReqCPUS": "1",
        "ReqMem": "1000M",
        "Partition": "debug",
        "Comment": "",
        "ExitCode": "0:0",
        "NodeList": "n1",
        "Start": "2026-03-01T10:00:00",
        "End": "2026-03-01T10:01:00",
        "Submit": "2026-03-01T09:59:00",
        "WorkDir": str(tmp_path),
        "User": "ana",
        "Cluster": "c",
        "Group": "lab",
        "Account": "proj",
        "QOS": "normal",
        "ReqNodes": "1",
        "NNodes": "1",
        "MaxRSS": "",
    }
    lines = ["|".join(SACCT_COLUMNS)] + ["|".join({**base, **row}[c] for c in SACCT_COLUMNS) for row in rows]
    path = tmp_path / "sacct.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_sacct_jobs_become_finished_censored_and_failed_runs(
    tmp_path: Path, store: MeasurementStore, catalog: Catalog, fasta: Path
) -> None:
    tag = f"predictor: algorithm=mafft input={fasta.name}"
    path = _sacct(
        tmp_path,
        [
            {"JobID": "1", "Comment": f"my words {tag} estimate=50 limit=90 model=m version=3"},
            {"JobID": "1.batch", "Comment": tag},
            {"JobID": "2", "State": "TIMEOUT", "Elapsed": "00:10:00", "Comment": tag, "ExitCode": "0:15"},
            {"JobID": "3", "State": "CANCELLED by 0", "Elapsed": "00:00:30", "Comment": tag},
            {"JobID": "4", "State": "FAILED", "ExitCode": "3:0", "Comment": tag},
            {"JobID": "5", "State": "CANCELLED by 0", "Elapsed": "00:00:00", "Start": "None", "Comment": tag},
            {"JobID": "6", "JobName": "somebody-else"},
            {"JobID": "7", "Comment": "predictor: algorithm=nosuch"},
            {"JobID": "8", "State": "RUNNING", "Comment": tag},
        ],
    )
    report = ingest_slurm(path, store, catalog, RULES, file_format="sacct", cluster="c1", inputs=readable(tmp_path))
    assert (report.rows, report.stored, report.duplicates) == (8, 4, 0)
    assert sorted(s.message for s in report.skipped) == sorted(
        ["CANCELLED before it ran", "no rule or predictor: words name its algorithm", "RUNNING: the run did not end"]
    )
    assert [(r.line, r.field) for r in report.rejected] == [(9, "Comment")]
    assert report.rejects_path is not None and "algorithm=nosuch" in report.rejects_path.read_text()
    runs = {m.context["slurm_job"]: m for m in store.measurements(successful_only=False)}
    assert set(runs) == {"1", "2", "3", "4"}
    done, timeout, cancelled, failed = runs["1"], runs["2"], runs["3"], runs["4"]
    assert done.run_id == "slurm-c1-1-20260301T100000" and done.source is Source.IMPORT
    assert (done.algorithm, done.platform, done.machine, done.wall_seconds) == ("mafft", "cpu-small", "n1", 60.0)
    assert done.params == {"input": str(fasta)} and done.features  # read from the job's input, relative to its WorkDir
    assert (done.exit_status, done.censored) == (0, False)
    assert (timeout.censored, timeout.exit_status) == (True, 128 + 15)
    assert (cancelled.censored, cancelled.exit_status) == (False, 2)
    assert (failed.censored, failed.exit_status) == (False, 3)
    live = store.live_window("mafft", "cpu-small", 10)
    assert list(live["run_id"]) == [done.run_id] and float(live["seconds"].iloc[0]) == 50.0
    again = ingest_slurm(path, store, catalog, RULES, file_format="sacct", cluster="c1", inputs=readable(tmp_path))
    assert (again.stored, again.duplicates) == (0, 4)


def test_a_run_killed_for_memory_is_censored_at_least_at_its_request(
    tmp_path: Path, store: MeasurementStore, catalog: Catalog, fasta: Path
) -> None:
    """Issue 31: OUT_OF_MEMORY is a lower bound on time and memory (at least the request it was killed at); a timed-out
    run's MaxRSS is a lower bound too; a finished run's is its peak."""
    tag = f"predictor: algorithm=mafft input={fasta.name}"
    path = _sacct(
        tmp_path,
        [
            {"JobID": "1", "State": "OUT_OF_MEMORY", "ExitCode": "0:125", "ReqMem": "50M", "Comment": tag},
            {"JobID": "1.batch", "MaxRSS": "40000K", "Comment": tag},
            {"JobID": "2", "State": "TIMEOUT", "Comment": tag},
            {"JobID": "2.batch", "MaxRSS": "300M", "Comment": tag},
            {"JobID": "3", "Comment": tag},
            {"JobID": "3.0", "MaxRSS": "2000K", "Comment": tag},
        ],
    )
    report = ingest_slurm(path, store, catalog, RULES, file_format="sacct", cluster="c1", inputs=readable(tmp_path))
    assert (report.stored, report.rejected) == (3, [])
    runs = {m.context["slurm_job"]: m for m in store.measurements(successful_only=False)}
    assert (runs["1"].censored, runs["1"].max_rss_kb, runs["1"].context["state"]) == (True, 50 * 1024, "OUT_OF_MEMORY")
    assert (runs["2"].censored, runs["2"].max_rss_kb) == (True, 300 * 1024)
    assert (runs["3"].censored, runs["3"].max_rss_kb) == (False, 2000)


def test_the_memory_the_plugin_tagged_comes_back_with_the_run_and_is_scored_live(
    tmp_path: Path, store: MeasurementStore, catalog: Catalog, fasta: Path
) -> None:
    """Issue 42: the plugin's tag carries the peak memory and memory limit served at submission beside the time; the
    import keeps them with the run, so memory's live error is measured on Slurm's runs as run time's is."""
    estimate = Estimate(
        platform="cpu-small",
        seconds=50.0,
        limit=90.0,
        model_name="m",
        model_version="3",
        memory=40 * MIB + 0.4,
        memory_limit=60 * MIB,
        memory_model_name="memory-mafft-cpu-small",
        memory_model_version="2",
    )
    facts = JobFacts(comment=f"predictor: algorithm=mafft input={fasta.name}")
    tag = advise(facts, map_job(RULES, facts, catalog), estimate, time_limit=10).comment
    assert "memory=41943041 memory_limit=62914560 memory_model=memory-mafft-cpu-small memory_version=2" in tag
    path = _sacct(
        tmp_path,
        [
            {"JobID": "1", "Comment": tag},
            {"JobID": "1.batch", "MaxRSS": f"{80 * 1024}K", "Comment": tag},  # twice what it was served
            {"JobID": "2", "Comment": f"predictor: algorithm=mafft input={fasta.name} estimate=50 memory=nonsense"},
            {"JobID": "2.batch", "MaxRSS": "1000K"},
        ],
    )
    assert (
        ingest_slurm(path, store, catalog, RULES, file_format="sacct", cluster="c1", inputs=readable(tmp_path)).stored
        == 2
    )
    window = store.live_window("mafft", "cpu-small", 10).set_index("run_id")
    tagged = window.loc["slurm-c1-1-20260301T100000"]
    assert (tagged["memory"], tagged["memory_limit"], tagged["memory_model_version"]) == (41943041, 60 * MIB, "2")
    assert math.isnan(window.loc["slurm-c1-2-20260301T100000", "memory"]), "unusable memory words: no memory"
    memory = live_metrics(window, Target.MEMORY)
    assert (memory["runs"], memory["underestimate_rate"], memory["limit_exceeded"]) == (1.0, 1.0, 1.0)


def test_one_bad_accounting_line_is_set_aside_with_its_reason_and_the_rest_is_stored(
    tmp_path: Path, store: MeasurementStore, catalog: Catalog, fasta: Path
) -> None:
    """Issues 41 and 42: a tag's limit=-5, 400-digit durations and memory sizes and a date of year 1 each set their line
    aside with the field and why (no traceback); the good lines around them are stored."""
    tag = f"predictor: algorithm=mafft input={fasta.name}"
    huge = "9" * 400
    path = _sacct(
        tmp_path,
        [
            {"JobID": "1", "Comment": tag},
            {"JobID": "2", "Comment": f"{tag} estimate=5 limit=-5"},
            {"JobID": "3", "Comment": tag, "Elapsed": huge},
            {"JobID": "4", "Comment": tag, "Timelimit": huge},
            {"JobID": "5", "Comment": tag, "ReqMem": f"{huge}M"},
            {"JobID": "6", "Comment": tag},
            {"JobID": "6.batch", "MaxRSS": f"{huge}K"},
            {"JobID": "7", "Comment": tag, "Start": "0001-01-01T00:00:00", "Submit": "0001-01-01T00:00:00"},
            {"JobID": "8", "Comment": f"{tag} model={'m' * 300} estimate=5"},
            {"JobID": "9", "Comment": tag},
        ],
    )
    report = ingest_slurm(path, store, catalog, RULES, file_format="sacct", cluster="c1", inputs=readable(tmp_path))
    assert {(r.line, r.field) for r in report.rejected} == {
        (3, "Comment"),
        (4, "Elapsed"),
        (5, "Timelimit"),
        (6, "ReqMem"),
        (8, "MaxRSS"),
        (9, "Start"),
        (10, "Comment"),
    }
    reasons = {r.line: r.message for r in report.rejected}
    assert "limit=-5" in reasons[3] and "longer than Slurm's longest" in reasons[4] and "model_name" in reasons[10]
    assert {m.context["slurm_job"] for m in store.measurements(successful_only=False)} == {"1", "6", "9"}
    assert report.rejects_path is not None and "limit=-5" in report.rejects_path.read_text()


def test_impossible_jobs_are_refused_with_a_reason_and_kept_out_of_the_history(
    tmp_path: Path, store: MeasurementStore, catalog: Catalog, fasta: Path
) -> None:
    """Issue 41: an end before its start, an end in year 9999 and a tag's estimate=inf are refused with a reason: no run,
    and no history row (the user's last run is not negative, no job runs for ever)."""
    tag = f"predictor: algorithm=mafft input={fasta.name}"
    path = _sacct(
        tmp_path,
        [
            {"JobID": "1", "Comment": tag, "End": "2026-03-01T08:55:00"},
            {"JobID": "2", "Comment": tag, "End": "9999-12-31T23:59:59"},
            {"JobID": "3", "Comment": f"{tag} estimate=inf"},
            {"JobID": "4", "Comment": tag},
        ],
    )
    report = ingest_slurm(path, store, catalog, RULES, file_format="sacct", cluster="c1", inputs=readable(tmp_path))
    reasons = {r.line: (r.field, r.message) for r in report.rejected}
    assert set(reasons) == {2, 3, 4} and report.stored == 1
    assert reasons[2][0] == "End" and "before its Start" in reasons[2][1]
    assert reasons[3][0] == "End" and "ahead of this machine's clock" in reasons[3][1]
    assert reasons[4][0] == "Comment" and "estimate=inf" in reasons[4][1]
    state = JobHistory(store.engine).user_state("c1", "ana", datetime(2026, 6, 1, tzinfo=UTC))
    assert (state.submitted, state.running, state.finished) == (2, 0, 2)  # jobs 3 (no served estimate) and 4
    assert min(state.recent) >= 0


def test_accounting_reads_only_regular_files_under_the_data_roots_within_a_budget(
    tmp_path: Path, store: MeasurementStore, catalog: Catalog
) -> None:
    """Issue 41: a comment naming a FIFO, a gzip bomb or a file outside the data roots neither blocks nor slows the
    import: each run is rejected saying why, the one naming a plain FASTA under the roots is stored."""
    roots, outside = tmp_path / "data", tmp_path / "outside"
    roots.mkdir()
    outside.mkdir()
    good = roots / "good.fa"
    good.write_text(">a\nACGT\n>b\nACGTACGT\n")
    (outside / "other.fa").write_text(">a\nACGT\n")
    os.mkfifo(roots / "fifo.fa")
    with gzip.open(roots / "bomb.fa.gz", "wb", compresslevel=1) as fh:  # 512 MiB of one sequence in ~1 MB
        fh.write(b">s\n")
        line = b"ACGT" * 16383 + b"\n"
        for _ in range(8192):
            fh.write(line)
    names = ["good.fa", "fifo.fa", "bomb.fa.gz", str(outside / "other.fa")]
    path = _sacct(
        tmp_path,
        [
            {"JobID": str(i), "Comment": f"predictor: algorithm=mafft input={name}", "WorkDir": str(roots)}
            for i, name in enumerate(names, start=1)
        ],
    )
    done: list[object] = []
    worker = threading.Thread(
        target=lambda: done.append(
            ingest_slurm(
                path, store, catalog, RULES, file_format="sacct", cluster="c1", inputs=Inputs((roots,), 1 << 30, 0.05)
            )
        ),
        daemon=True,
    )
    worker.start()
    worker.join(timeout=60)
    if worker.is_alive():  # blocked on the FIFO: let it go, then fail
        fd = os.open(roots / "fifo.fa", os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        worker.join(timeout=60)
        pytest.fail("the import blocked on a FIFO a job's comment names")
    (report,) = done
    assert isinstance(report, IngestReport)
    reasons = {r.line: r.message for r in report.rejected}
    assert report.stored == 1 and set(reasons) == {3, 4, 5}
    assert "no file" in reasons[3]  # a FIFO is no regular file
    assert "time budget" in reasons[4]
    assert "outside the data roots" in reasons[5]


def test_a_file_without_jobs_or_columns_is_one_error(tmp_path: Path, store: MeasurementStore, catalog: Catalog) -> None:
    empty = _sacct(tmp_path, [])
    with pytest.raises(IngestError, match="no jobs"):
        ingest_slurm(empty, store, catalog, RULES, file_format="sacct")
    narrow = tmp_path / "narrow.txt"
    narrow.write_text("JobID|State\n1|COMPLETED\n")
    with pytest.raises(IngestError, match="lacks columns"):
        ingest_slurm(narrow, store, catalog, RULES, file_format="sacct")


@pytest.fixture(scope="module")
def finished_jobs(slurm_cluster: SlurmCluster) -> dict[str, str]:
    """Four real jobs named for the rules, ended COMPLETED, FAILED, CANCELLED (while running) and TIMEOUT."""
    submit = slurm_cluster.submit
    jobs = {
        "COMPLETED": submit("--job-name=align-ok", "--wrap", "sleep 1"),
        "FAILED": submit("--job-name=align-bad", "--wrap", "sleep 1; exit 3"),
        "CANCELLED": submit("--job-name=align-cancel", "--wrap", "sleep 120"),
        "TIMEOUT": submit("--job-name=align-late", "--time=5", "--wrap", "sleep 300"),
    }
    slurm_cluster.wait_state(jobs["CANCELLED"], ("RUNNING",))
    time.sleep(2)  # ran a while (a job cancelled in its first second shows no elapsed time: skipped as never run)
    slurm_cluster.run("scancel", jobs["CANCELLED"])
    slurm_cluster.wait_state(jobs["TIMEOUT"], ("RUNNING",))
    slurm_cluster.run(
        "scontrol", "update", f"JobId={jobs['TIMEOUT']}", "TimeLimit=0"
    )  # times out at the next 30 s check
    assert eventually(lambda: all(j in slurm_cluster.completions() for j in jobs.values()), 90)
    return jobs


def _rules(fasta: Path) -> Rules:
    return Rules(
        partitions={"debug": "cpu-small"}, rules=[Rule(name="align-*", algorithm="mafft", params={"input": str(fasta)})]
    )


def test_a_real_slurms_jobs_are_read_from_sacct_and_the_completion_log_alike(
    slurm_cluster: SlurmCluster,
    finished_jobs: dict[str, str],
    store: MeasurementStore,
    catalog: Catalog,
    fasta: Path,
    tmp_path: Path,
) -> None:
    states = slurm_cluster.completions()
    assert {state: states[job] for state, job in finished_jobs.items()} == {s: s for s in finished_jobs}
    sacct = tmp_path / "sacct.txt"
    ids = ",".join(finished_jobs.values())
    sacct.write_text(slurm_cluster.run("sacct", "-c", "-P", "-X", "-j", ids, "-o", ",".join(SACCT_COLUMNS)).stdout)
    from_sacct = ingest_slurm(
        sacct, store, catalog, _rules(fasta), file_format="sacct", cluster=slurm_cluster.name, inputs=readable(tmp_path)
    )
    assert (from_sacct.stored, len(from_sacct.rejected)) == (4, 0)
    runs = {m.context["slurm_job"]: m for m in store.measurements(successful_only=False)}
    outcome = {state: (runs[job].exit_status, runs[job].censored) for state, job in finished_jobs.items()}
    assert outcome == {
        "COMPLETED": (0, False),
        "FAILED": (3, False),
        "CANCELLED": (2, False),
        "TIMEOUT": (outcome["TIMEOUT"][0], True),
    }
    assert all(m.algorithm == "mafft" and m.machine == slurm_cluster.node and m.features for m in runs.values())
    assert 0 < runs[finished_jobs["COMPLETED"]].wall_seconds < 30
    log = tmp_path / "jobcomp.txt"
    log.write_text(
        "".join(
            line + "\n"
            for line in slurm_cluster.jobcomp.read_text().splitlines()
            if line.split()[0] in {f"JobId={j}" for j in finished_jobs.values()}
        )
    )
    from_log = ingest_slurm(
        log, store, catalog, _rules(fasta), file_format="jobcomp", cluster=slurm_cluster.name, inputs=readable(tmp_path)
    )
    assert (from_log.rows, from_log.stored, from_log.duplicates) == (4, 0, 4)  # the same runs, by the same ids
