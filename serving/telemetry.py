"""Request ids, one structured JSON log line per request, and request metrics: one pure ASGI middleware."""

from __future__ import annotations

import itertools
import json
import logging
import re
import secrets
import sys
import time
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from predictor.addresses import redact_addresses
from serving.metrics import ApiMetrics

LOGGER_NAME = "serving"
REQUEST_ID_HEADER = "x-request-id"
REQUEST_ID: ContextVar[str | None] = ContextVar("request_id", default=None)
_GOOD_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, event, request id, and the record's ``fields``; every address in it
    as its scheme, host and port only (:func:`predictor.addresses.redact_addresses`)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        request_id = REQUEST_ID.get()
        if request_id is not None:
            entry["request_id"] = request_id
        entry.update(getattr(record, "fields", {}))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        # a registry's password or token is never logged
        return redact_addresses(json.dumps(entry, default=str))


def configure_logging(level: str) -> logging.Logger:
    """The service's logger, writing JSON lines to stderr; calling it again only changes the level."""
    logger = logging.getLogger(LOGGER_NAME)
    if not any(isinstance(h.formatter, JsonFormatter) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(JsonFormatter())
        logger.addHandler(handler)
        logger.propagate = False
    logger.setLevel(level.upper())
    return logger


class Telemetry:
    """Gives every request an id (the client's ``x-request-id`` when sane), echoes it, logs and measures the request."""

    def __init__(self, app: ASGIApp, metrics: ApiMetrics) -> None:
        self.app = app
        self.metrics = metrics
        self.log = logging.getLogger(LOGGER_NAME)
        # per process: ids stay unique across restarts and workers
        self._prefix = secrets.token_hex(6)
        self._counter = itertools.count(1)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = _request_id(scope) or f"{self._prefix}-{next(self._counter):x}"
        # the request's own task context; the 500 handler outside this middleware reads it too
        REQUEST_ID.set(request_id)
        started = time.perf_counter()
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {
                    **message,
                    "headers": [*message.get("headers", []), (REQUEST_ID_HEADER.encode(), request_id.encode())],
                }
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            seconds = time.perf_counter() - started
            route = getattr(scope.get("route"), "path", "unmatched")  # the template, never the raw path
            self.metrics.observe_request(scope["method"], route, status, seconds)
            if self.log.isEnabledFor(logging.INFO):
                fields = {
                    "method": scope["method"],
                    "path": scope["path"],
                    "route": route,
                    "status": status,
                    "duration_ms": round(seconds * 1000, 3),
                }
                self.log.info("request", extra={"fields": fields})


def _request_id(scope: Scope) -> str | None:
    """The client's request id if it is short and plain, else None."""
    for name, value in scope["headers"]:
        if name == REQUEST_ID_HEADER.encode():
            given = value.decode("latin-1")
            return given if _GOOD_ID.match(given) else None
    return None
