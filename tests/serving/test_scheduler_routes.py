"""The scheduler routes through real HTTP: submit, machine and job events, orders; auth and precise 4xx answers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from predictor.settings import Settings
from predictor.store import MeasurementStore
from serving.app import create_app
from tests.livesrv import eventually, serve_app
from tests.scheduler.served import AUTH, FEATURES, seed_profile, served_api
from tests.scheduler.test_service import REFUSE_UPDATES, inbox_rows


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root: Path = tmp_path_factory.mktemp("sched-api")
    # The registry's first answer is awaited (MLflow creating its database runs Alembic, which must not overlap another migration).
    settings = Settings(home=root / "home", data_roots=[root])
    seed_profile(settings)
    with serve_app(create_app(settings, api=served_api())) as url:
        yield url


def post(base: str, path: str, body: object, auth: bool = True) -> httpx.Response:
    return httpx.post(f"{base}{path}", json=body, headers=AUTH if auth else {}, timeout=30)


def job(name: str, **extra) -> dict:
    return {"id": name, "algorithm": "mafft", "features": FEATURES, **extra}


def test_writes_need_the_token(base):
    assert post(base, "/v1/jobs", job("nope"), auth=False).status_code == 401
    assert post(base, "/v1/machines/x/events", {"event": "gained", "platform": "cpu1"}, auth=False).status_code == 401
    assert httpx.get(f"{base}/v1/jobs/nope").status_code == 404


def test_submit_defer_start_end_and_read_orders(base):
    cursor = httpx.get(f"{base}/v1/orders").json()["cursor"]
    answer = post(base, "/v1/jobs", [job("a"), job("b")])
    assert answer.status_code == 200, answer.text
    jobs = {j["id"]: j for j in answer.json()["jobs"]}
    assert jobs["a"]["estimates"] == {"cpu1": 4.0, "cpu2": 1.0} and jobs["a"]["status"] == "pending"
    gained = post(base, "/v1/machines/fast/events", {"event": "gained", "platform": "cpu2"}).json()["orders"]
    assert [(o["kind"], o["job"], o["machine"]) for o in gained] == [("start", "a", "fast")]
    slow = post(base, "/v1/machines/slow/events", {"event": "gained", "platform": "cpu1"}).json()["orders"]
    assert slow == []  # b waits for the fast machine (done at +2 s) rather than take the slow one (+4 s)
    b = httpx.get(f"{base}/v1/jobs/b").json()
    assert b["planned_machine"] == "fast" and b["status"] == "pending"
    ended = post(base, "/v1/jobs/a/events", {"event": "ended", "machine": "fast"}).json()["orders"]
    assert [(o["kind"], o["job"], o["machine"], o["attempt"]) for o in ended] == [("start", "b", "fast", 1)]
    listed = httpx.get(f"{base}/v1/orders", params={"after": cursor}).json()
    assert [(o["kind"], o["job"]) for o in listed["orders"]] == [("start", "a"), ("start", "b")]
    assert listed["cursor"] == listed["orders"][-1]["seq"]
    assert httpx.get(f"{base}/v1/orders", params={"after": listed["cursor"]}).json()["orders"] == []
    assert httpx.get(f"{base}/v1/orders", params={"after": cursor, "machine": "slow"}).json()["orders"] == []
    done = httpx.get(f"{base}/v1/jobs/a").json()
    assert done["status"] == "done" and done["runs"] == [] and done["ended"] >= done["started"]
    again = post(base, "/v1/jobs", job("a", priority=9)).json()["jobs"][0]
    assert again["status"] == "done" and again["priority"] == 0


def test_failure_drops_dependents(base):
    post(base, "/v1/machines/solo/events", {"event": "gained", "platform": "cpu1"})
    post(base, "/v1/jobs", [job("p", platforms=["cpu1"]), job("c", depends_on=["p"])])
    (run,) = httpx.get(f"{base}/v1/jobs/p").json()["runs"]
    post(base, "/v1/jobs/p/events", {"event": "failed", "machine": run["machine"], "reason": "segfault"})
    assert httpx.get(f"{base}/v1/jobs/p").json()["message"] == "segfault"
    child = httpx.get(f"{base}/v1/jobs/c").json()
    assert child["status"] == "dropped" and "p" in child["message"]


@pytest.mark.parametrize(
    ("path", "body", "status", "detail"),
    [
        ("/v1/jobs", {"algorithm": "nope", "features": {}}, 404, "unknown algorithm"),
        ("/v1/jobs", job("x", depends_on=["ghost"]), 422, "unknown dependency"),
        ("/v1/jobs", job("x", size=0), 422, "size"),
        ("/v1/jobs", [], 422, "no jobs"),
        ("/v1/machines/ghost/events", {"event": "lost"}, 404, "unknown machine"),
        ("/v1/machines/new/events", {"event": "gained"}, 422, "platform"),
        ("/v1/machines/new/events", {"event": "gained", "platform": "gpu9"}, 422, "unknown platform"),
        ("/v1/machines/new/events", {"event": "exploded"}, 422, "event"),
        ("/v1/jobs/ghost/events", {"event": "ended", "machine": "fast"}, 404, "unknown job"),
        ("/v1/jobs/a/events", {"event": "ended", "machine": "elsewhere"}, 422, "no run"),
    ],
)
def test_bad_requests_get_precise_answers(base, path, body, status, detail):
    answer = post(base, path, body)
    assert answer.status_code == status, answer.text
    assert detail in answer.text


@pytest.fixture
def served_on(store_url: str, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The scheduler API over a store of each backend: (base URL, store URL)."""
    settings = Settings(home=tmp_path / "home", data_roots=[tmp_path], store_url=store_url)
    with serve_app(create_app(settings, api=served_api())) as url:
        yield url, store_url


def test_a_poisoned_inbox_row_neither_stops_the_routes_nor_later_events(served_on):
    base, store_url = served_on
    inbox_rows(store_url, "('gained', 'bad', '[1, 2]')", """('gained', 'good', '{"platform": "cpu1"}')""")
    assert post(base, "/v1/jobs", job("after-poison", platforms=["cpu1"])).status_code == 200

    def placed() -> list[tuple[str, str]]:
        orders = httpx.get(f"{base}/v1/orders")
        assert orders.status_code == 200, orders.text
        return [(o["job"], o["machine"]) for o in orders.json()["orders"]]

    # the inbox is read by the scheduler's own loop: the job waits for machine "good" until that loop has applied it
    assert eventually(lambda: placed() == [("after-poison", "good")]), placed()
    assert httpx.get(f"{base}/readyz").json()["status"] == "ready"


def test_readiness_says_degraded_while_the_inbox_is_stuck(served_on):
    base, store_url = served_on
    store = MeasurementStore(store_url)
    dialect = store.engine.dialect.name
    try:
        with store.engine.begin() as conn:
            for statement in REFUSE_UPDATES[dialect]:
                conn.execute(text(statement))
        inbox_rows(store_url, """('gained', 'm1', '{"platform": "cpu1"}')""")
        assert eventually(lambda: httpx.get(f"{base}/readyz").json()["status"] == "degraded")
        ready = httpx.get(f"{base}/readyz").json()
        assert any(r.startswith("scheduler inbox stuck") and "read-only" in r for r in ready["reasons"]), ready
        assert (
            httpx.get(f"{base}/v1/orders").status_code == 200 and httpx.get(f"{base}/v1/jobs/ghost").status_code == 404
        )
        with store.engine.begin() as conn:
            conn.execute(text("DROP TRIGGER refuse" + (" ON sched_events" if dialect == "postgresql" else "")))
        assert eventually(lambda: httpx.get(f"{base}/readyz").json()["status"] == "ready")
    finally:
        store.dispose()


def test_an_order_cursor_beyond_the_32_bit_column_is_a_422(served_on):
    base, _ = served_on
    last = httpx.get(f"{base}/v1/orders", params={"after": 2**31 - 1})
    assert last.status_code == 200 and last.json() == {"orders": [], "cursor": 2**31 - 1}
    beyond = httpx.get(f"{base}/v1/orders", params={"after": 2**31})
    assert beyond.status_code == 422 and "after" in beyond.text, beyond.text


def test_a_bad_job_of_a_list_is_rejected_alone(base):
    listed = [
        job("ok-1"),
        {"id": "long", "algorithm": "mafft", "params": {"input": "y" * 256}},
        job("needs-long", depends_on=["long"]),
        job("needs-needer", stream_from="needs-long"),
        {"id": "ghost-algo", "algorithm": "nope", "features": {}},
        job("ok-2", depends_on=["ok-1"]),
    ]
    answer = post(base, "/v1/jobs", listed)
    assert answer.status_code == 200, answer.text
    assert [j["id"] for j in answer.json()["jobs"]] == ["ok-1", "ok-2"]
    rejected = {r["id"]: (r["index"], r["status"], r["detail"]) for r in answer.json()["rejected"]}
    assert rejected["long"][:2] == (1, 422) and "too long" in rejected["long"][2]
    assert rejected["needs-long"][:2] == (2, 422) and "needs job long" in rejected["needs-long"][2]
    assert rejected["needs-needer"][:2] == (3, 422) and rejected["ghost-algo"][:2] == (4, 404)
    assert httpx.get(f"{base}/v1/jobs/long").status_code == 404
    none = post(base, "/v1/jobs", [{"id": "bad-only", "algorithm": "mafft", "params": {"input": 5}}])
    assert none.status_code == 422 and none.json()["jobs"] == [] and none.json()["rejected"][0]["id"] == "bad-only"
    single = post(base, "/v1/jobs", {"id": "single", "algorithm": "mafft", "params": {"input": "z" * 300}})
    assert single.status_code == 422 and "too long" in single.json()["detail"]


def test_the_queue_is_listed_by_status_a_page_at_a_time(base):
    post(base, "/v1/jobs", [job("q-1", platforms=["cpu1"]), job("q-2", platforms=["cpu1"])])
    everything = httpx.get(f"{base}/v1/jobs", params={"limit": 1000}).json()["jobs"]
    assert [j["seq"] for j in everything] == sorted(j["seq"] for j in everything) and {"q-1", "q-2"} <= {
        j["id"] for j in everything
    }
    pending = httpx.get(f"{base}/v1/jobs", params={"status": ["pending", "running"], "limit": 1}).json()
    assert len(pending["jobs"]) == 1 and pending["jobs"][0]["status"] in ("pending", "running")
    assert pending["cursor"] == pending["jobs"][0]["seq"]
    assert httpx.get(f"{base}/v1/jobs", params={"status": "exploded"}).status_code == 422
    assert httpx.get(f"{base}/v1/jobs", params={"after": 2**31}).status_code == 422
    assert httpx.get(f"{base}/v1/jobs", params={"limit": 0}).status_code == 422
