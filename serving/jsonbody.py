"""JSON request bodies read by pydantic-core: validated straight from the bytes into the route's body model.

FastAPI decodes a body with the standard library's ``json.loads`` and then validates the decoded values; for a batch
of 1,000 jobs the decoding alone took as long as the validation. pydantic-core validates the bytes in one pass, and
FastAPI then accepts the model instance as it is. A body that this pass refuses (invalid, or JSON that ``json.loads``
reads and pydantic-core does not, such as a lone surrogate escape) goes the standard way, so every error is the one
FastAPI gives; the OpenAPI schema is untouched. Routes opt in with ``APIRouter(route_class=FastJsonRoute)``.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel
from pydantic_core import from_json
from starlette.types import Receive, Scope


class FastJsonRequest(Request):
    """A request whose JSON body pydantic-core reads: into ``model`` when the route's body is one, else into plain values."""

    def __init__(self, scope: Scope, receive: Receive, model: type[BaseModel] | None) -> None:
        super().__init__(scope, receive)
        self._model = model

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            try:
                self._json = from_json(body) if self._model is None else self._model.model_validate_json(body)
            except ValueError:  # pydantic's ValidationError included: json.loads and FastAPI's validation say why
                return await super().json()
        return self._json


class FastJsonRoute(APIRoute):
    """A route that reads its JSON body with :class:`FastJsonRequest`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        declared = self.body_field.field_info.annotation if self.body_field is not None else None
        model = declared if isinstance(declared, type) and issubclass(declared, BaseModel) else None

        async def read_by_pydantic(request: Request) -> Response:
            return await handler(FastJsonRequest(request.scope, request.receive, model))

        return read_by_pydantic
