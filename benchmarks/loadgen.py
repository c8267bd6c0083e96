"""A small HTTP/1.1 load generator for 127.0.0.1: keep-alive connections on raw asyncio streams (uvloop).

Closed loop (each connection sends its next request when the answer is in) or open loop at a fixed rate;
bounded by a request count and a duration, so it always stops by itself. Lean on purpose: the client
shares the machine's cores with the server, and the same client measures every server it is compared on.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import numpy as np
import uvloop

MAX_HEADER = 64 * 1024


@dataclass
class Request:
    """One prepared request: method, path, headers and body, encoded once."""

    method: str
    path: str
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    expect: int = 200
    wire: bytes = b""

    def encoded(self, host: str) -> bytes:
        """The request's bytes on the wire, built on first use."""
        if not self.wire:
            lines = [f"{self.method} {self.path} HTTP/1.1", f"host: {host}", f"content-length: {len(self.body)}"]
            if self.body:
                lines.append("content-type: application/json")
            lines += [f"{k}: {v}" for k, v in self.headers.items()]
            self.wire = ("\r\n".join(lines) + "\r\n\r\n").encode() + self.body
        return self.wire


def post_json(path: str, payload: object, **headers: str) -> Request:
    return Request("POST", path, json.dumps(payload).encode(), headers)


@dataclass
class Result:
    """What one load run measured: latencies of good answers, error count, wall time."""

    latencies: list[float]
    errors: int
    seconds: float
    error_samples: list[str]

    @property
    def requests(self) -> int:
        return len(self.latencies) + self.errors

    def summary(self) -> dict[str, float]:
        """Requests per second (good answers), p50 and p99 latency in ms, errors."""
        lat = np.array(self.latencies) * 1000 if self.latencies else np.array([np.nan])
        return {
            "requests": self.requests,
            "rps": len(self.latencies) / self.seconds if self.seconds else 0.0,
            "p50_ms": float(np.percentile(lat, 50)),
            "p99_ms": float(np.percentile(lat, 99)),
            "errors": self.errors,
        }


class _Connection:
    """One keep-alive connection; reconnects after an error."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def call(self, raw: bytes) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        self.writer.write(raw)
        head = await self.reader.readuntil(b"\r\n\r\n")
        if len(head) > MAX_HEADER:
            raise ValueError("response header too large")
        status = int(head[9:12])
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        body = await self.reader.readexactly(length)
        return status, body

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def run(
    base_url: str,
    pick: Callable[[int], Request],
    *,
    concurrency: int,
    max_requests: int,
    max_seconds: float,
    rate: float | None = None,
    check: Callable[[int, bytes], str | None] | None = None,
) -> Result:
    """Send ``pick(i)`` (from a fixed pool of requests) until ``max_requests`` or ``max_seconds``; open loop at ``rate``/s."""
    return uvloop.run(_run(base_url, pick, concurrency, max_requests, max_seconds, rate, check))


async def _run(
    base_url: str,
    pick: Callable[[int], Request],
    concurrency: int,
    max_requests: int,
    max_seconds: float,
    rate: float | None,
    check: Callable[[int, bytes], str | None] | None,
) -> Result:
    parts = urlsplit(base_url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise ValueError(f"load only ever targets this machine, not {host}")
    latencies: list[float] = []
    errors: list[str] = []
    counter = iter(range(max_requests))
    started = time.perf_counter()
    deadline = started + max_seconds

    async def worker() -> None:
        connection = _Connection(host, port)
        for i in counter:
            now = time.perf_counter()
            if now >= deadline:
                break
            sent = now
            if rate is not None:  # open loop: request i is due at i / rate, and its latency counts from then
                sent = started + i / rate
                if sent > now:
                    await asyncio.sleep(sent - now)
            request = pick(i)
            raw = request.encoded(f"{host}:{port}")
            try:
                status, body = await asyncio.wait_for(connection.call(raw), timeout=30)
            except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
                connection.close()
                errors.append(f"{request.method} {request.path}: {type(exc).__name__} {exc}")
                continue
            problem = None if status == request.expect else f"status {status}: {body[:200]!r}"
            if problem is None and check is not None:
                problem = check(status, body)
            if problem is None:
                latencies.append(time.perf_counter() - sent)
            else:
                errors.append(f"{request.method} {request.path}: {problem}")
        connection.close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return Result(latencies, len(errors), time.perf_counter() - started, errors[:10])
