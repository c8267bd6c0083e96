"""Hot swap: a moved champion alias is loaded off the request path and swapped in atomically; a dead registry means the disk cache."""

from __future__ import annotations

import contextlib
import logging
import shutil
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import mlflow
import pytest

from predictor.registry import CHAMPION_ALIAS, registered_name, registry_client
from predictor.settings import Settings
from predictor.store import MeasurementStore
from serving.app import create_app
from serving.telemetry import LOGGER_NAME, JsonFormatter
from tests.livesrv import eventually, free_port, serve_app
from tests.trained import TOKEN, Home, api_settings, train_home
from training.pipeline import run_training

AUTH = {"authorization": f"Bearer {TOKEN}"}
JOB = {"algorithm": "mafft", "params": {"input": "f12.fa"}}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    return train_home(tmp_path_factory.mktemp("hotswap"), ["linear_log"])


def retrain(home: Home, model: str) -> None:
    """Train ``model`` on the same data: a new version of each champion, and the alias moved to it (past the guard)."""
    store = MeasurementStore(home.settings.resolved_store_url)
    run_training(home.settings, store, models=[model], force=True)
    store.dispose()


def versions(base: str) -> set[str]:
    return {e["model_version"] for e in httpx.post(f"{base}/v1/predict", json=JOB).json()["estimates"]}


def test_reload_swaps_the_moved_champion_while_requests_keep_being_answered(home):
    with serve_app(create_app(home.settings, api=home.api)) as base:
        before = httpx.post(f"{base}/v1/predict", json=JOB).json()["estimates"]
        assert versions(base) == {"1"}
        retrain(home, "mean")
        assert versions(base) == {"1"}, "nothing moves until the service looks"
        assert httpx.post(f"{base}/v1/models/reload").status_code == 401

        seen: list[tuple[int, frozenset[str]]] = []
        stop = threading.Event()

        def hammer() -> None:
            deadline = time.monotonic() + 300
            with httpx.Client(base_url=base, timeout=30) as http:
                while not stop.is_set() and time.monotonic() < deadline:
                    response = http.post("/v1/predict", json=JOB)
                    body = response.json()
                    seen.append((response.status_code, frozenset(e["model_version"] for e in body["estimates"])))

        threads = [threading.Thread(target=hammer) for _ in range(4)]
        for t in threads:
            t.start()
        reload = httpx.post(f"{base}/v1/models/reload", headers=AUTH, timeout=120)
        after_reload = len(seen)
        time.sleep(0.3)
        stop.set()
        for t in threads:
            t.join()
        assert reload.status_code == 200, reload.text
        assert (
            sorted(reload.json()["changed"]) == ["mafft/cpu1", "mafft/cpu2"] and reload.json()["source"] == "registry"
        )
        assert all(status == 200 for status, _ in seen) and len(seen) > after_reload
        assert {v for _, vs in seen for v in vs} <= {"1", "2"}
        assert all(vs == {"2"} for _, vs in seen[after_reload + 4 :])  # the few in flight at the swap may still say 1
        after = httpx.post(f"{base}/v1/predict", json=JOB).json()["estimates"]
        assert {e["model_version"] for e in after} == {"2"} and after[0]["seconds"] != before[0]["seconds"]
        models = httpx.get(f"{base}/v1/models").json()
        assert {m["model_kind"] for m in models} == {"mean"}
        again = httpx.post(f"{base}/v1/models/reload", headers=AUTH).json()
        assert again["changed"] == [] and again["champions"] == 2


def test_the_poller_follows_the_alias_without_being_asked_nor_touching_mlflows_global_uris(home, tmp_path):
    # an empty cache: every champion is downloaded while MLflow's global URIs point elsewhere
    settings = home.settings.model_copy(update={"model_cache_dir": tmp_path / "cache"})
    client = registry_client(settings.resolved_tracking_uri)
    elsewhere = f"sqlite:///{tmp_path / 'elsewhere.db'}"  # what the process around the service points MLflow at
    previous = mlflow.get_tracking_uri(), mlflow.get_registry_uri()
    mlflow.set_tracking_uri(elsewhere)
    mlflow.set_registry_uri(elsewhere)
    try:
        with serve_app(create_app(settings, api=api_settings(reload_interval_s=0.2))) as base:
            current = versions(base)
            assert current in ({"1"}, {"2"}), current  # loaded from the registry, not a fallback
            target = "1" if current == {"2"} else "2"
            for platform in ("cpu1", "cpu2"):
                client.set_registered_model_alias(registered_name("mafft", platform), CHAMPION_ALIAS, target)
            assert eventually(lambda: versions(base) == {target})
            assert 'predictor_model_reloads_total{outcome="changed"}' in httpx.get(f"{base}/metrics").text
            assert (mlflow.get_tracking_uri(), mlflow.get_registry_uri()) == (elsewhere, elsewhere)
        assert not (tmp_path / "elsewhere.db").exists(), "the service asked the registry MLflow points at globally"
    finally:
        mlflow.set_tracking_uri(previous[0])
        mlflow.set_registry_uri(previous[1])


def test_unreachable_registry_at_start_serves_the_disk_cache_and_says_so(home, monkeypatch):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    with serve_app(create_app(home.settings, api=home.api)) as base:  # a reachable registry fills the cache
        served = versions(base)
    dead = home.settings.model_copy(update={"mlflow_tracking_uri": f"http://127.0.0.1:{free_port()}"})
    with serve_app(create_app(dead, api=api_settings(registry_wait_s=5.0))) as base:
        ready = httpx.get(f"{base}/readyz").json()
        assert ready["status"] == "degraded" and ready["source"] == "cache" and ready["champions"] == 2
        assert "unavailable" in ready["registry_error"]
        assert versions(base) == served
        assert {m["origin"] for m in httpx.get(f"{base}/v1/models").json()} == {"cache"}
        reload = httpx.post(f"{base}/v1/models/reload", headers=AUTH)
        assert reload.status_code == 503 and "unavailable" in reload.json()["detail"], reload.text
        assert "still serving 2 champions (from cache)" in reload.json()["detail"]
        assert "predictor_registry_up 0.0" in httpx.get(f"{base}/metrics").text


@contextlib.contextmanager
def moved_away(*paths: Path) -> Iterator[None]:
    """Move ``paths`` aside for the block (whatever appears in their place meanwhile is removed), then put them back."""
    aside = [p.with_name(p.name + ".aside") for p in paths]
    for path, other in zip(paths, aside, strict=True):
        path.rename(other)
    try:
        yield
    finally:
        for path, other in zip(paths, aside, strict=True):
            if path.is_dir():
                shutil.rmtree(path)
            path.unlink(missing_ok=True)
            other.rename(path)


@contextlib.contextmanager
def silent_registry() -> Iterator[str]:
    """An http:// registry address whose port accepts connections and never answers (the kernel completes them)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


def test_a_registry_that_never_answers_makes_reload_a_503_within_the_timeout(home):
    with serve_app(create_app(home.settings, api=home.api)) as base:  # a reachable registry fills the cache
        served = versions(base)
    with silent_registry() as uri:
        silent = home.settings.model_copy(update={"mlflow_tracking_uri": uri})
        with serve_app(create_app(silent, api=api_settings(registry_timeout_s=1.0))) as base:
            assert httpx.get(f"{base}/readyz").json()["status"] == "degraded"
            reload = httpx.post(
                f"{base}/v1/models/reload", headers=AUTH, timeout=60
            )  # MLflow's own defaults: ~8 minutes
            assert reload.status_code == 503, reload.text
            assert "unavailable" in reload.json()["detail"] and reload.headers["retry-after"]
            assert versions(base) == served


def test_an_emptied_registry_serves_the_cached_champions_and_is_degraded(home, tmp_path):
    with serve_app(create_app(home.settings, api=home.api)) as base:  # served once: the disk cache has them
        served = versions(base)
    # the registry file gone (as after `mv mlflow.db elsewhere` and a restart): MLflow makes a new, empty one there
    emptied = home.settings.model_copy(update={"mlflow_tracking_uri": f"sqlite:///{tmp_path / 'mlflow.db'}"})
    with serve_app(create_app(emptied, api=home.api)) as base:
        ready = httpx.get(f"{base}/readyz").json()
        assert ready["status"] == "degraded" and ready["champions"] == 2, ready
        assert any("does not know runtime-mafft-cpu1" in r and "from the disk cache" in r for r in ready["reasons"]), (
            ready
        )
        estimates = httpx.post(f"{base}/v1/predict", json=JOB).json()["estimates"]
        assert {e["model_version"] for e in estimates} == served and not any(e["fallback"] for e in estimates)
    with serve_app(create_app(home.settings, api=home.api)) as base:  # the registry is back
        assert httpx.get(f"{base}/readyz").json()["status"] == "ready"


def test_champions_that_cannot_be_loaded_anywhere_make_the_service_not_ready(home):
    settings = home.settings
    with (
        moved_away(settings.resolved_artifact_root, settings.resolved_model_cache),
        serve_app(create_app(settings, api=home.api), ready_path="/healthz") as base,
    ):
        ready = httpx.get(f"{base}/readyz")
        assert ready.status_code == 503 and ready.json()["status"] == "not_ready" and ready.json()["champions"] == 0
        assert sum("cannot be loaded" in r and "no cached copy" in r for r in ready.json()["reasons"]) == 2, ready.text
        estimates = httpx.post(f"{base}/v1/predict", json=JOB).json()["estimates"]
        assert len(estimates) == 2 and all(e["fallback"] or e["seconds"] is None for e in estimates)


def test_a_withdrawn_champion_is_removed_and_not_brought_back_from_the_cache(home):
    client = registry_client(home.settings.resolved_tracking_uri)
    name = registered_name("mafft", "cpu2")
    version = client.get_model_version_by_alias(name, CHAMPION_ALIAS).version
    with serve_app(create_app(home.settings, api=home.api)) as base:
        client.delete_registered_model_alias(name, CHAMPION_ALIAS)
        try:
            reload = httpx.post(f"{base}/v1/models/reload", headers=AUTH).json()
            assert reload["removed"] == ["mafft/cpu2"]
            assert httpx.get(f"{base}/readyz").json()["status"] == "ready"
        finally:
            client.set_registered_model_alias(name, CHAMPION_ALIAS, version)
    assert home.settings.resolved_model_cache.joinpath(name, "current.json").exists() is False


def kinds(base: str) -> dict[str, tuple[str, str | None, str]]:
    """Platform -> (version, zoo member, origin) of each time champion the service at ``base`` serves."""
    models = httpx.get(f"{base}/v1/models").json()
    return {m["platform"]: (m["version"], m["model_kind"], m["origin"]) for m in models if m["target"] == "time"}


def test_after_a_registry_restore_a_reused_version_number_serves_the_new_model_not_the_cached_one(tmp_path: Path):
    """Issue 42, as docs/operations.md's backup and restore go: a backup at version 1; version 2 (svr_log) forced and
    served; the backup restored; a new version 2 (lad_log) registered. The service, running throughout, and again once
    restarted, serves the new version 2, not the svr_log model cached (and held) under the same number."""
    home = train_home(tmp_path / "restore", ["mean"])
    settings = home.settings
    mlflow_db = settings.resolved_home / "mlflow.db"
    backup = tmp_path / "backup"
    backup.mkdir()
    with sqlite3.connect(mlflow_db) as live, sqlite3.connect(backup / "mlflow.db") as copy:
        live.backup(copy)
    shutil.copytree(settings.resolved_artifact_root, backup / "mlartifacts")
    with serve_app(create_app(settings, api=home.api)) as base:
        assert set(kinds(base).values()) == {("1", "mean", "registry")}
        retrain(home, "svr_log")
        assert httpx.post(f"{base}/v1/models/reload", headers=AUTH, timeout=120).status_code == 200
        assert set(kinds(base).values()) == {("2", "svr_log", "registry")}
        forced = httpx.post(f"{base}/v1/predict", json=JOB).json()["estimates"]

        with sqlite3.connect(backup / "mlflow.db") as saved, sqlite3.connect(mlflow_db) as live:
            saved.backup(live)  # the registry as it was at version 1 (in place: the service keeps its connections)
        shutil.rmtree(settings.resolved_artifact_root)
        shutil.copytree(backup / "mlartifacts", settings.resolved_artifact_root)
        retrain(home, "lad_log")  # registered as version 2 again
        client = registry_client(settings.resolved_tracking_uri)
        numbers = [str(v.version) for v in client.search_model_versions(f"name='{registered_name('mafft', 'cpu1')}'")]
        assert sorted(numbers) == ["1", "2"], "the restored registry numbered the new version 2 again"
        reload = httpx.post(f"{base}/v1/models/reload", headers=AUTH, timeout=120)
        assert reload.status_code == 200 and sorted(reload.json()["changed"]) == ["mafft/cpu1", "mafft/cpu2"], (
            reload.text
        )
        assert set(kinds(base).values()) == {("2", "lad_log", "registry")}, "the new version 2, not the held svr_log"
        served = httpx.post(f"{base}/v1/predict", json=JOB).json()["estimates"]
        assert [e["seconds"] for e in served] != [e["seconds"] for e in forced]
    with serve_app(create_app(settings, api=home.api)) as base:  # restarted: the cache holds both models numbered 2
        assert set(kinds(base).values()) == {("2", "lad_log", "registry")}, "the new version 2, not the cached svr_log"
        assert httpx.post(f"{base}/v1/predict", json=JOB).json()["estimates"] == served
    cached = sorted(p.name for p in settings.resolved_model_cache.joinpath(registered_name("mafft", "cpu1")).iterdir())
    assert [name.split("-")[0] for name in cached if name[0].isdigit()] == ["1", "2", "2"], cached


@pytest.fixture
def logged() -> Iterator[list[str]]:
    """The service's log lines meanwhile, formatted as it writes them."""
    lines: list[str] = []
    handler = logging.Handler()
    handler.setFormatter(JsonFormatter())
    handler.emit = lambda record: lines.append(handler.format(record))  # type: ignore[method-assign]
    logger = logging.getLogger(LOGGER_NAME)
    logger.addHandler(handler)
    yield lines
    logger.removeHandler(handler)


def _bare(tmp_path: Path, tracking_uri: str) -> Settings:
    """A home without champions whose registry is at ``tracking_uri``."""
    (tmp_path / "inputs").mkdir()
    return Settings(home=tmp_path / "home", data_roots=[tmp_path / "inputs"], mlflow_tracking_uri=tracking_uri)


@pytest.mark.parametrize("scheme", ["http", "postgresql+psycopg"])
def test_a_registry_down_shows_at_once_and_never_its_password_nor_its_token(
    tmp_path: Path, logged: list[str], scheme: str
) -> None:
    """Issue 30, item 4, and issue 42: /readyz (no token), the reload's 503 and the log say the registry is down, by its
    scheme, host and port only: neither the password nor a token in its query; a PostgreSQL registry's failure shows
    within the connect timeout (MLflow alone retries for about 100 s)."""
    port = free_port()
    uri = f"{scheme}://user:s3cret@127.0.0.1:{port}/mlflow?token=t0ken-s3cret"
    started = time.monotonic()
    with serve_app(
        create_app(_bare(tmp_path, uri), api=api_settings(registry_wait_s=5.0, registry_timeout_s=2.0))
    ) as base:
        ready = httpx.get(f"{base}/readyz").json()
        assert time.monotonic() - started < 30
        assert ready["registry_error"] and ready["registry_error"].startswith(
            f"model registry {scheme}://127.0.0.1:{port} unavailable: "
        ), ready
        reload = httpx.post(f"{base}/v1/models/reload", headers=AUTH, timeout=60)
        assert reload.status_code == 503 and f"{scheme}://127.0.0.1:{port} unavailable" in reload.json()["detail"]
        texts = [ready, reload.text, *logged]
    assert any("model registry unavailable" in line for line in logged)
    assert not [t for t in texts if "s3cret" in str(t)]  # the password and the token's value
