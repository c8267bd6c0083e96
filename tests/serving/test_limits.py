"""Limits answered with a precise 4xx, never a 500: body size, batch size, feature-extraction time budget."""

from __future__ import annotations

import contextlib
import select
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from predictor.settings import PROJECT_ROOT, Settings
from serving.app import create_app
from serving.settings import ApiSettings
from tests.livesrv import serve_app, serve_cli
from tests.trained import Home


@pytest.fixture(scope="module")
def strict(trained: Home) -> Iterator[str]:
    """The same champions behind tight limits: 4 KB bodies, 3 jobs a call, a feature budget no file read fits in."""
    api = trained.api.model_copy(update={"max_body_bytes": 4000, "max_batch": 3, "feature_budget_s": 1e-9})
    with serve_app(create_app(trained.settings, api=api)) as url:
        yield url


def test_declared_oversized_body_is_413_before_reading_it(strict):
    response = httpx.post(
        f"{strict}/v1/predict", content=b"{" + b" " * 5000 + b"}", headers={"content-type": "application/json"}
    )
    assert response.status_code == 413
    assert response.json() == {"detail": "request body of 5002 bytes is over the limit of 4000 bytes"}
    assert httpx.get(f"{strict}/healthz").status_code == 200


def test_streamed_oversized_body_is_413(strict):
    chunks = (b" " * 1000 for _ in range(6))  # no content-length: chunked transfer
    response = httpx.post(f"{strict}/v1/predict", content=chunks, headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert "over the limit of 4000 bytes" in response.json()["detail"]


@pytest.mark.parametrize(
    ("path", "body", "fragment"),
    [
        ("/v1/predict/batch", {"jobs": [{"algorithm": "mafft"}] * 4}, "batch of 4 jobs is over the limit of 3"),
        (
            "/v1/predict/matrix",
            {"algorithm": "mafft", "columns": ["a"], "rows": [[1.0]] * 4},
            "4 rows are over the limit of 3",
        ),
        (
            "/v1/observations",
            [{"algorithm": "mafft", "platform": "cpu1", "wall_seconds": 1.0}] * 4,
            "4 observations are over the limit of 3",
        ),
    ],
)
def test_oversized_batches_are_413(strict, auth, path, body, fragment):
    response = httpx.post(f"{strict}{path}", json=body, headers=auth)
    assert response.status_code == 413, response.text
    assert fragment in response.json()["detail"]


def test_feature_budget_spent_is_422_and_features_still_work(strict, features_of):
    response = httpx.post(f"{strict}/v1/predict", json={"algorithm": "mafft", "params": {"input": "f19.fa"}})
    assert response.status_code == 422
    assert "budget" in response.json()["detail"] and "features" in response.json()["detail"]
    given = httpx.post(f"{strict}/v1/predict", json={"algorithm": "mafft", "features": features_of("f19.fa")})
    assert given.status_code == 200 and given.json()["estimates"][0]["seconds"] > 0
    batch = httpx.post(
        f"{strict}/v1/predict/batch", json={"jobs": [{"algorithm": "mafft", "params": {"input": "f1.fa"}}]}
    ).json()
    assert batch["results"][0]["error"]["status"] == 422 and "budget" in batch["results"][0]["error"]["detail"]


def head_status(base: str, header_bytes: int) -> bytes:
    """The status line answering one GET /healthz whose headers hold ``header_bytes`` bytes, sent over a raw socket."""
    host, port = base.removeprefix("http://").split(":")
    request = b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * header_bytes + b"\r\n\r\n"
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(request)
        answer = b""
        while b"\r\n" not in answer and (chunk := sock.recv(65536)):
            answer += chunk
    return answer.split(b"\r\n")[0]


@pytest.fixture(scope="module")
def process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``predictor serve`` as its own process, the way it runs in production (untrained home: fallbacks only)."""
    home = tmp_path_factory.mktemp("head") / "home"
    with serve_cli({"PREDICTOR_HOME": str(home), "PREDICTOR_API_RELOAD_INTERVAL_S": "0"}, PROJECT_ROOT) as url:
        yield url


def test_a_request_head_over_the_limit_is_refused_with_431_and_the_service_goes_on(process):
    assert head_status(process, 1 << 20) == b"HTTP/1.1 431 Request Header Fields Too Large"
    assert head_status(process, 16 << 10) == b"HTTP/1.1 200 OK"  # under the default 32 KiB
    assert httpx.get(f"{process}/healthz").status_code == 200
    big = httpx.get(f"{process}/healthz", headers={"x-big": "a" * (40 << 10)})
    assert big.status_code == 431 and "over the limit of 32768 bytes" in big.json()["detail"]


def _answer_within(sock: socket.socket, seconds: float, trickle: bytes = b"") -> tuple[bytes, float]:
    """What the server answers on ``sock`` within ``seconds`` (sending ``trickle`` every 0.2 s meanwhile), and when."""
    started, answer = time.monotonic(), b""
    while time.monotonic() - started < seconds and b"\r\n\r\n" not in answer:
        if select.select([sock], [], [], 0.2)[0]:
            if not (chunk := sock.recv(65536)):
                break
            answer += chunk
        elif trickle:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                sock.sendall(trickle)
    return answer, time.monotonic() - started


def test_a_request_head_that_trickles_in_or_never_comes_is_refused_with_408(tmp_path):
    """Issue 30, item 7: a head sent a header every 0.2 s, or a connection that sends nothing, is answered 408 once
    PREDICTOR_API_HEADER_TIMEOUT_S has passed; a head that arrives in time is served."""
    settings = Settings(home=tmp_path / "home")
    with serve_app(create_app(settings, api=ApiSettings(reload_interval_s=0, header_timeout_s=1.0))) as base:
        host, port = base.removeprefix("http://").split(":")
        with (
            socket.create_connection((host, int(port)), timeout=10) as slow,
            socket.create_connection((host, int(port)), timeout=10) as silent,
        ):
            slow.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n")
            answer, took = _answer_within(slow, 8.0, trickle=b"x-slow: a\r\n")
            assert (
                answer.startswith(b"HTTP/1.1 408 Request Timeout")
                and b"did not arrive within 1 s" in answer
                and took < 4
            )
            answer, took = _answer_within(silent, 8.0)
            assert answer.startswith(b"HTTP/1.1 408 Request Timeout") and took < 4
        with socket.create_connection((host, int(port)), timeout=10) as split:
            split.sendall(b"GET /healthz HTTP/1.1\r\n")
            time.sleep(0.3)
            split.sendall(b"host: x\r\n\r\n")
            assert _answer_within(split, 8.0)[0].startswith(b"HTTP/1.1 200 OK")
        assert httpx.get(f"{base}/healthz").status_code == 200
