"""`predictor serve`, `scheduler` and `predict` as a user meets them: a bad port refused, no estimate is an error."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.app import app
from scheduler.state import Job, JobStatus, State
from scheduler.store import SchedulerStore


@pytest.mark.parametrize("command", ["serve", "scheduler"])
def test_a_port_out_of_range_is_one_error_line_and_serves_nothing(tmp_path: Path, command: str) -> None:
    """Run for real and bounded: before the fix, the command said it served on 99999 and went on listening elsewhere."""
    env = {**os.environ, "PREDICTOR_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-m", "predictor", command, "--port", "99999"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert (
        done.stderr.startswith("error: Invalid value for '--port'")
        and "65535" in done.stderr
        and done.stderr.count("\n") == 1
    )


@pytest.mark.parametrize("command", ["serve", "scheduler"])
def test_a_taken_port_is_one_error_line_before_anything_else(tmp_path: Path, command: str) -> None:
    """Issue 42: `serve` on a taken port said `serving on ...` and the `try: curl` line, loaded every champion, then
    failed on uvicorn's bind error (exit 3). Run for real and bounded; nothing listens but the test's own socket."""
    env = {**os.environ, "PREDICTOR_HOME": str(tmp_path / "home")}
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "predictor", command, "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert done.stderr == (
        f"error: cannot serve on 127.0.0.1:{port}: another process listens there (choose another with --port or "
        "PREDICTOR_API_PORT)\n"
    ), done.stderr
    assert not (tmp_path / "home" / "api-token").exists()  # nothing was done: not even the token made


HEAVY = ("torch", "lightgbm", "mlflow", "sklearn", "fastapi")


def _fails_light(args: list[str], home: Path) -> tuple[str, list[str]]:
    """Run ``predictor *args`` in a fresh interpreter: its standard error, and which heavy libraries it had imported
    when it exited."""
    probe = (
        "import atexit, json, sys; "
        f"atexit.register(lambda: print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))); "
        f"sys.argv = ['predictor', *{args!r}]; from cli.app import app; app()"
    )
    env = {**os.environ, "PREDICTOR_HOME": str(home), "COLUMNS": "200"}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    return done.stderr, json.loads(done.stdout.splitlines()[-1])


def test_a_misspelt_algorithm_or_a_missing_input_is_said_before_the_heavy_imports(tmp_path: Path) -> None:
    """Issue 42: `train --algorithm maft` and `predict` of a missing file were said after MLflow, torch and the models
    had loaded (56 s and 45 s at load 13). Not timed: which libraries a fresh process had loaded when it said so."""
    for args, says in [
        (["train", "--algorithm", "maft"], "error: unknown algorithm 'maft'; known: "),
        (
            ["predict", "--algorithm", "mafft", "--param", f"input={tmp_path / 'nowhere.fa'}"],
            f"error: {tmp_path / 'nowhere.fa'}: no such file",
        ),
        (
            ["predict", "--algorithm", "mafft", "--param", "input=data/samples/family-40x300.fa", "--platform", "gpu9"],
            "error: unknown platform 'gpu9'",
        ),
    ]:
        stderr, heavy = _fails_light(args, tmp_path / "home")
        assert stderr.startswith(says) and stderr.count("\n") == 1, (args, stderr)
        assert heavy == [], (args, heavy)


def test_predict_without_any_model_or_run_fails_with_the_reason(runner: CliRunner) -> None:
    result = runner.invoke(app, ["predict", "--algorithm", "mafft", "--param", "input=data/samples/family-40x300.fa"])
    assert result.exit_code == 2 and result.stdout == "", result.output
    error = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert error == [
        "error: no estimate of mafft: cpu1: no champion model for this algorithm and platform; no measurements to fall "
        "back on; cpu2: no champion model for this algorithm and platform; no measurements to fall back on"
    ]


def test_queue_lists_the_schedulers_waiting_and_running_jobs_from_its_store(
    runner: CliRunner, store, store_url: str, monkeypatch
) -> None:
    monkeypatch.setenv("PREDICTOR_STORE_URL", store_url)
    assert "the scheduler's queue is empty" in runner.invoke(app, ["queue"]).stdout
    state = State()
    for name, status in (("first", JobStatus.DONE), ("second\x1b[2J", JobStatus.PENDING)):
        job = Job(id=name, algorithm="mafft", submit=1_764_000_000.0, priority=3)
        job.status = status
        state.add_job(job)
    SchedulerStore(store.engine).save(state, [], now=1_764_000_001.0)
    result = runner.invoke(app, ["queue"])
    assert result.exit_code == 0, result.output
    assert "second\\x1b[2J" in result.stdout and "pending" in result.stdout and "2025-11-24 16:00:00" in result.stdout
    assert "│ first " not in result.stdout and "\x1b" not in result.stdout
    assert "│ first " in runner.invoke(app, ["queue", "--all"]).stdout
