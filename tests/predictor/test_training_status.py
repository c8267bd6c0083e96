"""The retrain worker's status file as other processes read it: missing, written, and left behind by a worker gone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from predictor.training_status import TrainingStatus, read_status, status_path, write_status


def test_no_file_reads_as_no_worker_and_a_broken_one_too(tmp_path: Path) -> None:
    assert read_status(tmp_path).state == "none"
    status_path(tmp_path).write_text("{not json")
    assert read_status(tmp_path) == TrainingStatus()
    assert TrainingStatus().summary() == "no retrain worker has run on this home"


def test_a_status_whose_worker_is_gone_reads_as_stopped(tmp_path: Path) -> None:
    """A worker killed without a word (SIGKILL, a crash) leaves 'training' behind; readers on its host see it stopped."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    training = TrainingStatus().with_(state="training", target="time", pairs=["mafft/cpu1"], done=3, total=10)
    write_status(tmp_path, training)
    assert read_status(tmp_path).state == "training"  # written by this process, which runs
    write_status(tmp_path, TrainingStatus(**{**training.__dict__, "pid": int(gone.stdout)}))
    stopped = read_status(tmp_path)
    assert stopped.state == "stopped" and stopped.done == 3
    assert stopped.summary() == "retrain worker stopped; no pass finished"
