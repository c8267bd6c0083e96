"""The profiling wrapper measures a real child process and records failures as failures."""

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


def test_sleep_costs_wall_not_cpu():
    usage = run_measured([sys.executable, "-c", "import time; time.sleep(0.3)"])
    assert usage.wall_seconds >= 0.3
    assert usage.cpu_seconds < 0.2


def test_exit_status_signal_and_missing_program():
    assert run_measured([sys.executable, "-c", "raise SystemExit(3)"]).exit_status == 3
    assert run_measured([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"]).exit_status == 143
    assert run_measured(["/nonexistent/program"]).exit_status == 127


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
