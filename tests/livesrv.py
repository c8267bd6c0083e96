"""Start real HTTP servers on 127.0.0.1 for tests: uvicorn in a thread, or the CLI in a subprocess."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import uvicorn
from fastapi import FastAPI

from serving.client import wait_until_ready
from serving.server import server_options
from tests import tiers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def eventually(check: Callable[[], bool], timeout: float = 60.0) -> bool:
    """Whether ``check()`` turns true before ``timeout`` seconds (polled; the bound is a safety net, not a timing assert)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return False


@contextlib.contextmanager
def serve_app(app: FastAPI, ready_path: str = "/readyz") -> Iterator[str]:
    """Run ``app`` under a real uvicorn server in a thread; yields its base URL once ``ready_path`` answers 200."""
    tiers.starting("uvicorn")
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **server_options(app.state.api))
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(f"{base}{ready_path}", timeout=60)
        yield base
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextlib.contextmanager
def serve_cli(
    env: dict[str, str], cwd: Path, output: Path | None = None, *options: str, timeout: float = 180.0
) -> Iterator[str]:
    """Run ``predictor serve OPTIONS`` as a subprocess (what it prints into ``output``, if given); yields its base URL once
    ready (within ``timeout`` seconds), stops it after."""
    tiers.starting("`predictor serve`")
    port = free_port()
    out = subprocess.PIPE if output is None else output.open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "predictor", "serve", "--port", str(port), *options],
        env={**os.environ, **env},
        cwd=cwd,
        stdout=out,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(f"{base}/readyz", timeout=timeout, process=proc)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
        if output is not None:
            out.close()


class Killable:
    """A child process (``proc``, set by a subclass's ``start``) that a test can kill without warning or stop."""

    proc: subprocess.Popen | None = None

    def kill(self) -> None:
        """SIGKILL: no cleanup, as a crash."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        """Terminate it if it still runs (killed if it does not end within 30 s)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


class Silent:
    """A TCP server that accepts connections and never answers: an API that hangs."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                self.held.append(self.sock.accept()[0])
            except OSError:
                return

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()
