"""The API through real HTTP: estimates per platform, catalog routes, and precise 4xx answers to bad input."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.trained import Home


@pytest.fixture(scope="module")
def served(base: str, trained: Home) -> tuple[str, Path]:
    return base, trained.inputs


def post(base: str, body: object, **kwargs) -> httpx.Response:
    return httpx.post(f"{base}/v1/predict", json=body, **kwargs)


def test_estimates_every_platform_with_model_and_features(served):
    base, _ = served
    body = post(base, {"algorithm": "mafft", "params": {"input": "f0.fa"}}).json()
    estimates = {e["platform"]: e for e in body["estimates"]}
    assert set(estimates) == {"cpu1", "cpu2"}
    for platform, e in estimates.items():
        assert e["model_name"] == f"runtime-mafft-{platform}" and e["model_version"] == "1" and e["flavor"] == "sklearn"
        assert e["seconds"] > 0 and not e["fallback"]
        assert e["features"]["input.sequences"] == 4
    assert estimates["cpu2"]["seconds"] < estimates["cpu1"]["seconds"]


def test_bigger_job_gets_longer_estimate(served):
    base, _ = served
    small = post(base, {"algorithm": "mafft", "params": {"input": "f0.fa"}, "platforms": ["cpu1"]}).json()
    large = post(base, {"algorithm": "mafft", "params": {"input": "f19.fa"}, "platforms": ["cpu1"]}).json()
    assert large["estimates"][0]["seconds"] > 5 * small["estimates"][0]["seconds"]


def test_precomputed_features_skip_file_reading(served):
    base, inputs = served
    features = post(base, {"algorithm": "mafft", "params": {"input": "f3.fa"}}).json()["estimates"][0]["features"]
    body = post(base, {"algorithm": "mafft", "features": features, "platforms": ["cpu1"]}).json()
    assert len(body["estimates"]) == 1 and body["estimates"][0]["seconds"] > 0


def test_platform_filter_and_unimplemented_algorithm_fallback(served):
    base, _ = served
    body = post(base, {"algorithm": "mafft", "params": {"input": "f1.fa"}, "platforms": ["cpu2"]}).json()
    assert [e["platform"] for e in body["estimates"]] == ["cpu2"]
    none = post(base, {"algorithm": "clustalo", "params": {"input": "f1.fa"}}).json()
    assert [e["platform"] for e in none["estimates"]] == ["cpu1", "cpu2"]
    for e in none["estimates"]:
        assert e["seconds"] is None and "no champion" in e["reason"] and "no measurements" in e["reason"]


def test_a_platform_that_cannot_run_the_algorithm_gets_its_reason_on_every_route(served):
    base, _ = served
    reason = "the catalog has no implementation of mafft on platform hpc2n"
    single = post(base, {"algorithm": "mafft", "params": {"input": "f0.fa"}, "platforms": ["hpc2n", "cpu1"]}).json()
    estimates = {e["platform"]: e for e in single["estimates"]}
    assert set(estimates) == {"hpc2n", "cpu1"} and estimates["cpu1"]["seconds"] > 0
    assert estimates["hpc2n"]["seconds"] is None and reason in estimates["hpc2n"]["reason"]
    alone = post(base, {"algorithm": "mafft", "features": {"input.sequences": 4.0}, "platforms": ["hpc2n"]}).json()
    assert [(e["platform"], e["seconds"]) for e in alone["estimates"]] == [("hpc2n", None)] and reason in alone[
        "estimates"
    ][0]["reason"]
    batch = httpx.post(
        f"{base}/v1/predict/batch",
        json={"jobs": [{"algorithm": "mafft", "params": {"input": "f0.fa"}, "platforms": ["hpc2n"]}]},
    )
    assert reason in batch.json()["results"][0]["estimates"][0]["reason"]
    matrix = httpx.post(
        f"{base}/v1/predict/matrix",
        json={"algorithm": "mafft", "columns": ["input.sequences"], "rows": [[4.0], [8.0]], "platforms": ["hpc2n"]},
    )
    (column,) = matrix.json()["estimates"]
    assert column["platform"] == "hpc2n" and column["seconds"] == [None, None] and reason in column["reason"]


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        ({"algorithm": "nope", "params": {}}, 404, "unknown algorithm 'nope'"),
        ({"algorithm": "mafft", "params": {"input": "f0.fa"}, "platforms": ["gpu9"]}, 404, "unknown platform"),
        ({"algorithm": "mafft", "params": {"input": "../home/store.db"}}, 403, "leads outside the data roots (inputs)"),
        ({"algorithm": "mafft", "params": {"input": "/etc/passwd"}}, 403, "leads outside the data roots (inputs)"),
        ({"algorithm": "mafft", "params": {"input": "escape.fa"}}, 403, "leads outside the data roots (inputs)"),
        (
            {"algorithm": "mafft", "params": {"input": "missing.fa"}},
            422,
            "no file (nor database prefix) 'missing.fa' under the data roots (inputs)",
        ),
        ({"algorithm": "mafft", "params": {"input": "x" * 300 + ".fa"}}, 422, "File name too long"),
        ({"algorithm": "mafft", "params": {"input": 42}}, 422, "must be a non-empty text path"),
        ({"algorithm": "mafft", "params": {"input": "junk.fa"}}, 422, "inputs/junk.fa"),
        ({"algorithm": "mafft", "params": {}}, 422, "required input file is missing"),
        ({"algorithm": "mafft", "params": {"input": "f0.fa", "colour": "red"}}, 422, "unknown parameter"),
        ({"algorithm": "mafft", "params": {"input": "f0.fa", "retree": 7}}, 422, "retree"),
        ({"algorithm": "mafft", "params": {"input": "f0.fa", "retree": "two"}}, 422, "retree"),
        ({"algorithm": "mafft", "params": {"input": "f0.fa"}, "surprise": 1}, 422, "surprise"),
        ({"algorithm": 5}, 422, "algorithm"),
        ({}, 422, "algorithm"),
    ],
)
def test_bad_input_gets_a_precise_4xx(served, body, status, fragment):
    base, inputs = served
    response = post(base, body)
    assert response.status_code == status, response.text
    assert fragment in response.text
    assert str(inputs.parent) not in response.text  # the data root is named, never placed


def test_a_bad_file_fails_only_its_own_job_of_a_batch(served):
    base, inputs = served
    jobs = [
        {"algorithm": "mafft", "params": {"input": "f0.fa"}},
        {"algorithm": "mafft", "params": {"input": "y" * 256}},
        {"algorithm": "mafft", "params": {"input": "missing.fa"}},
        {"algorithm": "mafft", "params": {"input": 7}},
    ]
    answer = httpx.post(f"{base}/v1/predict/batch", json={"jobs": jobs})
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    assert results[0]["estimates"] and [r["error"]["status"] for r in results[1:]] == [422, 422, 422]
    assert "too long" in results[1]["error"]["detail"] and "no file" in results[2]["error"]["detail"]
    assert str(inputs.parent) not in answer.text


def test_malformed_json_and_non_finite_features(served):
    base, _ = served
    raw = httpx.post(f"{base}/v1/predict", content=b"{not json", headers={"content-type": "application/json"})
    assert raw.status_code == 422
    nan = httpx.post(
        f"{base}/v1/predict",
        content=b'{"algorithm": "mafft", "features": {"input.sequences": NaN}}',
        headers={"content-type": "application/json"},
    )
    assert nan.status_code == 422, nan.text


def test_catalog_routes(served):
    base, _ = served
    algorithms = {a["name"]: a for a in httpx.get(f"{base}/v1/algorithms").json()}
    assert algorithms["mafft"]["platforms"] == ["cpu1", "cpu2"]
    assert any(p["type"] == "file" and p["extractor"] == "fasta" for p in algorithms["mafft"]["parameters"])
    platforms = {p["name"]: p for p in httpx.get(f"{base}/v1/platforms").json()}
    assert platforms["cpu1"]["cores"] == 1 and platforms["cpu2"]["kind"] == "cpu"
    models = httpx.get(f"{base}/v1/models").json()
    assert {(m["algorithm"], m["platform"]) for m in models} == {("mafft", "cpu1"), ("mafft", "cpu2")}
    assert all("rae" in m["metrics"] and m["features"] for m in models)
    assert httpx.get(f"{base}/healthz").json() == {"status": "ok"}
    ready = httpx.get(f"{base}/readyz").json()
    assert ready["champions"] == 2 and ready["status"] == "ready" and ready["source"] == "registry"
