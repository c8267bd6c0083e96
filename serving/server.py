"""How uvicorn serves the API: httptools, with the request head (request line and headers) bounded; one process or several.

httptools gathers a header's value by appending every piece that arrives, so one huge header costs time
quadratic in its size (a 128 MiB header took 42 s and stalled the service). :class:`BoundedHead` counts a
request's head as its bytes arrive, before they reach the parser, and answers 431 once it passes the
limit; it then reads and drops what the client still sends for a moment (so the client sees the answer
rather than a reset) and closes the connection.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from predictor.settings import Settings
from serving.metrics import MULTIPROC_ENV
from serving.telemetry import LOGGER_NAME

HEAD_END = b"\r\n\r\n"
LINGER_S = 1.0  # how long a refused connection's remaining bytes are read and dropped before it closes
WORKER_HEALTHCHECK_S = 180  # a worker that does not answer uvicorn's ping this long is replaced (a start loads every champion)


class BoundedHead(HttpToolsProtocol):
    """httptools' protocol that refuses a request head over ``config.h11_max_incomplete_event_size`` bytes with a 431."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head: int | None = 0  # bytes of the current request's head so far; None once the head is complete
        self._tail = b""  # the last bytes seen, for a head end split across reads
        self._refused: asyncio.TimerHandle | None = None

    def data_received(self, data: bytes) -> None:
        if self._refused is not None:
            return  # dropped: the 431 is on its way and the connection closes
        if self._head is not None:
            seen = self._tail + data
            end = seen.find(HEAD_END)
            self._head += len(data) if end < 0 else end + len(HEAD_END) - len(self._tail)
            if self._head > self.config.h11_max_incomplete_event_size:
                self._refuse()
                return
            if end < 0:
                self._tail = seen[-(len(HEAD_END) - 1) :]
            else:
                self._tail, self._head = b"", None
        super().data_received(data)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._head, self._tail = 0, b""  # the next request on this connection starts with its head

    def connection_lost(self, exc: Exception | None) -> None:
        if self._refused is not None:
            self._refused.cancel()
        super().connection_lost(exc)

    def _refuse(self) -> None:
        """Answer 431 at once, stop parsing, and close after a short linger."""
        limit = self.config.h11_max_incomplete_event_size
        body = json.dumps({"detail": f"request line and headers are over the limit of {limit} bytes"}).encode()
        head = (
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body)
        )
        self.transport.write(head + body)
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self._refused = self.loop.call_later(LINGER_S, self.transport.close)
        logging.getLogger(LOGGER_NAME).warning("request head over the limit", extra={"fields": {"client": str(self.client), "limit": limit}})


def server_options(settings: Settings) -> dict[str, Any]:
    """uvicorn options the API is served with (``predictor serve`` and the tests' live servers alike)."""
    return {"http": BoundedHead, "h11_max_incomplete_event_size": settings.api_max_header_bytes}


def serve_workers(settings: Settings, host: str, port: int, workers: int) -> None:
    """Serve the API from ``workers`` processes behind one port, none running the scheduler (it runs as
    ``predictor scheduler``); their Prometheus metrics are summed through the client library's multiprocess mode."""
    import uvicorn

    metrics_dir = Path(os.environ.get(MULTIPROC_ENV) or settings.resolved_home / "metrics")
    shutil.rmtree(metrics_dir, ignore_errors=True)  # the counts of an earlier run must not be added to this one's
    metrics_dir.mkdir(parents=True)
    os.environ[MULTIPROC_ENV] = str(metrics_dir)  # read by each worker as it starts (they inherit the environment)
    os.environ["PREDICTOR_SCHEDULER_EMBEDDED"] = "false"
    uvicorn.run(
        "serving.app:create_app", factory=True, workers=workers, host=host, port=port, log_level="info", access_log=False,
        timeout_worker_healthcheck=WORKER_HEALTHCHECK_S, **server_options(settings),
    )  # fmt: skip
