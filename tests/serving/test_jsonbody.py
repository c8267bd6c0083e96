"""Bodies read by pydantic-core (serving.jsonbody) give what FastAPI's own reading gives: the same model, the same error."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import httpx
import pytest
from fastapi import APIRouter, FastAPI, Response
from pydantic import BaseModel, field_validator

from serving import errors
from serving.errors import MAX_ERRORS
from serving.jsonbody import INLINE_BYTES, FastJsonRoute
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


GATE = threading.Event()  # a body of Gated is validated only once it is set


class Gated(BaseModel):
    """A body whose validation waits for :data:`GATE`: where it runs, nothing else can (bounded: 30 s)."""

    blob: str

    @field_validator("blob")
    @classmethod
    def _wait(cls, value: str) -> str:
        GATE.wait(timeout=30)
        return value


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    """One app with the echo routes twice: read by FastAPI (``/standard``) and by pydantic-core (``/fast``)."""
    app = FastAPI()
    app.state.api = ApiSettings()
    app.include_router(_echo(APIRouter(prefix="/standard")))
    fast = _echo(APIRouter(prefix="/fast", route_class=FastJsonRoute))

    @fast.post("/gated")
    async def gated(request: Gated) -> Response:
        return Response(str(len(request.blob)))

    app.include_router(fast)
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


def test_a_large_body_is_read_off_the_event_loop(base):
    """Issue 41: a large body's validation runs in a worker thread: while it is held, /ready answers."""
    GATE.clear()
    posted: list[httpx.Response] = []
    body = json.dumps({"blob": "x" * (INLINE_BYTES + 1)}).encode()
    sender = threading.Thread(
        target=lambda: posted.append(httpx.post(f"{base}/fast/gated", content=body, headers=JSON, timeout=60))
    )
    sender.start()
    try:
        assert httpx.get(f"{base}/ready", timeout=10).status_code == 200
    finally:
        GATE.set()
        sender.join(timeout=60)
    assert posted[0].status_code == 200 and posted[0].text == str(INLINE_BYTES + 1)


def test_a_body_of_200000_keys_is_refused_at_once_with_a_short_answer(base):
    """Issue 41: 200,000 unknown keys (2.3 MB) are one short 422 naming the object's size, not 200,000 errors (27 MB);
    a body with thousands of bad values lists the first 50 and says how many more."""
    wide = json.dumps({"jobs": [{"algorithm": "mafft"}], **{f"k{i}": 0 for i in range(200_000)}}).encode()
    answer = httpx.post(f"{base}/fast/batch", content=wide, headers=JSON, timeout=60)
    assert answer.status_code == 422 and len(answer.content) < 1000
    assert "body: a JSON object of 200,001 members, over the 1,000" in answer.json()["detail"]
    bad = json.dumps({"algorithm": "mafft", "columns": ["a"], "rows": [["x"]] * 10_000}).encode()
    for way in ("fast", "standard"):
        answer = httpx.post(f"{base}/{way}/matrix", content=bad, headers=JSON, timeout=60)
        body = answer.json()
        assert answer.status_code == 422 and len(body["errors"]) == MAX_ERRORS, way
        assert body["detail"].endswith(f"and {10_000 - MAX_ERRORS:,} more problem(s) (the first 50 are listed)")
