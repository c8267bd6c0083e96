"""JSON request bodies read by pydantic-core: validated straight from the bytes into the route's body model.

FastAPI decodes a body with the standard library's ``json.loads`` and then validates the decoded values; for a batch
of 1,000 jobs the decoding alone took as long as the validation. pydantic-core validates the bytes in one pass, and
FastAPI then accepts the model instance as it is. Routes opt in with ``APIRouter(route_class=FastJsonRoute)``; the
OpenAPI schema is untouched.

A small body (at most :data:`INLINE_BYTES`) is read on the event loop, where it costs less than a hand-off to a
thread; one this pass refuses (invalid, or JSON that ``json.loads`` reads and pydantic-core does not, such as a lone
surrogate escape) goes the standard way, so every error is the one FastAPI gives. A larger body is read in a worker
thread, so the loop answers other requests (``/healthz``) meanwhile, and its problems are answered from that thread:
JSON that does not parse as FastAPI answers it, a body whose model refuses it with pydantic's errors (at most
:data:`serving.errors.MAX_ERRORS` of them, and how many there were), and one holding a JSON object of more than
:data:`MAX_MEMBERS` members (no payload of the API has one; 200,000 unknown keys made 200,000 errors and a 27 MB
answer) refused at once, saying where.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

from fastapi import HTTPException, Request, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError
from pydantic_core import from_json
from starlette.concurrency import run_in_threadpool
from starlette.types import Receive, Scope

from serving.errors import MAX_ERRORS, InvalidBody

# bodies read on the event loop; larger ones in a worker thread
INLINE_BYTES = 64 << 10
# the most members of one JSON object a refused body is checked for (features hold at most 1,000)
MAX_MEMBERS = 1000


class FastJsonRequest(Request):
    """A request whose JSON body pydantic-core reads: into ``model`` when the route's body is one, else into plain values."""

    def __init__(self, scope: Scope, receive: Receive, model: type[BaseModel] | None) -> None:
        super().__init__(scope, receive)
        self._model = model

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            if len(body) > INLINE_BYTES:
                self._json = await run_in_threadpool(_read_large, body, self._model)
                return self._json
            try:
                self._json = from_json(body) if self._model is None else self._model.model_validate_json(body)
            # pydantic's ValidationError included: json.loads and FastAPI's validation say why
            except ValueError:
                return await super().json()
        return self._json


def _read_large(body: bytes, model: type[BaseModel] | None) -> Any:
    """A large body read off the event loop: the model, plain values, or its problems (see the module docstring)."""
    try:
        return from_json(body) if model is None else model.model_validate_json(body)
    # JSON that does not parse is one error; any other is the model's
    except ValidationError as exc:
        if exc.error_count() != 1 or exc.errors(include_url=False)[0]["type"] != "json_invalid":
            raise _refused(exc, body) from None
    except ValueError:
        pass
    # raises the JSONDecodeError FastAPI answers, or gives what pydantic-core would not read
    return json.loads(body)


def _refused(exc: ValidationError, body: bytes) -> HTTPException:
    """The answer to a large body its model refuses: the widest object's size when it is over :data:`MAX_MEMBERS`,
    else the first :data:`MAX_ERRORS` problems and how many there were."""
    if exc.error_count() > MAX_ERRORS:
        wide = next(_wide_objects(from_json(body), ("body",)), None)
        if wide is not None:
            where, members = wide
            return HTTPException(
                422, f"{'.'.join(where)}: a JSON object of {members:,} members, over the {MAX_MEMBERS:,} read of one"
            )
    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    return InvalidBody([{**e, "loc": ("body", *e["loc"])} for e in errors], total=exc.error_count())


def _wide_objects(value: Any, where: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], int]]:
    """Where ``value`` holds a JSON object of more than :data:`MAX_MEMBERS` members, and how many, outermost first."""
    if isinstance(value, dict):
        if len(value) > MAX_MEMBERS:
            yield where, len(value)
            return
        for key, item in value.items():
            yield from _wide_objects(item, (*where, str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _wide_objects(item, (*where, str(index)))


class FastJsonRoute(APIRoute):
    """A route that reads its JSON body with :class:`FastJsonRequest`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        declared = self.body_field.field_info.annotation if self.body_field is not None else None
        model = declared if isinstance(declared, type) and issubclass(declared, BaseModel) else None

        async def read_by_pydantic(request: Request) -> Response:
            return await handler(FastJsonRequest(request.scope, request.receive, model))

        return read_by_pydantic
