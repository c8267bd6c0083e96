"""The profiling wrapper measures a real child process and records failures as failures."""

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from cli.app import app
from data.datagen import write_fasta
from data.profile import profile_command, run_measured
from predictor.catalog import load_catalog
from predictor.settings import BUNDLED_DATA, Settings
from predictor.store import MeasurementStore

BURN = [sys.executable, "-c", "import time\nt=time.process_time()\nwhile time.process_time()-t<0.3: pass"]


def test_cpu_time_and_rss_come_from_the_child():
    usage = run_measured(BURN)
    assert usage.exit_status == 0
    assert usage.cpu_seconds >= 0.25
    assert usage.wall_seconds >= usage.cpu_seconds * 0.9
    assert usage.max_rss_kb > 1000


def test_max_rss_is_the_commands_own_not_this_process_s():
    ballast = bytearray(128 << 20)  # this process holds 128 MiB, touched, while the commands run
    ballast[::4096] = b"x" * len(range(0, len(ballast), 4096))
    sleep = run_measured(["sleep", "0.2"])
    allocating = run_measured([sys.executable, "-c", "b = bytearray(200 << 20); b[::4096] = b'x' * len(b[::4096])"])
    assert ballast[-4096] == ord("x")
    assert (sleep.exit_status, allocating.exit_status) == (0, 0)
    assert 500 < sleep.max_rss_kb < 8_000  # /usr/bin/time puts sleep at about 1.6 MB
    assert 200 * 1024 < allocating.max_rss_kb < 200 * 1024 + 40_000  # 200 MiB and an interpreter


def test_output_goes_where_asked_and_the_command_gets_no_descriptor_of_ours(tmp_path):
    out = (tmp_path / "out.txt").open("w")
    usage = run_measured(["sh", "-c", "echo hello; ls /proc/self/fd >&2"], stdout=out, stderr=subprocess.DEVNULL)
    out.close()
    assert usage.exit_status == 0 and (tmp_path / "out.txt").read_text() == "hello\n"
    listing = tmp_path / "fds.txt"
    with listing.open("w") as fds:
        run_measured(["sh", "-c", "ls /proc/$$/fd"], stdout=fds)
    inherited = {int(n) for n in listing.read_text().split()}
    assert {1}.issubset(inherited) and not inherited & {3, 4, 5}


def test_sleep_costs_wall_not_cpu():
    usage = run_measured([sys.executable, "-c", "import time; time.sleep(0.3)"])
    assert usage.wall_seconds >= 0.3
    assert usage.cpu_seconds < 0.2


def test_exit_status_signal_and_missing_program(tmp_path):
    assert run_measured([sys.executable, "-c", "raise SystemExit(3)"]).exit_status == 3
    assert (
        run_measured([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"]).exit_status
        == 143
    )
    assert run_measured(["/nonexistent/program"], stderr=subprocess.DEVNULL).exit_status == 127
    text = tmp_path / "text"
    text.write_text("not a program")
    assert run_measured([str(text)], stderr=subprocess.DEVNULL).exit_status == 126  # not executable


def test_timeout_kills_the_command():
    usage = run_measured([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.3)
    assert usage.exit_status == 128 + 9
    assert usage.wall_seconds < 5


def test_a_run_stopped_before_it_finished_is_censored_at_its_wall_time():
    timed_out = run_measured([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.3)
    assert timed_out.censored and timed_out.exit_status == 128 + 9 and 0.3 <= timed_out.wall_seconds < 5
    # Another process stops it (as an operator or a batch system's limit would): SIGTERM, then SIGXCPU.
    for name, number in (("TERM", 15), ("XCPU", 24)):
        stopped = run_measured(["bash", "-c", f"(sleep 0.3; kill -{name} $$) & exec sleep 30"])
        assert stopped.censored and stopped.exit_status == 128 + number and 0.3 <= stopped.wall_seconds < 5


def test_finished_failed_and_crashed_runs_are_not_censored():
    assert not run_measured([sys.executable, "-c", "pass"]).censored
    assert not run_measured([sys.executable, "-c", "raise SystemExit(3)"]).censored
    crashed = run_measured([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"])
    assert crashed.exit_status == 128 + 11 and not crashed.censored, (
        "a crash is a failure: it says nothing of the run time"
    )


@pytest.fixture
def catalog():
    return load_catalog(BUNDLED_DATA / "catalog.yaml")


def test_profile_extracts_features_and_records_failure(tmp_path, catalog):
    fasta = write_fasta(tmp_path / "in.fa", n_sequences=5, length_mean=50, alphabet="protein", seed=1)
    ok = profile_command(
        [sys.executable, "-c", "pass"],
        catalog=catalog,
        algorithm="mafft",
        platform="cpu2",
        params={"input": str(fasta), "retree": 1},
    )
    assert ok.succeeded and ok.features["input.sequences"] == 5 and ok.features["retree"] == 1
    assert "load_avg_1m" in ok.context
    failed = profile_command(
        [sys.executable, "-c", "raise SystemExit(1)"],
        catalog=catalog,
        algorithm="mafft",
        platform="cpu2",
        params={"input": str(fasta)},
    )
    assert not failed.succeeded and failed.exit_status == 1


def test_profile_uses_platform_launcher(tmp_path, catalog):
    fasta = write_fasta(tmp_path / "in.fa", n_sequences=2, length_mean=20, alphabet="dna", seed=1)
    m = profile_command(
        [sys.executable, "-c", "import os; assert os.sched_getaffinity(0) == {0}"],
        catalog=catalog,
        algorithm="mafft",
        platform="cpu1",
        params={"input": str(fasta)},
    )
    assert m.succeeded, "cpu1 must confine the command to core 0"
    assert m.context["command"][:3] == ["taskset", "-c", "0"]


def test_a_profiled_run_over_its_timeout_is_stored_censored_and_counted(tmp_path, catalog, store: MeasurementStore):
    fasta = write_fasta(tmp_path / "in.fa", n_sequences=3, length_mean=30, alphabet="protein", seed=1)
    slow = profile_command(
        [sys.executable, "-c", "import time; time.sleep(30)"],
        catalog=catalog,
        algorithm="mafft",
        platform="cpu2",
        params={"input": str(fasta)},
        timeout=0.3,
        run_id="slow",
    )
    quick = profile_command(
        [sys.executable, "-c", "pass"],
        catalog=catalog,
        algorithm="mafft",
        platform="cpu2",
        params={"input": str(fasta)},
        run_id="quick",
    )
    assert slow.censored and slow.exit_status == 137 and slow.wall_seconds >= 0.3 and not quick.censored
    store.add([slow, quick])
    assert store.count(informative_only=True) == 2, "the censored run counts for training beside the finished one"
    stored = {m.run_id: m for m in store.measurements(with_censored=True)}
    assert (
        stored["slow"].censored
        and stored["slow"].wall_seconds == slow.wall_seconds
        and stored["slow"].exit_status == 137
    )


def test_cli_profile_with_a_timeout_stores_the_run_censored(tmp_path, monkeypatch):
    monkeypatch.setenv("PREDICTOR_HOME", str(tmp_path / "home"))
    fasta = write_fasta(tmp_path / "in.fa", n_sequences=3, length_mean=30, alphabet="protein", seed=1)
    result = CliRunner().invoke(
        app,
        [
            "profile",
            "--algorithm",
            "mafft",
            "--platform",
            "cpu2",
            "--param",
            f"input={fasta}",
            "--run-id",
            "cli-slow",
            "--timeout",
            "0.3",
            "--",
            sys.executable,
            "-c",
            "import time; time.sleep(30)",
        ],
    )
    assert result.exit_code == 137, result.output
    assert "stored censored" in result.output
    store = MeasurementStore(Settings().resolved_store_url)
    (stored,) = store.measurements(with_censored=True)
    assert stored.run_id == "cli-slow" and stored.censored and stored.wall_seconds >= 0.3


def test_stderr_can_join_stdout(tmp_path):
    with (tmp_path / "both.txt").open("w") as both:
        run_measured(["sh", "-c", "echo out; echo err >&2"], stdout=both, stderr=subprocess.STDOUT)
    assert (tmp_path / "both.txt").read_text().split() == ["out", "err"]
