"""A real Ray cluster on this machine, for tests (required in CI, where `make test` installs the extra) and benchmarks.

:func:`local_cluster` starts a head and worker nodes on 127.0.0.1 in a temp folder, each node's processes in a
process group of their own so stopping it stops exactly them (`ray stop` would stop every Ray on the machine).
Dashboard and usage statistics are off; nothing leaves the machine. A site starts its cluster with Ray's own
``ray start`` on each node; ``benchmarks/train_scale.py`` uses this one, as other benchmarks use tests' servers.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from predictor.settings import PROJECT_ROOT
from scheduler.processes import group_alive
from tests import tiers
from tests.required import required

RAY = Path(sys.executable).with_name("ray")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def local_cluster(workers: int = 1, cpus: int = 1, timeout: float = 240.0) -> Iterator[tuple[str, list[int]]]:
    """``ray start --head`` plus ``workers`` worker nodes of ``cpus`` CPUs each (the head has ``cpus`` too); yields the
    address and the nodes' process ids once every node's CPUs are in, and stops the nodes' process groups after."""
    import ray

    tiers.starting("Ray")
    temp = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))  # short: Ray's socket paths live under it
    env = {
        **os.environ,
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_raylet_start_wait_time_s": "180",  # a busy machine starts slowly
        "PYTHONPATH": f"{PROJECT_ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    }
    common = ["--node-ip-address", "127.0.0.1", "--num-cpus", str(cpus), "--disable-usage-stats", "--block"]
    address = f"127.0.0.1:{_free_port()}"
    head = [
        str(RAY),
        "start",
        "--head",
        "--port",
        address.split(":")[1],
        "--temp-dir",
        str(temp),
        "--include-dashboard",
        "false",
        "--dashboard-port",
        str(_free_port()),
        *common,
    ]
    nodes = [_start(head, env, temp / "head.log")]
    try:
        _wait_for_cpus(address, cpus, nodes, timeout)  # a worker node needs the head up
        nodes += [
            _start([str(RAY), "start", "--address", address, *common], env, temp / f"worker{i}.log")
            for i in range(workers)
        ]
        _wait_for_cpus(address, (workers + 1) * cpus, nodes, timeout)
        yield address, [n.pid for n in nodes]
    finally:
        if ray.is_initialized():
            ray.shutdown()
        _stop(nodes)
        shutil.rmtree(temp, ignore_errors=True)


def _start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with log.open("w") as out:
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _wait_for_cpus(address: str, cpus: int, nodes: Sequence[subprocess.Popen], timeout: float) -> None:
    """Poll the cluster until it has ``cpus`` CPUs; fail if a node's process exits or the deadline passes."""
    import ray

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        dead = [n.args for n in nodes if n.poll() is not None]
        if dead:
            raise RuntimeError(f"a Ray node exited while starting: {' '.join(dead[0])}")
        with contextlib.suppress(Exception):  # the head may not answer yet
            if not ray.is_initialized():
                ray.init(address=address, log_to_driver=False, configure_logging=False)
            if ray.cluster_resources().get("CPU", 0) >= cpus:
                return
        time.sleep(1)
    raise TimeoutError(f"the Ray cluster at {address} did not reach {cpus} CPUs within {timeout} s")


def _stop(nodes: Sequence[subprocess.Popen]) -> None:
    """SIGTERM each node's process group (the node's daemons live in it), then SIGKILL what is left after a grace."""
    for sig, grace in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
        for node in nodes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(node.pid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(group_alive(n.pid) for n in nodes):
            time.sleep(0.5)
    for node in nodes:
        with contextlib.suppress(subprocess.TimeoutExpired):
            node.wait(timeout=5)


def ray_available() -> bool:
    """Whether the optional extra is installed (the `ray` package and its command)."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return RAY.exists()


@contextlib.contextmanager
def ray_cluster(workers: int = 1) -> Iterator[str]:
    """A head and ``workers`` worker nodes of one CPU each on 127.0.0.1; yields the address, stops every node after."""
    required(ray_available(), "Ray is not installed (the optional extra .[ray])", "`make test` installs .[ray]")
    with local_cluster(workers=workers) as (address, _):
        yield address
