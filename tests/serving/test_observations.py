"""Observations through HTTP: the token, validation as ``predictor ingest`` does it, idempotence, concurrency on both stores."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest

from predictor.store import MeasurementStore
from serving.app import create_app
from tests.livesrv import serve_app
from tests.trained import TOKEN, Home

AUTH = {"authorization": f"Bearer {TOKEN}"}


def run(run_id: str | None = None, **fields) -> dict:
    record = {"algorithm": "mafft", "platform": "cpu1", "wall_seconds": 1.25, "params": {"retree": 1}, **fields}
    if run_id is not None:
        record["run_id"] = run_id
    return record


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def service(
    request: pytest.FixtureRequest, trained: Home, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, MeasurementStore]]:
    """An API over an empty store on each backend (the registry of ``trained``), and that store to check what landed."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('observations') / 'store.db'}"
    else:
        server = request.getfixturevalue("postgres_server")
        url = server.url(server.create_database())
    settings = trained.settings.model_copy(update={"store_url": url})
    store = MeasurementStore(url)
    with serve_app(create_app(settings, api=trained.api)) as base:
        yield base, store
    store.dispose()


@pytest.fixture
def tag(request: pytest.FixtureRequest) -> str:
    """A run-id prefix of this test, so tests sharing a store never see each other's runs."""
    return request.node.name.split("[")[0].removeprefix("test_")[:24] + "-"


def post(base: str, body: object, headers: dict[str, str] | None = AUTH) -> httpx.Response:
    return httpx.post(f"{base}/v1/observations", json=body, headers=headers, timeout=60)


def mine(store: MeasurementStore, tag: str) -> list[str]:
    """Run ids of this test's stored observations."""
    return sorted(m.run_id for m in store.measurements(successful_only=False) if m.run_id.startswith(tag))


def test_one_or_many_are_stored_once_and_repeats_are_duplicates(service, tag):
    base, store = service
    first = post(base, run(f"{tag}1"))
    assert first.status_code == 200 and first.json() == {"stored": [f"{tag}1"], "duplicates": [], "rejected": []}
    again = post(base, [run(f"{tag}1"), run(f"{tag}2"), run(f"{tag}2")]).json()
    assert again["stored"] == [f"{tag}2"] and sorted(again["duplicates"]) == [f"{tag}1", f"{tag}2"]
    assert mine(store, tag) == [f"{tag}1", f"{tag}2"]
    stored = {m.run_id: m for m in store.measurements()}
    assert stored[f"{tag}1"].params == {"retree": 1} and stored[f"{tag}1"].source.value == "production"


def test_rejected_observations_say_which_field_and_why_and_the_rest_is_stored(service, tag):
    base, store = service
    body = [
        run(f"{tag}ok"),
        run(f"{tag}p", platform="gpu9"),
        run(f"{tag}a", algorithm="blast"),
        run(f"{tag}r", params={"retree": 7}),
        run(f"{tag}u", params={"colour": "red"}),
        run(f"{tag}c", platform="cpu2", cache_state="warm", context={"load": 0.5}),
    ]
    response = post(base, body)
    assert response.status_code == 200, response.text
    report = response.json()
    assert sorted(report["stored"]) == [f"{tag}c", f"{tag}ok"]
    rejected = {r["run_id"].removeprefix(tag): (r["index"], r["field"]) for r in report["rejected"]}
    assert rejected == {"p": (1, "platform"), "a": (2, "algorithm"), "r": (3, "param.retree"), "u": (4, "param.colour")}
    assert "unknown platform 'gpu9'" in report["rejected"][0]["message"]
    assert mine(store, tag) == [f"{tag}c", f"{tag}ok"]


def test_all_rejected_is_422_with_the_reasons(service, tag):
    base, store = service
    response = post(base, [run(f"{tag}x", platform="gpu9")])
    assert response.status_code == 422
    assert response.json()["rejected"][0]["field"] == "platform" and mine(store, tag) == []


def test_run_id_is_derived_from_the_content_when_absent(service, tag):
    base, _ = service
    first = post(base, run(None, wall_seconds=2.5, machine=tag)).json()
    second = post(base, run(None, wall_seconds=2.5, machine=tag)).json()
    assert len(first["stored"]) == 1 and first["stored"][0].startswith("ingest-")
    assert second == {"stored": [], "duplicates": first["stored"], "rejected": []}


def test_a_censored_observation_is_stored_as_a_bound_and_counted(service, tag):
    base, store = service
    before = store.count(informative_only=True)
    response = post(base, [run(f"{tag}killed", wall_seconds=600.0, exit_status=137, censored=True), run(f"{tag}done")])
    assert response.status_code == 200 and sorted(response.json()["stored"]) == [f"{tag}done", f"{tag}killed"]
    stored = {m.run_id: m for m in store.measurements(with_censored=True) if m.run_id.startswith(tag)}
    assert (
        stored[f"{tag}killed"].censored
        and stored[f"{tag}killed"].wall_seconds == 600.0
        and not stored[f"{tag}done"].censored
    )
    assert store.count(informative_only=True) == before + 2
    zero = post(base, run(f"{tag}zero", wall_seconds=0.0, censored=True))
    assert zero.status_code == 422 and zero.json()["rejected"][0]["field"] == "censored"
    assert "wall_seconds > 0" in zero.json()["rejected"][0]["message"] and mine(store, tag) == [
        f"{tag}done",
        f"{tag}killed",
    ]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (run("n", wall_seconds=-1), "wall_seconds"),
        (run("n", wall_seconds="slow"), "wall_seconds"),
        (run("n", exit_status=2**40), "exit_status"),
        (run("a\x00b"), "run_id"),
        (run("n", context={"k": "bad\x00"}), "NUL"),
        (run("n", surprise=1), "surprise"),
        (run("n", cache_state="tepid"), "cache_state"),
        (run("n", censored="yes"), "censored"),
        (run("n", censored=1), "censored"),
        ([run("n"), 5], "body.1"),
        ({"algorithm": "mafft"}, "wall_seconds"),
        ([], "no observations"),
        ("not an object", "body"),
    ],
)
def test_malformed_payloads_are_422_and_store_nothing(service, body, fragment):
    base, store = service
    before = store.count()
    response = post(base, body)
    assert response.status_code == 422, response.text
    assert fragment in response.json()["detail"]
    assert store.count() == before


def test_nan_and_infinity_are_422(service):
    base, store = service
    before = store.count()
    for number in (b"NaN", b"Infinity", b"-Infinity"):
        raw = b'{"algorithm": "mafft", "platform": "cpu1", "wall_seconds": ' + number + b"}"
        response = httpx.post(
            f"{base}/v1/observations", content=raw, headers={**AUTH, "content-type": "application/json"}
        )
        assert response.status_code == 422, response.text
    assert store.count() == before


def test_the_token_is_required(service, tag, trained):
    base, store = service
    assert post(base, run(f"{tag}t"), headers=None).status_code == 401
    wrong = post(base, run(f"{tag}t"), headers={"authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
    assert post(base, run(f"{tag}t"), headers={"authorization": "Basic dXNlcjpwdw=="}).status_code == 401
    assert mine(store, tag) == []
    closed = trained.api.model_copy(update={"token": None})
    with serve_app(create_app(trained.settings, api=closed)) as url:
        refused = post(url, run(f"{tag}t"))
        assert refused.status_code == 403 and "PREDICTOR_API_TOKEN" in refused.json()["detail"]


def test_many_clients_at_once_store_every_observation_exactly_once(service, tag):
    """24 clients post 10 batches of 5 each; every run id is sent by two clients, so half the posts race a twin."""
    base, store = service
    clients, batches, size = 24, 10, 5
    reports: list[dict] = []
    failures: list[str] = []
    lock = threading.Lock()

    def client(k: int) -> None:
        with httpx.Client(base_url=base, headers=AUTH, timeout=120) as http:
            for b in range(batches):
                body = [run(f"{tag}{k // 2}-{b}-{i}", wall_seconds=float(k // 2 + b + i)) for i in range(size)]
                response = http.post("/v1/observations", json=body)
                with lock:
                    if response.status_code == 200:
                        reports.append(response.json())
                    else:
                        failures.append(response.text)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    expected = {f"{tag}{k}-{b}-{i}" for k in range(clients // 2) for b in range(batches) for i in range(size)}
    stored = Counter(run_id for r in reports for run_id in r["stored"])
    duplicates = Counter(run_id for r in reports for run_id in r["duplicates"])
    assert set(stored) == expected and set(stored.values()) == {1}  # each reported stored exactly once
    assert set(duplicates) == expected and set(duplicates.values()) == {1}  # and its twin got "duplicate"
    assert mine(store, tag) == sorted(expected)


def test_times_out_of_range_once_in_utc_are_rejected_entries_not_500(service, tag):
    base, store = service
    body = [
        run(f"{tag}ok", recorded_at="2026-03-01T12:00:00+02:00"),
        run(f"{tag}late", recorded_at="9999-12-31T23:00:00-05:00"),
        run(f"{tag}early", recorded_at="0001-01-01T00:30:00+01:00"),
        run(f"{tag}epoch", recorded_at="0"),
    ]
    response = post(base, body)
    assert response.status_code == 200, response.text
    rejected = {r["run_id"].removeprefix(tag): (r["index"], r["field"]) for r in response.json()["rejected"]}
    assert rejected == {"late": (1, "recorded_at"), "early": (2, "recorded_at"), "epoch": (3, "recorded_at")}
    assert mine(store, tag) == [f"{tag}ok"]


@pytest.mark.parametrize(
    "fields",
    [
        {"wall_seconds": True},
        {"cpu_seconds": False},
        {"exit_status": True},
        {"recorded_at": 0},
        {"features": {"x": True}},
    ],
)
def test_booleans_are_not_numbers_and_numbers_are_not_times(service, tag, fields):
    base, store = service
    response = post(base, run(f"{tag}b", **fields))
    assert response.status_code == 422, response.text
    assert next(iter(fields)) in response.json()["detail"]
    assert mine(store, tag) == []


def test_observations_naming_inputs_get_their_features_or_are_rejected(service, tag):
    base, store = service
    given = {"input.sequences": 4.0, "input.residues": 200.0}
    body = [
        run(f"{tag}read", params={"input": "f0.fa"}),
        run(f"{tag}missing", params={"input": "absent.fa"}),
        run(f"{tag}long", params={"input": "x" * 300 + ".fa"}),
        run(f"{tag}outside", params={"input": "/etc/hostname"}),
        run(f"{tag}given", params={"input": "absent.fa"}, features=given),
    ]
    response = post(base, body)
    assert response.status_code == 200, response.text
    rejected = {r["run_id"].removeprefix(tag): (r["index"], r["field"]) for r in response.json()["rejected"]}
    assert rejected == {"missing": (1, "param.input"), "long": (2, "param.input"), "outside": (3, "param.input")}
    assert all("give the run's features" in r["message"] for r in response.json()["rejected"])
    stored = {m.run_id.removeprefix(tag): m.features for m in store.measurements() if m.run_id.startswith(tag)}
    assert stored["given"] == given
    assert (
        stored["read"]["input.sequences"] == 4 and stored["read"]["retree"] == 2
    )  # read from f0.fa under the root (defaults too)
