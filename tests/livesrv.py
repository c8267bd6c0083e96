"""Start real HTTP servers on 127.0.0.1 for tests: uvicorn in a thread, or the CLI in a subprocess."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import uvicorn
from fastapi import FastAPI

from serving.server import server_options


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


def wait_ready(url: str, timeout: float = 60.0, proc: subprocess.Popen | None = None) -> None:
    """Poll ``url`` until it answers 200; fail early if ``proc`` died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before it was ready")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=2).status_code == 200:
                return
        time.sleep(0.1)
    raise TimeoutError(f"{url} not ready after {timeout} s")


@contextlib.contextmanager
def serve_app(app: FastAPI, ready_path: str = "/readyz") -> Iterator[str]:
    """Run ``app`` under a real uvicorn server in a thread; yields its base URL once ``ready_path`` answers 200."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **server_options(app.state.settings)))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(f"{base}{ready_path}")
        yield base
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextlib.contextmanager
def serve_cli(
    env: dict[str, str], cwd: Path, output: Path | None = None, *options: str, timeout: float = 60.0
) -> Iterator[str]:
    """Run ``predictor serve OPTIONS`` as a subprocess (what it prints into ``output``, if given); yields its base URL once
    ready (within ``timeout`` seconds), stops it after."""
    port = free_port()
    out = subprocess.PIPE if output is None else output.open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "predictor", "serve", "--port", str(port), *options], env={**os.environ, **env}, cwd=cwd,
        stdout=out, stderr=subprocess.STDOUT, text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(f"{base}/readyz", timeout=timeout, proc=proc)
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
