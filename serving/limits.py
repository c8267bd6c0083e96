"""The request-body size limit, enforced before the body is parsed: a declared or streamed excess is a JSON 413."""

from __future__ import annotations

import json

from fastapi import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyLimit:
    """Refuses bodies over ``max_bytes``: at once when Content-Length says so, else as the bytes arrive."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await _refuse(send, self._message(declared.decode("latin-1")))
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise HTTPException(413, self._message(f"more than {self.max_bytes}"))
            return message

        await self.app(scope, counted, send)

    def _message(self, size: str) -> str:
        return f"request body of {size} bytes is over the limit of {self.max_bytes} bytes"


async def _refuse(send: Send, detail: str) -> None:
    """Answer 413 without reading the body; the server closes the connection afterwards."""
    body = json.dumps({"detail": detail}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})
