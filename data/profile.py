"""The framework wrapper: run a real command, measure it, extract its features, store the measurement.

Wall time comes from a monotonic clock around the command; user+system CPU time and max RSS come from
the command's own resource usage (``wait4``), so they cover the command and every process it waited
for, and nothing of ours. A run stopped before it finished (killed at its timeout, or by a stopping
signal from outside) is censored: its wall time is a lower bound on how long it would have run.

Linux hands an exec'd process the peak memory of the process it replaced, so a command forked (or
vforked, as ``posix_spawn`` does) from this Python process would report at least this process's size
(66 MB for ``sleep``). Instead a small shell forks it in the background and exits; this process,
a child subreaper meanwhile, inherits the orphan, which execs the command only when let through a
gate (a pipe this process holds), so no shell can reap it first and the clock starts right then.
As in any background job, the command ignores SIGINT and SIGQUIT (it runs in a session of its own).
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from predictor.catalog import Catalog
from predictor.domain import CacheState, Measurement, Source
from predictor.jobfeatures import job_features

SHELL = "/bin/sh"
# the shell's descriptors: where it writes the pid, our stdin, the gate
PID_FD, STDIN_FD, GATE_FD = 3, 4, 5
# descriptors are copied above the shell's before they are put in place, so none overwrites another
FIRST_FREE_FD = 10
# The background job waits for the gate to close, then becomes the command with our stdin and nothing else of ours.
LAUNCH = '{ read _; exec "$@" <&4 4<&- 5<&-; } <&5 3>&- & echo $! >&3'
PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER = 36, 37
# Signals that stop a run from outside (an operator, a batch system's limits, our timeout): it did not finish.
STOPPING_SIGNALS = frozenset({signal.SIGKILL, signal.SIGTERM, signal.SIGXCPU, signal.SIGINT, signal.SIGHUP})
# The Debian package of each program the bundled catalog, the walkthroughs and the sweeps' input generators run
# (what `make tools`, scripts/install-system-deps.sh, installs).
DEBIAN_PACKAGES = {
    **dict.fromkeys(("blastn", "blastp", "blastx", "tblastn", "tblastx", "makeblastdb"), "ncbi-blast+"),
    **dict.fromkeys(("hmmsearch", "hmmbuild"), "hmmer"),
    "mafft": "mafft",
    "clustalo": "clustalo",
    "bwa": "bwa",
    "seqkit": "seqkit",
    "taskset": "util-linux",
}


class MissingProgram(FileNotFoundError):
    """A program a run needs is not installed: nothing was run, nothing is stored."""


def require_programs(programs: Sequence[str]) -> None:
    """Raise :class:`MissingProgram` naming the first of ``programs`` not on PATH and the Debian package that has it."""
    for program in programs:
        if shutil.which(program) is None:
            package = DEBIAN_PACKAGES.get(Path(program).name)
            how = (
                f"install the Debian package {package} (`make tools` installs every program the walkthroughs run)"
                if package
                else "install it"
            )
            raise MissingProgram(f"{program}: program not found on PATH; {how}")


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


# a file descriptor, subprocess.DEVNULL, a file, None for ours; stderr: also STDOUT
Output = int | IO[Any] | None


def run_measured(
    command: Sequence[str], *, timeout: float | None = None, stdout: Output = None, stderr: Output = None
) -> RunUsage:
    """Run ``command`` to completion and return its wall time, CPU time, max RSS and exit status.

    A command that cannot be started is a failed run (exit status 127 when not found, 126 when not
    executable, as the shell reports it), not an exception; a command over ``timeout`` is killed and
    reported with 128 + SIGKILL. Either that, or a stopping signal from outside, makes the run censored.
    """
    pid, group, gate = _held(command, stdout, stderr)
    start = time.perf_counter()
    os.close(gate)
    deadline = None if timeout is None else start + timeout
    timed_out = False
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG if deadline else 0)
        if done:
            break
        if deadline is not None and time.perf_counter() >= deadline:
            os.killpg(group, signal.SIGKILL)
            done, status, usage = os.wait4(pid, 0)
            timed_out = True
            break
        time.sleep(0.002)
    wall = time.perf_counter() - start
    censored = timed_out or stopped_by_signal(status)
    return RunUsage(wall, usage.ru_utime + usage.ru_stime, int(usage.ru_maxrss), exit_status_of(status), censored)


def stopped_by_signal(wait_status: int) -> bool:
    """Whether one of :data:`STOPPING_SIGNALS` ended the child (it did not finish, it was stopped)."""
    return os.WIFSIGNALED(wait_status) and os.WTERMSIG(wait_status) in STOPPING_SIGNALS


def _held(command: Sequence[str], stdout: Output, stderr: Output) -> tuple[int, int, int]:
    """Fork ``command`` from a small shell in a new session, held at its gate: its pid (our child), group and the gate."""
    with ExitStack() as stack:
        pid_read, pid_write = os.pipe()
        gate_read, gate = os.pipe()
        pids = stack.enter_context(os.fdopen(pid_read))
        if stderr == subprocess.STDOUT:
            stderr = 1 if stdout is None else stdout
        sources = {PID_FD: pid_write, STDIN_FD: _stdin(stack), GATE_FD: gate_read, 1: stdout, 2: stderr}
        actions = [(os.POSIX_SPAWN_DUP2, _high_copy(fd, stack), to) for to, fd in sources.items() if fd is not None]
        try:
            with _adopting_orphans():
                try:
                    shell = os.posix_spawn(
                        SHELL, ["sh", "-c", LAUNCH, "sh", *command], os.environ, file_actions=actions, setsid=True
                    )
                finally:
                    os.close(pid_write)
                    os.close(gate_read)
                line = pids.readline()
                # once the shell has exited, the held command is our child
                os.waitpid(shell, 0)
            return int(line), shell, gate
        except BaseException:
            os.close(gate)
            raise


def _stdin(stack: ExitStack) -> int:
    """Our stdin, or the null device when we have none."""
    try:
        os.fstat(0)
    except OSError:
        return stack.enter_context(open(os.devnull, "rb")).fileno()
    return 0


def _high_copy(target: int | IO[Any], stack: ExitStack) -> int:
    """A copy, numbered above the shell's, of the descriptor ``target`` names (subprocess.DEVNULL: the null device)."""
    if target == subprocess.DEVNULL:
        target = stack.enter_context(open(os.devnull, "wb"))
    fd = target if isinstance(target, int) else target.fileno()
    copy = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, FIRST_FREE_FD)
    stack.callback(os.close, copy)
    return copy


@contextmanager
def _adopting_orphans() -> Iterator[None]:
    """Make this process the child subreaper (Linux) for the block, so orphaned descendants become its children."""
    libc = ctypes.CDLL(None, use_errno=True)
    before = ctypes.c_int(0)
    libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(before), 0, 0, 0)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"cannot become a child subreaper: {os.strerror(errno)}")
    try:
        yield
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, before.value, 0, 0, 0)


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

    Features are read before the run, so a bad input fails fast and costs no run; so does a program (or the platform's
    launcher) that is not installed: :class:`MissingProgram`, and no measurement.
    """
    algo = catalog.algorithm(algorithm)
    plat = catalog.platform(platform)
    if platform not in algo.implementations:
        raise KeyError(f"algorithm {algorithm!r} has no implementation on platform {platform!r}")
    features = job_features(algo, params)
    full_command = [*plat.launcher, *command] if use_launcher else list(command)
    require_programs([plat.launcher[0], command[0]] if use_launcher and plat.launcher else [command[0]])
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
