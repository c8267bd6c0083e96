"""The Python client against the live service: domain types back, errors as PredictorError, observations recorded."""

from __future__ import annotations

import pytest

from predictor.domain import Measurement
from serving.client import PredictorClient, PredictorError
from tests.livesrv import free_port
from tests.trained import TOKEN


def test_predict_batch_and_matrix(base, features_of):
    with PredictorClient(base) as client:
        estimates = client.predict("mafft", {"input": "f6.fa"}, coverage=0.8)
        assert (
            set(estimates) == {"cpu1", "cpu2"} and estimates["cpu1"].seconds > 0 and estimates["cpu1"].coverage == 0.8
        )
        batch = client.predict_batch([{"algorithm": "mafft", "params": {"input": "f6.fa"}}, {"algorithm": "nope"}])
        assert batch[0]["cpu2"].seconds == pytest.approx(estimates["cpu2"].seconds)
        assert isinstance(batch[1], PredictorError) and batch[1].status_code == 404
        names = sorted(features_of("f6.fa"))
        columns = client.predict_matrix("mafft", names, [[features_of("f6.fa")[n] for n in names]], platforms=["cpu1"])
        assert columns["cpu1"]["seconds"][0] == pytest.approx(estimates["cpu1"].seconds)
        assert {m["platform"] for m in client.models()} == {"cpu1", "cpu2"}
        assert client.ready()["status"] == "ready" and client.algorithms() and client.platforms()


def test_errors_carry_status_and_detail(base):
    with PredictorClient(base) as client:
        with pytest.raises(PredictorError) as unknown:
            client.predict("nope")
        assert unknown.value.status_code == 404 and "unknown algorithm" in unknown.value.detail
        with pytest.raises(PredictorError) as outside:
            client.predict("mafft", {"input": "/etc/passwd"})
        assert outside.value.status_code == 403
        with pytest.raises(PredictorError) as no_token:
            client.reload()
        assert no_token.value.status_code == 401


def test_record_observations_with_the_token(base):
    # A failed run: stored, but left out of the profile table other tests read fallbacks from.
    run = Measurement(
        run_id="client-1", algorithm="mafft", platform="cpu1", wall_seconds=0.4, params={"retree": 2}, exit_status=1
    )
    with PredictorClient(base, token=TOKEN) as client:
        report = client.record(
            [run, {"algorithm": "mafft", "platform": "gpu9", "wall_seconds": 1.0, "run_id": "client-2"}]
        )
        assert report.stored == ["client-1"] and report.rejected[0]["field"] == "platform"
        assert client.record(run).duplicates == ["client-1"]
        assert client.reload()["source"] == "registry"


def test_a_dead_service_is_a_connection_error():
    with (
        PredictorClient(f"http://127.0.0.1:{free_port()}", retries=0, timeout=2) as client,
        pytest.raises(Exception) as dead,
    ):
        client.predict("mafft")
    assert "connect" in type(dead.value).__name__.lower() or "refused" in str(dead.value).lower()


def test_the_scheduler_through_the_client(base, features_of):
    features = features_of("f3.fa")
    with PredictorClient(base, token=TOKEN) as client:
        assert client.machine_event("cl-fast", "gained", platform="cpu2") == []
        submitted = client.submit(
            [{"id": f"cl-{i}", "algorithm": "mafft", "features": features, "platforms": ["cpu2"]} for i in range(3)]
            + [{"id": "cl-bad", "algorithm": "mafft", "params": {"input": "missing.fa"}}]
        )
        assert [j["id"] for j in submitted["jobs"]] == ["cl-0", "cl-1", "cl-2"]
        assert submitted["rejected"][0]["id"] == "cl-bad" and submitted["rejected"][0]["status"] == 422
        assert client.job("cl-0")["status"] == "running" and client.job("cl-1")["planned_machine"] == "cl-fast"
        first = client.jobs(["pending"], limit=1)
        assert [j["id"] for j in first["jobs"]] == ["cl-1"]
        second = client.jobs(["pending"], after=first["cursor"], limit=1)
        assert [j["id"] for j in second["jobs"]] == ["cl-2"]
        assert client.jobs("pending", after=second["cursor"])["jobs"] == []
        assert {j["id"] for j in client.jobs(["pending", "running"])["jobs"]} >= {"cl-0", "cl-1", "cl-2"}
        orders = client.orders(machine="cl-fast")
        assert [(o["kind"], o["job"]) for o in orders["orders"]] == [("start", "cl-0")] and orders["cursor"] == orders[
            "orders"
        ][-1]["seq"]
        assert [(o["kind"], o["job"]) for o in client.job_event("cl-0", "ended", machine="cl-fast")] == [
            ("start", "cl-1")
        ]
        assert client.job("cl-0")["status"] == "done"
        assert client.orders(after=orders["cursor"], machine="cl-fast")["orders"][0]["job"] == "cl-1"
        with pytest.raises(PredictorError) as unknown:
            client.job("no-such-job")
        assert unknown.value.status_code == 404
        with pytest.raises(PredictorError) as lost:
            client.machine_event("never-seen", "lost")
        assert lost.value.status_code == 404 and "unknown machine" in lost.value.detail
    with PredictorClient(base) as anonymous, pytest.raises(PredictorError) as no_token:
        anonymous.submit({"algorithm": "mafft", "features": features})
    assert no_token.value.status_code == 401
