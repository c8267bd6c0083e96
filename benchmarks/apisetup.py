"""Shared by the API benchmarks: a trained home from the bundled dataset, and servers started on 127.0.0.1."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from serving.client import wait_until_ready

ROOT = Path(__file__).resolve().parent.parent
DATASETS = sorted((ROOT / "data" / "measurements").glob("*.csv"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def home_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a service whose PREDICTOR_HOME is ``home``."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"  # mlflow runs `uvicorn` from PATH
    return {
        **os.environ,
        "PATH": path,
        "PREDICTOR_HOME": str(home),
        "MLFLOW_TRACKING_URI": f"sqlite:///{home / 'mlflow.db'}",
        **extra,
    }


def cli(home: Path, *args: str, **settings: str) -> None:
    """Run ``predictor ARGS`` for ``home`` with extra PREDICTOR_* settings; fail loudly."""
    env = home_env(home, **{f"PREDICTOR_{k.upper()}": v for k, v in settings.items()})
    done = subprocess.run([sys.executable, "-m", "predictor", *args], env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"predictor {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")


def trained_home(home: Path, algorithm: str, model: str, folds: int = 5) -> Path:
    """``home`` with the bundled measurements ingested and a ``model`` champion of ``algorithm`` (trained once)."""
    marker = home / f".trained-{algorithm}-{model}"
    if not marker.exists():
        if not DATASETS:
            raise SystemExit("no bundled dataset under data/measurements; nothing to train the benchmark's champion on")
        home.mkdir(parents=True, exist_ok=True)
        cli(home, "ingest", *map(str, DATASETS))
        cli(home, "train", "--algorithm", algorithm, "--model", model, cv_folds=str(folds))
        marker.touch()
    return home


def champion_of_kind(home: Path, algorithm: str, model: str) -> None:
    """Point each platform's ``champion`` alias at the newest version trained as ``model`` (the soak moves it)."""
    from predictor.registry import CHAMPION_ALIAS, registry_client

    client = registry_client(f"sqlite:///{home / 'mlflow.db'}")
    for registered in client.search_registered_models(filter_string=f"name LIKE 'runtime-{algorithm}-%'"):
        versions = client.search_model_versions(f"name = '{registered.name}'")
        chosen = max((v for v in versions if v.tags.get("model_kind") == model), key=lambda v: int(v.version))
        client.set_registered_model_alias(registered.name, CHAMPION_ALIAS, chosen.version)


@contextlib.contextmanager
def server(command: list[str], env: dict[str, str], ready_path: str, port: int, log: Path) -> Iterator[tuple[str, int]]:
    """Start a server process listening on 127.0.0.1:``port``; yields (base URL, pid) and stops it after."""
    with log.open("w") as out:
        proc = subprocess.Popen(
            command, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_until_ready(base + ready_path, process=proc)
            yield base, proc.pid
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def ours(
    home: Path, log: Path, environ: dict[str, str] | None = None, **settings: str
) -> contextlib.AbstractContextManager[tuple[str, int]]:
    """``predictor serve`` over ``home`` (one process), with extra environment and PREDICTOR_* settings."""
    port = free_port()
    env = home_env(home, **(environ or {}), **{f"PREDICTOR_{k.upper()}": v for k, v in settings.items()})
    return server([sys.executable, "-m", "predictor", "serve", "--port", str(port)], env, "/readyz", port, log)


def mlflow_scoring(home: Path, model_uri: str, log: Path) -> contextlib.AbstractContextManager[tuple[str, int]]:
    """``mlflow models serve`` of ``model_uri`` from ``home``'s registry, local environment, default (one) worker."""
    port = free_port()
    mlflow = str(Path(sys.executable).with_name("mlflow"))
    command = [mlflow, "models", "serve", "-m", model_uri, "--env-manager", "local", "-p", str(port), "-h", "127.0.0.1"]
    return server(command, home_env(home), "/ping", port, log)


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of a process and all its descendants (from /proc)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for p in [pid, *_descendants(pid)]:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def rss_kb(pid: int) -> int:
    """Resident set size of a process and all its descendants, in KiB (from /proc)."""
    total = 0
    for p in [pid, *_descendants(pid)]:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total


def threads(pid: int) -> int:
    """Threads of a process (from /proc), 0 when it is gone."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


def _descendants(pid: int) -> list[int]:
    out = []
    with contextlib.suppress(OSError):
        for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
            out += [int(child), *_descendants(int(child))]
    return out
