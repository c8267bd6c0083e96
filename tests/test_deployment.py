"""The deployment of separate processes, as deploy/Procfile starts them, on a real PostgreSQL and MLflow server:
ingest, train, two API workers, the scheduler, observations and a retrain by the worker that the API then serves."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from data.export import export_csv
from predictor.settings import PROJECT_ROOT
from predictor.store import MeasurementStore
from serving.client import wait_until_ready
from tests.livesrv import eventually, free_port
from tests.serving.test_learning_loop import _observations
from tests.trained import TOKEN, Home, measurements

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
PROCFILE = PROJECT_ROOT / "deploy" / "Procfile"
AUTH = {"authorization": f"Bearer {TOKEN}"}


def procfile() -> dict[str, str]:
    """The Procfile's processes: name -> command line."""
    lines = [line for line in PROCFILE.read_text().splitlines() if line.strip() and not line.startswith("#")]
    return {name.strip(): command.strip() for name, command in (line.split(":", 1) for line in lines)}


@contextlib.contextmanager
def started(name: str, env: dict[str, str], logs: Path) -> Iterator[subprocess.Popen]:
    """One Procfile line run by the shell in its own process group, stopped with the group."""
    with (logs / f"{name}.log").open("w") as log:
        proc = subprocess.Popen(
            ["bash", "-c", procfile()[name]],
            env=env,
            cwd=PROJECT_ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "predictor", *args],
        env=env,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def tails(logs: Path, *names: str, lines: int = 40) -> str:
    """The last lines of some processes' logs, for a failure message that says what they were doing."""
    return "\n".join(
        f"--- {name}.log\n" + "\n".join((logs / f"{name}.log").read_text().splitlines()[-lines:]) for name in names
    )


def versions(base: str) -> dict[str, str]:
    return {m["platform"]: m["version"] for m in httpx.get(f"{base}/v1/models", timeout=30).json()}


def test_the_procfile_deployment_runs_the_whole_path(postgres_server, tmp_path):
    assert set(procfile()) == {"mlflow", "api", "scheduler", "worker"}
    store_db, mlflow_db = postgres_server.create_database(), postgres_server.create_database()
    site, inputs = tmp_path / "site", tmp_path / "inputs"
    inputs.mkdir(parents=True)
    ports = {name: free_port() for name in ("mlflow", "api", "scheduler")}
    env = {
        **{
            k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")
        },  # mlflow.set_tracking_uri in earlier tests exports its URI
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": f"{PROJECT_ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "PREDICTOR_HOME": str(site / "home"),
        "PREDICTOR_STORE_URL": postgres_server.url(store_db),
        "MLFLOW_BACKEND_STORE_URI": postgres_server.url(mlflow_db),
        "MLFLOW_PORT": str(ports["mlflow"]),
        "PREDICTOR_MLFLOW_TRACKING_URI": f"http://127.0.0.1:{ports['mlflow']}",
        "PREDICTOR_MLFLOW_ARTIFACT_ROOT": str(site / "mlartifacts"),
        "PREDICTOR_SCHEDULER_EMBEDDED": "false",
        "PREDICTOR_API_PORT": str(ports["api"]),
        "PREDICTOR_API_WORKERS": "2",
        "PREDICTOR_SCHEDULER_PORT": str(ports["scheduler"]),
        "PREDICTOR_API_TOKEN": TOKEN,
        "PREDICTOR_DATA_ROOTS": f'["{inputs}"]',
        "PREDICTOR_CV_FOLDS": "3",
        "PREDICTOR_TRAIN_MODELS": '["linear_log"]',
        "PREDICTOR_API_RELOAD_INTERVAL_S": "1",
        "PREDICTOR_WORKER_INTERVAL_S": "2",
        "PREDICTOR_WORKER_NICE": "0",
        "PREDICTOR_RETRAIN_MIN_NEW_RUNS": "10",
        "PREDICTOR_SCHEDULER_LEASE_S": "5",  # no PROMETHEUS_MULTIPROC_DIR here: mlflow server would read it too
    }
    runs = tmp_path / "runs.csv"
    scratch = MeasurementStore(f"sqlite:///{tmp_path / 'scratch.db'}")
    scratch.migrate()
    scratch.add(measurements(inputs))
    export_csv(scratch, runs)
    scratch.dispose()
    api, scheduler = f"http://127.0.0.1:{ports['api']}", f"http://127.0.0.1:{ports['scheduler']}"
    try:
        with started("mlflow", env, tmp_path) as mlflow:
            wait_until_ready(f"{env['PREDICTOR_MLFLOW_TRACKING_URI']}/health", timeout=180, process=mlflow)
            assert "stored" in cli(env, "ingest", str(runs)).lower()
            cli(env, "train")
            with (
                started("api", env, tmp_path) as api_proc,
                started("scheduler", env, tmp_path) as sched_proc,
                started("worker", env, tmp_path),
            ):
                wait_until_ready(f"{api}/readyz", timeout=300, process=api_proc)  # each worker loads the champions
                wait_until_ready(f"{scheduler}/readyz", timeout=300, process=sched_proc)
                assert versions(api) == {"cpu1": "1", "cpu2": "1"}  # champions from the MLflow server
                job = {"algorithm": "mafft", "params": {"input": "f5.fa"}, "platforms": ["cpu1"]}
                before = httpx.post(f"{api}/v1/predict", json=job, timeout=30).json()["estimates"][0]
                assert before["model_version"] == "1" and before["seconds"] > 0
                assert (
                    httpx.get(f"{api}/v1/jobs", timeout=30).status_code == 503
                )  # the workers send scheduling elsewhere

                assert eventually(lambda: httpx.get(f"{scheduler}/v1/jobs", timeout=30).status_code == 200, timeout=60)
                gained = httpx.post(
                    f"{scheduler}/v1/machines/m1/events",
                    json={"event": "gained", "platform": "cpu1"},
                    headers=AUTH,
                    timeout=30,
                )
                assert gained.status_code == 200, gained.text
                submitted = httpx.post(
                    f"{scheduler}/v1/jobs", json=[{"id": f"j{i}", **job} for i in range(3)], headers=AUTH, timeout=60
                )
                assert submitted.status_code == 200, submitted.text
                for _ in range(3):  # the one slot runs the jobs in turn
                    orders = httpx.get(f"{scheduler}/v1/orders", timeout=30).json()["orders"]
                    running = {o["job"] for o in orders if o["kind"] == "start"} - {
                        j
                        for j in ("j0", "j1", "j2")
                        if httpx.get(f"{scheduler}/v1/jobs/{j}", timeout=30).json()["status"] == "done"
                    }
                    assert len(running) == 1, orders
                    ended = httpx.post(
                        f"{scheduler}/v1/jobs/{running.pop()}/events",
                        json={"event": "ended", "machine": "m1"},
                        headers=AUTH,
                        timeout=30,
                    )
                    assert ended.status_code == 200, ended.text
                assert {httpx.get(f"{scheduler}/v1/jobs/j{i}", timeout=30).json()["status"] for i in range(3)} == {
                    "done"
                }

                posted = httpx.post(
                    f"{api}/v1/observations", json=_observations(Home(None, inputs), 20), headers=AUTH, timeout=120
                )  # type: ignore[arg-type]
                assert posted.status_code == 200 and len(posted.json()["stored"]) == 40, posted.text
                assert eventually(lambda: versions(api) == {"cpu1": "2", "cpu2": "2"}, timeout=400), (
                    f"no retrain reached the API: it serves {versions(api)}\n{tails(tmp_path, 'worker', 'api')}"
                )
                after = httpx.post(f"{api}/v1/predict", json=job, timeout=30).json()["estimates"][0]
                assert (
                    after["model_version"] == "2" and after["seconds"] > before["seconds"] * 1.3
                )  # it learnt the slower runs
                scrape = httpx.get(f"{api}/metrics", timeout=30).text
                assert 'predictor_observations_total{outcome="stored"} 40.0' in scrape
    finally:
        postgres_server.drop_database(store_db)
        postgres_server.drop_database(mlflow_db)
