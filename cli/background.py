"""The retrain worker as a child of ``predictor serve --train``: started once the API listens, stopped with it.

It is ``predictor worker`` in a process of its own (its niceness and its training processes are its own, the API's
requests are not slowed by its imports or fits), in a session of its own (a Ctrl-C at the terminal stops the API,
which then stops it), and it stops by itself when the API's process is gone (``--parent-pid``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import typer

# how often a child worker looks whether its API still runs
PARENT_POLL_S = 2.0
# how long a child worker may take to stop before it is killed
STOP_WAIT_S = 15.0


class BackgroundWorker:
    """``predictor worker`` started beside this process, and stopped with it."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = [sys.executable, "-m", "predictor", "worker", "--parent-pid", str(os.getpid())]
        self.process = subprocess.Popen(command, start_new_session=True)
        typer.echo(
            f"retrain worker started (pid {self.process.pid}): it trains the pairs without a champion, which are "
            "answered with the median of their measured runs until theirs is swapped in; progress: GET /readyz, "
            "`predictor models list`"
        )

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=STOP_WAIT_S)


def stop_with(parent: int) -> None:
    """End this process (as SIGTERM would) once process ``parent`` is no longer its parent: the API that started it
    stopped, even by SIGKILL."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def exit_on_sigterm() -> None:
    """Let SIGTERM end this process as an exception would, so that its ``finally`` blocks run (the status says stopped)."""

    def leave(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, leave)
