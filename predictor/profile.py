"""The framework wrapper: run a real command, measure it, extract its features, store the measurement.

Wall time comes from a monotonic clock around the child; user+system CPU time and
max RSS come from the child's own resource usage (``wait4``), so they cover the
command and every process it waited for, and nothing of ours. A run stopped before it
finished (killed at its timeout, or by a stopping signal from outside) is censored: its
wall time is a lower bound on how long it would have run.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from predictor.catalog import Catalog
from predictor.domain import CacheState, Measurement, Source
from predictor.jobfeatures import job_features


# Signals that stop a run from outside (an operator, a batch system's limits, our timeout): it did not finish.
STOPPING_SIGNALS = frozenset({signal.SIGKILL, signal.SIGTERM, signal.SIGXCPU, signal.SIGINT, signal.SIGHUP})


@dataclass(frozen=True)
class RunUsage:
    """What one child process cost; ``censored`` when it was stopped before it finished (wall time: a lower bound)."""

    wall_seconds: float
    cpu_seconds: float
    max_rss_kb: int
    exit_status: int
    censored: bool = False


def exit_status_of(wait_status: int) -> int:
    """Exit code of a child, or 128 + signal number when a signal killed it (shell convention)."""
    if os.WIFSIGNALED(wait_status):
        return 128 + os.WTERMSIG(wait_status)
    return os.waitstatus_to_exitcode(wait_status)


def stopped_by_signal(wait_status: int) -> bool:
    """Whether one of :data:`STOPPING_SIGNALS` ended the child (it did not finish, it was stopped)."""
    return os.WIFSIGNALED(wait_status) and os.WTERMSIG(wait_status) in STOPPING_SIGNALS


def run_measured(
    command: Sequence[str],
    *,
    timeout: float | None = None,
    stdout: Any = None,
    stderr: Any = None,
    cwd: str | Path | None = None,
) -> RunUsage:
    """Run ``command`` to completion and return its wall time, CPU time, max RSS and exit status.

    A command that cannot be started is a failed run (exit status 127), not an
    exception; a command over ``timeout`` is killed and reported with 128 + SIGKILL. Either
    that, or a stopping signal from outside, makes the run censored.
    """
    start = time.perf_counter()
    try:
        child = subprocess.Popen(list(command), stdout=stdout, stderr=stderr, cwd=cwd, start_new_session=True)
    except (FileNotFoundError, PermissionError):
        return RunUsage(time.perf_counter() - start, 0.0, 0, 127)
    deadline = None if timeout is None else start + timeout
    timed_out = False
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG if deadline else 0)
        if pid:
            break
        if time.perf_counter() >= deadline:  # type: ignore[operator]
            os.killpg(child.pid, signal.SIGKILL)
            pid, status, usage = os.wait4(child.pid, 0)
            timed_out = True
            break
        time.sleep(0.002)
    wall = time.perf_counter() - start
    child.returncode = exit_status_of(status)  # keep Popen from reaping a second time
    censored = timed_out or stopped_by_signal(status)
    return RunUsage(wall, usage.ru_utime + usage.ru_stime, int(usage.ru_maxrss), child.returncode, censored)


def profile_command(
    command: Sequence[str],
    *,
    catalog: Catalog,
    algorithm: str,
    platform: str,
    params: dict[str, Any],
    use_launcher: bool = True,
    machine: str | None = None,
    run_id: str | None = None,
    source: Source = Source.PROBE,
    cache_state: CacheState = CacheState.UNKNOWN,
    timeout: float | None = None,
    stdout: Any = None,
    stderr: Any = None,
) -> Measurement:
    """Extract the job's features, run it on ``platform`` and return its measurement.

    Features are read before the run, so a bad input fails fast and costs no run. A run
    stopped before it finished is returned censored, with its exit status.
    """
    algo = catalog.algorithm(algorithm)
    plat = catalog.platform(platform)
    if platform not in algo.implementations:
        raise KeyError(f"algorithm {algorithm!r} has no implementation on platform {platform!r}")
    features = job_features(algo, params)
    full_command = [*plat.launcher, *command] if use_launcher else list(command)
    load_before = os.getloadavg()[0]
    usage = run_measured(full_command, timeout=timeout, stdout=stdout, stderr=stderr)
    return Measurement(
        run_id=run_id or uuid.uuid4().hex,
        algorithm=algorithm,
        platform=platform,
        machine=machine or socket.gethostname(),
        params=params,
        features=features,
        wall_seconds=usage.wall_seconds,
        cpu_seconds=usage.cpu_seconds,
        max_rss_kb=usage.max_rss_kb,
        exit_status=usage.exit_status,
        censored=usage.censored,
        cache_state=cache_state,
        source=source,
        context={"load_avg_1m": load_before, "command": full_command},
    )
