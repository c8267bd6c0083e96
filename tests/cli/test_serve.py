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


LOCAL_PREDICT = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps(sorted(m for m in ("mlflow", "torch", "lightgbm") if m in sys.modules))))
sys.argv = ["predictor", *sys.argv[1:]]
from cli.app import app
app()
"""


def test_a_local_predict_reads_the_aliases_without_mlflow_and_loads_its_algorithms_champions_alone(
    tmp_path: Path,
) -> None:
    """Issue 42: a local predict cost 13 s of CPU; MLflow's import and client were most of its registry time, and every
    pair's champions were loaded for one job's. Not timed (benchmarks/cli_start.py is): what a fresh process loads."""
    import mlflow
    import numpy as np
    from sklearn.linear_model import LinearRegression

    from predictor.champion_source import ChampionSource
    from predictor.settings import Settings

    settings = Settings(home=tmp_path / "home")
    features = ["input.sequences", "input.mean_length"]
    client = mlflow.MlflowClient(
        tracking_uri=settings.resolved_tracking_uri, registry_uri=settings.resolved_tracking_uri
    )
    for algorithm in ("mafft", "clustalo"):
        name = f"runtime-{algorithm}-cpu1"
        client.create_registered_model(name)
        client.create_model_version(name, source=str(tmp_path / name), tags={"features": json.dumps(features)})
        client.set_registered_model_alias(name, "champion", "1")
    (mafft,) = (
        ChampionSource(settings.resolved_tracking_uri, settings.resolved_model_cache)
        .versions([("mafft", "cpu1")])
        .values()
    )
    folder = settings.resolved_model_cache / mafft.name / mafft.folder
    model = LinearRegression().fit(np.array([[40.0, 300.0], [80.0, 300.0], [40.0, 600.0]]), np.array([1.0, 2.0, 2.5]))
    mlflow.sklearn.save_model(model, str(folder / "model"))
    facts = {"algorithm": "mafft", "platform": "cpu1", "target": "time", "name": mafft.name, "version": "1"}
    (folder / "champion.json").write_text(
        json.dumps({**facts, "tags": mafft.tags, "registered_at": None, "fit_seconds": None})
    )
    # clustalo's version 1 is registered but cannot be loaded (no cached folder, no artifacts): a predict of mafft
    # that loaded every pair's champions would fail on it
    env = {**os.environ, "PREDICTOR_HOME": str(settings.resolved_home), "COLUMNS": "200"}
    job = ["predict", "--algorithm", "mafft", "--param", "input=data/samples/family-40x300.fa", "--platform", "cpu1"]
    for _ in range(2):  # the first load pickles the model, the second reads the pickle
        done = subprocess.run(
            [sys.executable, "-c", LOCAL_PREDICT, *job, "--json"], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
    *answer, loaded = done.stdout.strip().splitlines()
    estimate = json.loads("\n".join(answer))["cpu1"]
    assert (estimate["model_name"], estimate["model_version"], estimate["fallback"]) == (
        "runtime-mafft-cpu1",
        "1",
        False,
    )
    assert json.loads(loaded) == []
