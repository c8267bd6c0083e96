"""Issue 30, item 7 (the API's part): numbers that are booleans, served intervals out of order and feature names no
extractor gives are refused with a 422 saying which field, and nothing of them is stored (on SQLite and PostgreSQL)."""

from __future__ import annotations

import httpx
import pytest

from tests.serving.test_observations import AUTH, mine, post, run, service, tag  # noqa: F401 - fixtures used by name

pytestmark = pytest.mark.usefixtures("service")


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/jobs", {"algorithm": "mafft", "params": {"input": "f1.fa"}, "priority": True}, "priority"),
        ("/v1/jobs", {"algorithm": "mafft", "params": {"input": "f1.fa"}, "size": True}, "size"),
        ("/v1/jobs", {"algorithm": "mafft", "params": {"input": "f1.fa"}, "deadline": True}, "deadline"),
        ("/v1/machines/m-strict/events", {"event": "gained", "platform": "cpu1", "slots": True}, "slots"),
        ("/v1/predict", {"algorithm": "mafft", "features": {"input.sequences": True}}, "features"),
    ],
)
def test_booleans_are_not_numbers(service, path: str, body: dict, field: str) -> None:  # noqa: F811
    base, _ = service
    answer = httpx.post(f"{base}{path}", json=body, headers=AUTH, timeout=60)
    assert answer.status_code == 422, answer.text
    assert field in answer.json()["detail"]


@pytest.mark.parametrize(
    ("served", "message"),
    [
        ({"seconds": 5.0, "lower": 9.0, "upper": 2.0}, "lower (9) is above seconds (5)"),
        ({"seconds": 5.0, "lower": 1.0, "upper": 2.0}, "seconds (5) is above upper (2)"),
        ({"seconds": 5.0, "upper": 8.0, "limit": 6.0}, "upper (8) is above limit (6)"),
    ],
)
def test_a_served_estimate_out_of_order_is_refused(service, tag, served: dict, message: str) -> None:  # noqa: F811
    base, store = service
    answer = post(base, run(f"{tag}{message}", served=served, features={"input.sequences": 4.0}))
    assert answer.status_code == 422 and message in answer.json()["detail"], answer.text
    assert f"{tag}{message}" not in mine(store, tag)
    ordered = {"seconds": 5.0, "lower": 4.0, "upper": 6.0, "limit": 7.0}
    assert post(base, run(f"{tag}ordered", served=ordered, features={"input.sequences": 4.0})).status_code == 200


def test_feature_names_the_algorithm_does_not_have_are_refused(service, tag) -> None:  # noqa: F811
    """1,000 made-up names were stored and widened every export; now the observation is rejected, naming a few."""
    base, store = service
    junk = {f"junk{i:04d}": 1.0 for i in range(999)}
    answer = post(
        base,
        [
            run(f"{tag}junk", features={"input.sequences": 4.0, **junk}),
            run(f"{tag}good", features={"input.sequences": 4.0}),
        ],
    )
    assert answer.status_code == 200, answer.text
    (rejected,) = answer.json()["rejected"]
    assert (rejected["index"], rejected["field"]) == (0, "features")
    assert rejected["message"].startswith(
        "unknown feature(s) junk0000, junk0001, junk0002, junk0003, junk0004 and 994 more; known: "
    )
    assert "input.sequences" in rejected["message"] and len(rejected["message"]) < 1000
    assert mine(store, tag) == [f"{tag}good"]
    assert {m.run_id: set(m.features) for m in store.measurements() if m.run_id.startswith(tag)} == {
        f"{tag}good": {"input.sequences"}
    }
