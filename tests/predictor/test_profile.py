"""The profiling wrapper measures a real child process and records failures as failures."""

import subprocess
import sys

import pytest

from predictor.catalog import load_catalog
from predictor.datagen import write_fasta
from predictor.profile import profile_command, run_measured
from predictor.settings import BUNDLED_DATA

BURN = [sys.executable, "-c", "import time\nt=time.process_time()\nwhile time.process_time()-t<0.3: pass"]


def test_cpu_time_and_rss_come_from_the_child():
    usage = run_measured(BURN)
    assert usage.exit_status == 0
    assert usage.cpu_seconds >= 0.25
    assert usage.wall_seconds >= usage.cpu_seconds * 0.9
    assert usage.max_rss_kb > 1000


def test_max_rss_is_the_commands_own_not_this_process_s():
    ballast = bytearray(128 << 20)  # this process holds 128 MiB, touched, while the commands run
    ballast[:: 4096] = b"x" * len(range(0, len(ballast), 4096))
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
    assert run_measured([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"]).exit_status == 143
    assert run_measured(["/nonexistent/program"], stderr=subprocess.DEVNULL).exit_status == 127
    text = tmp_path / "text"
    text.write_text("not a program")
    assert run_measured([str(text)], stderr=subprocess.DEVNULL).exit_status == 126  # not executable


def test_timeout_kills_the_command():
    usage = run_measured([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.3)
    assert usage.exit_status == 128 + 9
    assert usage.wall_seconds < 5


@pytest.fixture
def catalog():
    return load_catalog(BUNDLED_DATA / "catalog.yaml")


def test_profile_extracts_features_and_records_failure(tmp_path, catalog):
    fasta = write_fasta(tmp_path / "in.fa", n_sequences=5, length_mean=50, alphabet="protein", seed=1)
    ok = profile_command(
        [sys.executable, "-c", "pass"], catalog=catalog, algorithm="mafft", platform="cpu2",
        params={"input": str(fasta), "retree": 1},
    )
    assert ok.succeeded and ok.features["input.sequences"] == 5 and ok.features["retree"] == 1
    assert "load_avg_1m" in ok.context
    failed = profile_command(
        [sys.executable, "-c", "raise SystemExit(1)"], catalog=catalog, algorithm="mafft", platform="cpu2",
        params={"input": str(fasta)},
    )
    assert not failed.succeeded and failed.exit_status == 1


def test_profile_uses_platform_launcher(tmp_path, catalog):
    fasta = write_fasta(tmp_path / "in.fa", n_sequences=2, length_mean=20, alphabet="dna", seed=1)
    m = profile_command(
        [sys.executable, "-c", "import os; assert os.sched_getaffinity(0) == {0}"],
        catalog=catalog, algorithm="mafft", platform="cpu1", params={"input": str(fasta)},
    )
    assert m.succeeded, "cpu1 must confine the command to core 0"
    assert m.context["command"][:3] == ["taskset", "-c", "0"]


def test_stderr_can_join_stdout(tmp_path):
    with (tmp_path / "both.txt").open("w") as both:
        run_measured(["sh", "-c", "echo out; echo err >&2"], stdout=both, stderr=subprocess.STDOUT)
    assert (tmp_path / "both.txt").read_text().split() == ["out", "err"]
