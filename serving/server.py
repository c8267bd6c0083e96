"""How uvicorn serves the API: httptools, with the request head (request line and headers) bounded; one process or several.

httptools gathers a header's value by appending every piece that arrives, so one huge header costs time
quadratic in its size (a 128 MiB header took 42 s and stalled the service). :class:`BoundedHead` counts a
request's head as its bytes arrive, before they reach the parser, and answers 431 once it passes the
limit; it then reads and drops what the client still sends for a moment (so the client sees the answer
rather than a reset) and closes the connection. uvicorn has no time limit on a request head (one byte now and
then keeps a connection, and its slot, forever); :class:`BoundedHead` answers 408 to a head, or a new
connection's first bytes, that has not arrived in full within ``head_timeout_s``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import socket
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from predictor.settings import Settings
from serving.metrics import MULTIPROC_ENV
from serving.settings import ApiSettings
from serving.telemetry import LOGGER_NAME

HEAD_END = b"\r\n\r\n"
# how long a refused connection's remaining bytes are read and dropped before it closes
LINGER_S = 1.0
# uvicorn's exit status when the app cannot start
STARTUP_FAILURE = 3
# how often serve_on looks whether uvicorn listens yet
STARTED_POLL_S = 0.2
# a worker that does not answer uvicorn's ping this long is replaced (a start loads every champion)
WORKER_HEALTHCHECK_S = 180


class BoundedHead(HttpToolsProtocol):
    """httptools' protocol that refuses a request head over ``max_head_bytes`` bytes with a 431, and one that takes over
    ``head_timeout_s`` to arrive with a 408."""

    def __init__(self, *args: Any, head_timeout_s: float, max_head_bytes: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._max_head_bytes = max_head_bytes
        # bytes of the current request's head so far; None once the head is complete
        self._head: int | None = 0
        # the last bytes seen, for a head end split across reads
        self._tail = b""
        self._refused: asyncio.TimerHandle | None = None
        self._head_timeout_s = head_timeout_s
        # armed while a head is awaited or arriving
        self._head_timer: asyncio.TimerHandle | None = None

    # As HttpToolsProtocol does (with the same ignore), asyncio's BaseTransport is narrowed to the Transport it gets.
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_timer()

    def data_received(self, data: bytes) -> None:
        if self._refused is not None:
            # dropped: the answer is on its way and the connection closes
            return
        if self._head is not None:
            # the first bytes of a keep-alive connection's next head
            self._arm_head_timer()
            seen = self._tail + data
            end = seen.find(HEAD_END)
            self._head += len(data) if end < 0 else end + len(HEAD_END) - len(self._tail)
            if self._head > self._max_head_bytes:
                self._refuse()
                return
            if end < 0:
                self._tail = seen[-(len(HEAD_END) - 1) :]
            else:
                self._tail, self._head = b"", None
                self._cancel_head_timer()
        super().data_received(data)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        # the next request on this connection starts with its head
        self._head, self._tail = 0, b""

    def connection_lost(self, exc: Exception | None) -> None:
        if self._refused is not None:
            self._refused.cancel()
        self._cancel_head_timer()
        super().connection_lost(exc)

    def _arm_head_timer(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self._head_timeout_s, self._head_too_slow)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _refuse(self) -> None:
        """Answer 431 for a head over the size limit."""
        limit = self._max_head_bytes
        self._answer_and_close(
            b"431 Request Header Fields Too Large", f"request line and headers are over the limit of {limit} bytes"
        )
        logging.getLogger(LOGGER_NAME).warning(
            "request head over the limit", extra={"fields": {"client": str(self.client), "limit": limit}}
        )

    def _head_too_slow(self) -> None:
        """Answer 408 for a head (or a new connection's first bytes) not complete within the time limit."""
        self._head_timer = None
        if self._refused is not None or self.transport.is_closing():
            return
        self._answer_and_close(
            b"408 Request Timeout", f"request line and headers did not arrive within {self._head_timeout_s:g} s"
        )
        logging.getLogger(LOGGER_NAME).warning(
            "request head too slow", extra={"fields": {"client": str(self.client), "timeout_s": self._head_timeout_s}}
        )

    def _answer_and_close(self, status: bytes, detail: str) -> None:
        """Answer ``status`` at once, stop parsing, and close after a short linger (the client sees the answer, not a reset)."""
        self._cancel_head_timer()
        body = json.dumps({"detail": detail}).encode()
        head = b"HTTP/1.1 %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n\r\n" % (
            status,
            len(body),
        )
        self.transport.write(head + body)
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self._refused = self.loop.call_later(LINGER_S, self.transport.close)


def server_options(api: ApiSettings) -> dict[str, Any]:
    """uvicorn options the API is served with (``predictor serve`` and the tests' live servers alike)."""
    return {
        "http": partial(BoundedHead, head_timeout_s=api.header_timeout_s, max_head_bytes=api.max_header_bytes),
        "h11_max_incomplete_event_size": api.max_header_bytes,
    }


def serve_on(
    app: Any,
    api: ApiSettings,
    sock: socket.socket,
    host: str,
    port: int,
    *,
    when_started: Callable[[], None] | None = None,
) -> None:
    """Serve ``app`` in this process on ``sock``, already bound to ``host:port`` (uvicorn listens on it once the app has
    started), and call ``when_started`` (from another thread) once it does; exit 3, as ``uvicorn.run`` does, when the
    app cannot start."""
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level="info", access_log=False, **server_options(api))
    server = uvicorn.Server(config)  # the app logs each request
    address = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    # uvicorn says where it listens only for sockets it bound itself
    def started() -> None:
        logging.getLogger("uvicorn.error").info("Uvicorn running on %s (Press CTRL+C to quit)", address)
        if when_started is not None:
            when_started()

    threading.Thread(target=_once_started, args=(server, started), name="started", daemon=True).start()
    server.run(sockets=[sock])
    if not server.started:
        raise SystemExit(STARTUP_FAILURE)


def _once_started(server: Any, then: Callable[[], None]) -> None:
    """Call ``then`` once ``server`` listens; not at all if it stops first."""
    while not server.started:
        if server.should_exit:
            return
        time.sleep(STARTED_POLL_S)
    then()


def serve_workers(settings: Settings, api: ApiSettings, host: str, port: int, workers: int) -> None:
    """Serve the API from ``workers`` processes behind one port, none running the scheduler (it runs as
    ``predictor scheduler``); their Prometheus metrics are summed through the client library's multiprocess mode."""
    import uvicorn

    metrics_dir = Path(os.environ.get(MULTIPROC_ENV) or settings.resolved_home / "metrics")
    # the counts of an earlier run must not be added to this one's
    shutil.rmtree(metrics_dir, ignore_errors=True)
    metrics_dir.mkdir(parents=True)
    # read by each worker as it starts (they inherit the environment)
    os.environ[MULTIPROC_ENV] = str(metrics_dir)
    os.environ["PREDICTOR_SCHEDULER_EMBEDDED"] = "false"
    uvicorn.run(
        "serving.app:create_app",
        factory=True,
        workers=workers,
        host=host,
        port=port,
        log_level="info",
        access_log=False,
        timeout_worker_healthcheck=WORKER_HEALTHCHECK_S,
        **server_options(api),
    )
