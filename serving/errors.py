"""Errors as JSON ``{"detail": ...}`` with precise statuses, and their OpenAPI descriptions."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from serving.schemas.common import ErrorOut, ValidationErrorOut
from serving.telemetry import LOGGER_NAME, REQUEST_ID

DESCRIPTIONS = {
    400: "The body could not be read as text (not UTF-8).",
    401: "Missing or wrong bearer token.",
    403: "Refused: a path leading outside the data roots, or write endpoints disabled (no token configured).",
    404: "Unknown algorithm or platform.",
    413: "Request body or batch over the service's limit.",
    422: "Malformed JSON, wrong types, non-finite numbers, unknown or out-of-range parameters, no such input file, unreadable inputs.",
    503: "The measurement store is unavailable; retry (recording is idempotent).",
}


# problems listed in one 422 (how many there were is said): an answer stays small whatever the body
MAX_ERRORS = 50


class InvalidBody(HTTPException):
    """A request body its model refuses, found off the event loop (:mod:`serving.jsonbody`): answered as FastAPI's
    validation errors are, ``total`` the problems found (``errors`` may hold fewer)."""

    def __init__(self, errors: list[dict[str, Any]], total: int) -> None:
        super().__init__(422)
        self.errors, self.total = errors, total


def responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for these error statuses."""
    return {
        code: {"model": ValidationErrorOut if code == 422 else ErrorOut, "description": DESCRIPTIONS[code]}
        for code in codes
    }


def install(app: FastAPI) -> None:
    """Register the handlers that turn known errors into 4xx (or 503) answers and anything else into a logged 500."""
    log = logging.getLogger(LOGGER_NAME)

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        if request.method == "POST" and "json" not in request.headers.get("content-type", ""):
            return JSONResponse(
                status_code=422, content={"detail": "the body must be JSON (content-type: application/json)"}
            )
        errors = _matching_branch(list(exc.errors()), exc.body)
        return _invalid(_listed(errors[:MAX_ERRORS]), len(errors))

    @app.exception_handler(InvalidBody)
    async def _invalid_body(_: Request, exc: InvalidBody) -> JSONResponse:
        return _invalid(_listed(exc.errors[:MAX_ERRORS]), exc.total)

    @app.exception_handler(OperationalError)
    @app.exception_handler(PoolTimeout)
    async def _store_unavailable(_: Request, exc: Exception) -> JSONResponse:
        log.warning("measurement store unavailable", extra={"fields": {"error": str(exc).splitlines()[0][:300]}})
        return JSONResponse(
            status_code=503,
            content={"detail": "the measurement store is unavailable; retry"},
            headers={"retry-after": "1"},
        )

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.error("unhandled error", exc_info=exc)
        return JSONResponse(status_code=500, content={"detail": "internal error", "request_id": REQUEST_ID.get()})


def _listed(errors: Sequence[Any]) -> list[dict[str, Any]]:
    """Validation errors as answered: location, message and type; the offending input is left out (it may hold NaN or
    infinities, which JSON cannot carry, or be the whole body)."""
    return [{"loc": [str(p) for p in e["loc"]], "msg": e["msg"], "type": e["type"]} for e in errors]


def _invalid(errors: list[dict[str, Any]], total: int) -> JSONResponse:
    """The 422 of a body's problems: at most :data:`MAX_ERRORS` listed, the summary saying how many more there were."""
    errors = errors[:MAX_ERRORS]
    summary = "; ".join(f"{'.'.join(e['loc'])}: {e['msg']}" for e in errors)
    more = total - len(errors)
    if more > 0:
        summary += f"; and {more:,} more problem(s) (the first {len(errors)} are listed)"
    return JSONResponse(status_code=422, content={"detail": summary, "errors": errors})


def _matching_branch(errors: list[dict[str, Any]], body: Any) -> list[dict[str, Any]]:
    """For a body typed ``X | list[X]``, only the errors of the branch the JSON's shape chose, without the branch name."""
    branches = {str(e["loc"][1]) for e in errors if len(e["loc"]) > 1 and e["loc"][0] == "body"}
    lists = {b for b in branches if b.startswith("list[")}
    if not lists or len(branches) != 2:
        return errors
    chosen = lists if isinstance(body, list) else branches - lists
    return [{**e, "loc": ["body", *e["loc"][2:]]} for e in errors if e["loc"][1:2] and str(e["loc"][1]) in chosen]
