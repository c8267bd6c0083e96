"""Operations: request ids, structured logs, Prometheus metrics, readiness, the models route, the OpenAPI document."""

from __future__ import annotations

import io
import json
import logging
import re
import tomllib
from importlib import metadata

import httpx
import pytest

from predictor.settings import PROJECT_ROOT
from serving.app import create_app
from serving.telemetry import LOGGER_NAME, JsonFormatter
from tests.livesrv import serve_app


@pytest.fixture
def log_lines():
    """The service's JSON log lines written while the test runs."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger(LOGGER_NAME)
    logger.addHandler(handler)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    logger.removeHandler(handler)


def test_every_answer_has_a_request_id_and_a_json_log_line(base, log_lines):
    given = httpx.get(f"{base}/v1/platforms", headers={"x-request-id": "sched-42.a"})
    made = httpx.post(f"{base}/v1/predict", json={"algorithm": "nope"})
    odd = httpx.get(f"{base}/healthz", headers={"x-request-id": "spaces are not ok"})
    assert given.headers["x-request-id"] == "sched-42.a"
    assert made.headers["x-request-id"] and odd.headers["x-request-id"] != "spaces are not ok"
    lines = {line["request_id"]: line for line in log_lines() if line["event"] == "request"}
    assert lines["sched-42.a"]["route"] == "/v1/platforms" and lines["sched-42.a"]["status"] == 200
    failed = lines[made.headers["x-request-id"]]
    assert failed["status"] == 404 and failed["method"] == "POST" and failed["duration_ms"] >= 0
    assert {"ts", "level", "logger", "path"} <= set(failed)


def test_metrics_count_requests_per_route_and_predictions_per_model(base):
    httpx.post(f"{base}/v1/predict", json={"algorithm": "mafft", "params": {"input": "f4.fa"}})
    httpx.get(f"{base}/no/such/route")
    text = httpx.get(f"{base}/metrics").text
    assert 'predictor_http_requests_total{method="POST",route="/v1/predict",status="200"}' in text
    assert 'predictor_http_requests_total{method="GET",route="unmatched",status="404"}' in text
    assert 'predictor_http_request_duration_seconds_bucket{le="0.005",method="POST",route="/v1/predict"}' in text
    assert 'predictor_predictions_total{model="runtime-mafft-cpu1",version="1"}' in text
    assert "predictor_champions 2.0" in text and "predictor_registry_up 1.0" in text


def test_readiness_and_the_models_route(base):
    ready = httpx.get(f"{base}/readyz").json()
    assert ready["status"] == "ready" and ready["source"] == "registry" and ready["registry_error"] is None
    models = {m["platform"]: m for m in httpx.get(f"{base}/v1/models").json()}
    assert set(models) == {"cpu1", "cpu2"}
    for m in models.values():
        assert m["model_kind"] == "linear_log" and m["prediction_path"] == "fast" and m["origin"] == "registry"
        assert m["intervals"] and m["registered_at"] and m["fit_seconds"] > 0 and m["metrics"]["rae"] >= 0


def test_openapi_documents_every_route_with_examples(base):
    spec = httpx.get(f"{base}/openapi.json").json()
    routes = {(path, method) for path, item in spec["paths"].items() for method in item}
    assert {
        ("/v1/predict", "post"),
        ("/v1/predict/batch", "post"),
        ("/v1/predict/matrix", "post"),
        ("/v1/observations", "post"),
        ("/v1/algorithms", "get"),
        ("/v1/platforms", "get"),
        ("/v1/models", "get"),
        ("/v1/models/reload", "post"),
        ("/healthz", "get"),
        ("/readyz", "get"),
        ("/metrics", "get"),
    } <= routes
    schemas = spec["components"]["schemas"]
    for name in ("SinglePredictRequest", "BatchPredictRequest", "MatrixPredictRequest", "ObservationIn"):
        assert schemas[name].get("examples"), name
    for name in (
        "PredictResponse",
        "BatchPredictResponse",
        "MatrixPredictResponse",
        "ObservationsResponse",
        "ModelOut",
        "AlgorithmOut",
        "PlatformOut",
        "ReadyOut",
        "ReloadResponse",
    ):
        assert schemas[name].get("examples"), name
    secured = spec["paths"]["/v1/observations"]["post"]
    assert secured["security"] and "401" in secured["responses"] and "413" in secured["responses"]


def test_an_unexpected_error_is_a_logged_json_500_with_the_request_id(trained, log_lines):
    app = create_app(trained.settings, api=trained.api)

    def boom() -> None:
        raise RuntimeError("kaboom")

    app.add_api_route("/boom", boom)
    with serve_app(app) as url:
        response = httpx.get(f"{url}/boom", headers={"x-request-id": "trace-7"})
    assert response.status_code == 500
    assert response.json() == {"detail": "internal error", "request_id": "trace-7"}
    logged = [line for line in log_lines() if line.get("request_id") == "trace-7"]
    assert any(line["event"] == "unhandled error" and "kaboom" in line["exception"] for line in logged)
    assert any(line["event"] == "request" and line["status"] == 500 for line in logged)


def test_the_docs_page_and_its_assets_come_from_the_service_itself(base):
    page = httpx.get(f"{base}/docs")
    assert page.status_code == 200 and "SwaggerUIBundle" in page.text
    assert "://" not in page.text  # no absolute URL: nothing comes from another host
    assets = re.findall(r'(?:src|href)="([^"]+)"', page.text) + re.findall(r"url: '([^']+)'", page.text)
    assert len(assets) == 4, assets  # css, favicon, script, the OpenAPI document
    for asset in assets:
        assert asset.startswith("/") and not asset.startswith("//"), asset
        answer = httpx.get(f"{base}{asset}")
        assert answer.status_code == 200 and len(answer.content) > 100, asset
    assert (
        httpx.get(f"{base}/docs-assets/swagger-ui-bundle.js")
        .headers["content-type"]
        .startswith(("text/javascript", "application/javascript"))
    )
    assert httpx.get(f"{base}/redoc").status_code == 404  # ReDoc only exists on a CDN: not offered


def test_the_api_reports_the_installed_package_version(base):
    declared = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert declared == "0.2.0"
    assert (
        httpx.get(f"{base}/openapi.json").json()["info"]["version"] == metadata.version("runtime-predictor") == declared
    )
