"""Bodies read by pydantic-core (serving.jsonbody) give what FastAPI's own reading gives: the same model, the same error."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from fastapi import APIRouter, FastAPI, Response

from serving import errors
from serving.jsonbody import FastJsonRoute
from serving.schemas.predict import BatchPredictRequest, MatrixPredictRequest
from serving.settings import ApiSettings
from tests.livesrv import serve_app

JSON = {"content-type": "application/json"}
JOB = b'{"algorithm": "mafft", "features": {"input.sequences": 40, "input.mean_length": 300.5}}'
BODIES = {
    "a batch": b'{"jobs": [' + JOB + b', {"algorithm": "mafft", "params": {"a": true, "b": 1, "c": 1.0, "d": "x"}, '
    b'"platforms": ["cpu1"]}], "coverage": 0.8, "fields": ["limit"]}',
    "a number as text": b'{"jobs": [' + JOB + b'], "coverage": "0.5"}',
    "a boolean for a number": b'{"jobs": [' + JOB + b'], "coverage": true}',
    "an integer beyond 64 bits": b'{"jobs": [{"algorithm": "mafft", "params": {"n": 123456789012345678901234567890}}]}',
    "NaN": b'{"jobs": [{"algorithm": "mafft", "features": {"x": NaN}}]}',
    "a number that overflows": b'{"jobs": [{"algorithm": "mafft", "features": {"x": 1e400}}]}',
    "a lone surrogate": b'{"jobs": [{"algorithm": "maf\\ud800ft"}]}',
    "a NUL character": b'{"jobs": [{"algorithm": "maf\\u0000ft"}]}',
    "a duplicate key": b'{"jobs": [{"algorithm": "a", "algorithm": "mafft"}]}',
    "an unknown field": b'{"jobs": [' + JOB + b'], "colour": "red"}',
    "no jobs": b'{"jobs": []}',
    "a list": b"[" + JOB + b"]",
    "truncated JSON": b'{"jobs": [' + JOB,
    "bytes that are not UTF-8": b'{"jobs": [{"algorithm": "\xff"}]}',
    "a matrix": b'{"algorithm": "mafft", "columns": ["a", "b"], "rows": [[1, 2.5], [3e2, -0.0]]}',
    "a ragged matrix": b'{"algorithm": "mafft", "columns": ["a", "b"], "rows": [[1, 2.5], [3]]}',
}


def _echo(router: APIRouter) -> APIRouter:
    """Routes that answer with the model they were given, as pydantic writes it (so 1 and 1.0 differ)."""

    @router.post("/batch")
    async def batch(request: BatchPredictRequest) -> Response:
        return Response(request.model_dump_json(), media_type="application/json")

    @router.post("/matrix")
    async def matrix(request: MatrixPredictRequest) -> Response:
        return Response(request.model_dump_json(), media_type="application/json")

    return router


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    """One app with the echo routes twice: read by FastAPI (``/standard``) and by pydantic-core (``/fast``)."""
    app = FastAPI()
    app.state.api = ApiSettings()
    app.include_router(_echo(APIRouter(prefix="/standard")))
    app.include_router(_echo(APIRouter(prefix="/fast", route_class=FastJsonRoute)))
    app.get("/ready")(lambda: {})  # noqa: PIE807  # FastAPI reads the endpoint's signature: dict has none
    errors.install(app)
    with serve_app(app, "/ready") as url:
        yield url


@pytest.mark.parametrize("case", list(BODIES))
@pytest.mark.parametrize("route", ["batch", "matrix"])
def test_a_body_read_by_pydantic_core_gets_the_answer_fastapi_gives(base, case, route):
    standard = httpx.post(f"{base}/standard/{route}", content=BODIES[case], headers=JSON)
    fast = httpx.post(f"{base}/fast/{route}", content=BODIES[case], headers=JSON)
    assert (fast.status_code, fast.text) == (standard.status_code, standard.text)


def test_the_cases_cover_answers_and_errors(base):
    statuses = {
        httpx.post(f"{base}/standard/batch", content=body, headers=JSON).status_code for body in BODIES.values()
    }
    assert statuses == {200, 400, 422}


def test_a_body_that_is_not_declared_json_is_refused_alike(base):
    answers = [
        httpx.post(f"{base}/{way}/batch", content=BODIES["a batch"], headers={"content-type": "text/plain"})
        for way in ("standard", "fast")
    ]
    assert answers[0].status_code == 422 and (answers[1].status_code, answers[1].text) == (
        answers[0].status_code,
        answers[0].text,
    )
