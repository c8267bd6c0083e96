"""The Python client against the live service: domain types back, errors as PredictorError, observations recorded."""

from __future__ import annotations

import pytest

from predictor.client import PredictorClient, PredictorError
from predictor.domain import Measurement
from tests.livesrv import free_port
from tests.serving.conftest import TOKEN


def test_predict_batch_and_matrix(base, features_of):
    with PredictorClient(base) as client:
        estimates = client.predict("mafft", {"input": "f6.fa"}, coverage=0.8)
        assert set(estimates) == {"cpu1", "cpu2"} and estimates["cpu1"].seconds > 0 and estimates["cpu1"].coverage == 0.8
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
    run = Measurement(run_id="client-1", algorithm="mafft", platform="cpu1", wall_seconds=0.4, params={"retree": 2}, exit_status=1)
    with PredictorClient(base, token=TOKEN) as client:
        report = client.record([run, {"algorithm": "mafft", "platform": "gpu9", "wall_seconds": 1.0, "run_id": "client-2"}])
        assert report.stored == ["client-1"] and report.rejected[0]["field"] == "platform"
        assert client.record(run).duplicates == ["client-1"]
        assert client.reload()["source"] == "registry"


def test_a_dead_service_is_a_connection_error():
    with PredictorClient(f"http://127.0.0.1:{free_port()}", retries=0, timeout=2) as client, pytest.raises(Exception) as dead:
        client.predict("mafft")
    assert "connect" in type(dead.value).__name__.lower() or "refused" in str(dead.value).lower()
