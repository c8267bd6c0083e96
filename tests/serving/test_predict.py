"""Estimates with intervals and limits, per-call options, batches (jobs and matrix forms) and answers that stay finite."""

from __future__ import annotations

import json
import math
import statistics

import httpx
import pytest
from pydantic import ValidationError

from predictor.settings import Settings
from predictor.walltime import slurm_walltime
from serving.schemas.predict import BatchPredictRequest, MatrixPredictRequest, SinglePredictRequest


def predict(base: str, body: dict) -> httpx.Response:
    return httpx.post(f"{base}/v1/predict", json=body)


def test_estimates_carry_an_interval_and_a_walltime_limit(base):
    body = predict(base, {"algorithm": "mafft", "params": {"input": "f7.fa"}}).json()
    assert [e["platform"] for e in body["estimates"]] == ["cpu1", "cpu2"]
    for e in body["estimates"]:
        assert e["coverage"] == 0.9 and e["limit_quantile"] == 0.95
        assert 0 < e["lower"] < e["seconds"] < e["upper"] < e["limit"] or 0 < e["lower"] <= e["seconds"] <= e["limit"]
        assert e["lower"] <= e["upper"]


def test_estimates_give_seconds_and_limit_as_slurm_walltimes(base):
    body = predict(base, {"algorithm": "mafft", "params": {"input": "f7.fa"}}).json()
    batch = httpx.post(
        f"{base}/v1/predict/batch", json={"jobs": [{"algorithm": "mafft", "params": {"input": "f7.fa"}}]}
    ).json()
    estimates = body["estimates"] + batch["results"][0]["estimates"]
    assert len(estimates) == 4
    for e in estimates:
        assert e["walltime"] == slurm_walltime(e["seconds"]) and e["limit_walltime"] == slurm_walltime(e["limit"])
    schema = httpx.get(f"{base}/openapi.json").json()["components"]["schemas"]["EstimateOut"]["properties"]
    assert {"walltime", "limit_walltime"} <= set(schema)


def test_coverage_and_limit_quantile_can_be_asked_per_call(base):
    job = {"algorithm": "mafft", "params": {"input": "f7.fa"}, "platforms": ["cpu1"]}
    default = predict(base, job).json()["estimates"][0]
    wide = predict(base, {**job, "coverage": 0.98, "limit_quantile": 0.99}).json()["estimates"][0]
    assert wide["coverage"] == 0.98 and wide["limit_quantile"] == 0.99
    assert wide["seconds"] == pytest.approx(default["seconds"])
    assert wide["lower"] <= default["lower"] and wide["upper"] >= default["upper"] and wide["limit"] >= default["limit"]


@pytest.mark.parametrize(
    "option",
    [
        {"coverage": 0},
        {"coverage": 1},
        {"limit_quantile": 1.5},
        {"coverage": "wide"},
        {"coverage": "0.5"},
        {"limit_quantile": "0.5"},
        {"memory_limit_quantile": "0.5"},
    ],
)
def test_bad_interval_options_are_422(base, option):
    response = predict(base, {"algorithm": "mafft", "params": {"input": "f7.fa"}, **option})
    assert response.status_code == 422, response.text


@pytest.mark.parametrize("name", ["coverage", "limit_quantile", "memory_limit_quantile"])
@pytest.mark.parametrize("model", [SinglePredictRequest, BatchPredictRequest, MatrixPredictRequest])
def test_interval_options_are_json_numbers_not_text(name, model):
    """Issue 41: docs/api.md documents numbers; the text "0.5" is refused (from JSON and from Python alike)."""
    body = {"algorithm": "mafft", "jobs": [{"algorithm": "mafft"}], "columns": ["a"], "rows": [[1.0]]}
    fields = set(model.model_fields)
    body = {key: value for key, value in body.items() if key in fields}
    assert model.model_validate({**body, name: 0.5}).model_dump()[name] == 0.5
    with pytest.raises(ValidationError):
        model.model_validate_json(json.dumps({**body, name: "0.5"}))
    with pytest.raises(ValidationError):
        model.model_validate({**body, name: "0.5"})


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/predict", {"algorithm": "mafft", "params": {"input": "f7.fa"}}),
        ("/v1/predict/batch", {"jobs": [{"algorithm": "mafft", "params": {"input": "f7.fa"}}]}),
        ("/v1/predict/matrix", {"algorithm": "mafft", "columns": ["input.sequences"], "rows": [[4.0]]}),
    ],
)
def test_coverage_next_to_one_is_a_422_on_every_predict_route_and_the_bound_itself_answers(base, path, body):
    # (1 + 0.9999999999999999) / 2 rounds to 1.0: there is no interval level for it
    refused = httpx.post(f"{base}{path}", json={**body, "coverage": 0.9999999999999999})
    assert refused.status_code == 422 and "coverage" in refused.text, refused.text
    bound = httpx.post(f"{base}{path}", json={**body, "coverage": 0.999999})
    assert bound.status_code == 200, bound.text


def test_the_service_default_coverage_has_the_same_bound():
    with pytest.raises(ValidationError, match="interval_coverage"):
        Settings(interval_coverage=0.9999999999999999)
    assert Settings(interval_coverage=0.999999).interval_coverage == 0.999999


def test_features_plus_parameters_match_the_file_path(base, features_of):
    from_file = predict(
        base, {"algorithm": "mafft", "params": {"input": "f5.fa", "retree": 1}, "platforms": ["cpu1"]}
    ).json()
    given = {k: v for k, v in features_of("f5.fa").items() if k.startswith("input.")}
    from_features = predict(
        base, {"algorithm": "mafft", "params": {"retree": 1}, "features": given, "platforms": ["cpu1"]}
    ).json()
    assert from_features["estimates"][0]["seconds"] == pytest.approx(from_file["estimates"][0]["seconds"])


def test_missing_features_fall_back_with_the_reason(base):
    body = predict(base, {"algorithm": "mafft", "features": {"input.sequences": 4.0}, "platforms": ["cpu1"]}).json()
    e = body["estimates"][0]
    assert "features missing for the model" in e["reason"] and "input.bytes" in e["reason"]
    assert e["fallback"] and e["model_name"] == "profile-table" and "median of 20 measured runs" in e["reason"]
    assert e["seconds"] == pytest.approx(
        statistics.median(0.05 + 2e-6 * n * n * m for n in (4, 8, 16, 32, 48) for m in (50, 100, 200, 400))
    )


def test_huge_features_never_give_a_500(base, features_of):
    features = dict.fromkeys(features_of("f1.fa"), 1e308)
    response = predict(base, {"algorithm": "mafft", "features": features})
    assert response.status_code == 200, response.text
    for e in response.json()["estimates"]:
        assert e["seconds"] is None or math.isfinite(e["seconds"])


def test_batch_answers_each_job_or_says_why_not(base, features_of):
    jobs = [
        {"algorithm": "mafft", "params": {"input": "f2.fa"}},
        {"algorithm": "nope"},
        {"algorithm": "mafft", "params": {"input": "/etc/passwd"}},
        {"algorithm": "mafft", "features": features_of("f9.fa"), "platforms": ["cpu2"]},
        {"algorithm": "mafft", "params": {"input": "junk.fa"}},
        {"algorithm": "mafft", "params": {"input": "f2.fa"}, "platforms": ["gpu9"]},
    ]
    response = httpx.post(f"{base}/v1/predict/batch", json={"jobs": jobs, "coverage": 0.8})
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert [r["index"] for r in results] == list(range(len(jobs)))
    assert [e["platform"] for e in results[0]["estimates"]] == ["cpu1", "cpu2"]
    assert results[0]["estimates"][0]["coverage"] == 0.8
    assert [r["error"]["status"] if r["error"] else 200 for r in results] == [200, 404, 403, 200, 422, 404]
    assert "unknown algorithm 'nope'" in results[1]["error"]["detail"] and "junk.fa" in results[4]["error"]["detail"]
    single = predict(base, {"algorithm": "mafft", "params": {"input": "f2.fa"}, "coverage": 0.8}).json()["estimates"]
    _same_answer(results[0]["estimates"], single)


def _same_answer(batched: list[dict], alone: list[dict]) -> None:
    """Estimates of one job from a batch and alone agree: fields exactly, numbers to the last bits (BLAS blocks differ)."""
    numbers = ("seconds", "lower", "upper", "limit", "memory", "memory_lower", "memory_upper", "memory_limit")
    assert [e["platform"] for e in batched] == [e["platform"] for e in alone]
    for b, a in zip(batched, alone, strict=True):
        assert {k: v for k, v in b.items() if k not in numbers} == {k: v for k, v in a.items() if k not in numbers}
        assert [b[k] is None for k in numbers] == [a[k] is None for k in numbers]
        assert [b[k] for k in numbers if a[k] is not None] == pytest.approx(
            [a[k] for k in numbers if a[k] is not None], rel=1e-12
        )


def test_alike_jobs_of_a_batch_get_the_answers_they_would_get_alone(base, features_of):
    small, large = features_of("f3.fa"), features_of("f17.fa")
    far = {**large, "input.sequences": large["input.sequences"] * 50}  # beyond the trained range: the power law answers
    jobs = [
        {"algorithm": "mafft", "features": small},
        {"algorithm": "mafft", "features": far},
        {"algorithm": "mafft", "features": large, "platforms": ["cpu2", "hpc2n"]},
        {"algorithm": "mafft", "features": {"x": 1.0}},  # none of the model's features: the profile table answers
        {"algorithm": "mafft", "features": dict(reversed(small.items()))},  # the same features in another order
        {"algorithm": "mafft", "features": large, "params": {"retree": 9}},  # a parameter the catalog does not know
        {"algorithm": "mafft", "features": small, "platforms": ["gpu9"]},
        {"algorithm": "mafft", "features": small, "params": {"input": "f3.fa"}},
        {"algorithm": "mafft", "features": large},
    ]
    response = httpx.post(f"{base}/v1/predict/batch", json={"jobs": jobs, "coverage": 0.7})
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert [r["index"] for r in results] == list(range(len(jobs)))
    assert any(e["extrapolating"] for e in results[1]["estimates"]) and results[3]["estimates"][0]["fallback"]
    for job, result in zip(jobs, results, strict=True):
        alone = predict(base, {**job, "coverage": 0.7})
        if alone.status_code != 200:
            assert result["estimates"] is None and result["error"] == {
                "status": alone.status_code,
                "detail": alone.json()["detail"],
            }
            continue
        assert result["error"] is None
        _same_answer(result["estimates"], alone.json()["estimates"])


def test_a_batch_answers_only_the_fields_asked(base, features_of):
    jobs = [
        {"algorithm": "mafft", "features": features_of("f5.fa")},
        {"algorithm": "mafft", "params": {"input": "f5.fa"}},
    ]
    full = httpx.post(f"{base}/v1/predict/batch", json={"jobs": jobs}).json()["results"]
    lean = httpx.post(f"{base}/v1/predict/batch", json={"jobs": jobs, "fields": ["limit"]}).json()["results"]
    assert full[0]["estimates"] and lean[0]["estimates"]
    for whole, limited in zip(full, lean, strict=True):
        kept = (
            "platform",
            "seconds",
            "limit",
            "walltime",
            "limit_walltime",
            "memory_slurm",
            "memory_limit_slurm",
        )  # the Slurm strings are required
        assert [set(e) for e in limited["estimates"]] == [set(kept)] * 2
        assert [{k: e[k] for k in kept} for e in whole["estimates"]] == limited["estimates"]
    refused = httpx.post(f"{base}/v1/predict/batch", json={"jobs": jobs, "fields": ["secret"]})
    assert refused.status_code == 422


def test_matrix_answers_columns_equal_to_single_predictions(base, features_of):
    names = sorted(features_of("f3.fa"))
    rows = [[features_of(f"f{i}.fa")[n] for n in names] for i in (3, 11, 17)]
    body = httpx.post(f"{base}/v1/predict/matrix", json={"algorithm": "mafft", "columns": names, "rows": rows}).json()
    assert body["rows"] == 3 and [e["platform"] for e in body["estimates"]] == ["cpu1", "cpu2"]
    for e in body["estimates"]:
        singles = [
            predict(
                base,
                {"algorithm": "mafft", "features": dict(zip(names, row, strict=True)), "platforms": [e["platform"]]},
            ).json()["estimates"][0]
            for row in rows
        ]
        assert e["seconds"] == pytest.approx([s["seconds"] for s in singles])
        assert e["limit"] == pytest.approx([s["limit"] for s in singles])
        assert e["model_version"] == "1" and e["coverage"] == 0.9


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        (
            {"algorithm": "mafft", "columns": ["a", "b"], "rows": [[1.0]]},
            422,
            "row 0 has 1 values but there are 2 columns",
        ),
        ({"algorithm": "mafft", "columns": ["a", "a"], "rows": [[1.0, 2.0]]}, 422, "distinct"),
        ({"algorithm": "mafft", "columns": ["a"], "rows": []}, 422, "rows"),
        ({"algorithm": "nope", "columns": ["a"], "rows": [[1.0]]}, 404, "unknown algorithm"),
        ({"algorithm": "mafft", "columns": ["a"], "rows": [[1.0]], "platforms": ["x"]}, 404, "unknown platform"),
        ({"algorithm": "mafft", "columns": ["a"], "rows": [[1.0]], "params": {"retree": 9}}, 422, "retree"),
    ],
)
def test_bad_matrices_get_a_precise_4xx(base, body, status, fragment):
    response = httpx.post(f"{base}/v1/predict/matrix", json=body)
    assert response.status_code == status, response.text
    assert fragment in response.text


def test_matrix_without_the_model_features_falls_back_for_every_row(base):
    body = httpx.post(
        f"{base}/v1/predict/matrix", json={"algorithm": "mafft", "columns": ["x"], "rows": [[1.0], [2.0]]}
    ).json()
    assert [e["platform"] for e in body["estimates"]] == ["cpu1", "cpu2"]
    for e in body["estimates"]:
        assert e["fallback"] and e["seconds"][0] == e["seconds"][1] > 0 and "features missing: " not in e["reason"]
        assert "features missing for the model" in e["reason"] and e["model_name"] == "profile-table"
