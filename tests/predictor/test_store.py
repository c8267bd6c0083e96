"""The measurement store on SQLite and PostgreSQL: migrations, round trips, idempotency, concurrency, read views."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta, timezone

import pandas as pd
import pytest
from sqlalchemy import text

from predictor.domain import CacheState, Measurement, Source
from predictor.store import AddResult, MeasurementStore
from tests.pgserver import PostgresServer

T0 = datetime(2026, 3, 1, 12, 30, 15, 123456, tzinfo=UTC)


def run(
    run_id: str, algorithm: str = "blastn", platform: str = "cpu-small", wall: float = 10.0, **extra
) -> Measurement:
    extra.setdefault("recorded_at", T0)
    return Measurement(run_id=run_id, algorithm=algorithm, platform=platform, wall_seconds=wall, **extra)


def test_migrate_is_repeatable(store_url: str) -> None:
    store = MeasurementStore(store_url)
    try:
        store.migrate()
        store.migrate()
        assert store.count() == 0
    finally:
        store.dispose()


def test_concurrent_migrations_take_turns(store_url: str) -> None:
    """Alembic committed SQLite's migrations one by one, so a process queued on the lock could run one again ("table
    already exists": 2 of 23 trials of 6 processes); the whole upgrade is one transaction now."""
    code = "import sys; from predictor.store import MeasurementStore; MeasurementStore(sys.argv[1]).migrate()"
    procs = [
        subprocess.Popen([sys.executable, "-c", code, store_url], stderr=subprocess.PIPE, text=True) for _ in range(6)
    ]  # separate processes, like several API workers starting at once
    failures = [p.stderr.read() for p in procs if p.wait(timeout=120) != 0]
    assert failures == []
    store = MeasurementStore(store_url)
    try:
        store.migrate()
        assert store.add([run("r1")]).stored == ["r1"]
    finally:
        store.dispose()


def test_migrate_from_threads_is_serialised(store_url: str) -> None:
    stores = [MeasurementStore(store_url) for _ in range(4)]
    with ThreadPoolExecutor(len(stores)) as pool:
        list(pool.map(MeasurementStore.migrate, stores))
    try:
        assert stores[0].count() == 0
    finally:
        for s in stores:
            s.dispose()


def test_round_trip_keeps_types_json_and_aware_utc_times(store: MeasurementStore) -> None:
    local = datetime(2026, 3, 1, 14, 30, 15, 123456, tzinfo=timezone(timedelta(hours=2)))
    original = Measurement(
        run_id="full-1",
        algorithm="blastn",
        platform="gpu-a100",
        machine="node-07",
        params={
            "query": "q.fa",
            "evalue": 1e-5,
            "threads": 8,
            "ungapped": True,
            "tags": ["a", None],
            "nested": {"k": 1},
        },
        features={"query_length": 1234.0, "db_bytes": 5.5e9},
        wall_seconds=12.75,
        cpu_seconds=95.5,
        max_rss_kb=12_000_000_000,
        exit_status=0,
        cache_state=CacheState.WARM,
        source=Source.PROBE,
        recorded_at=local,
        context={"load_average": 0.75, "note": "ünïcode"},
    )
    assert store.add([original]) == AddResult(stored=["full-1"], duplicates=[])
    [back] = store.measurements()
    assert back == original
    assert back.recorded_at.utcoffset() == timedelta(0)
    assert back.recorded_at == T0
    assert isinstance(back.max_rss_kb, int) and back.cache_state is CacheState.WARM and back.source is Source.PROBE


def test_naive_times_are_taken_as_utc(store: MeasurementStore) -> None:
    store.add([run("naive", recorded_at=datetime(2026, 1, 2, 3, 4, 5))])
    assert store.measurements()[0].recorded_at == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_count_and_measurements_filter(store: MeasurementStore) -> None:
    store.add(
        [
            run("a", wall=1.0),
            run("b", platform="gpu-a100", wall=2.0),
            run("c", algorithm="mafft", wall=3.0),
            run("failed", wall=4.0, exit_status=137),
        ]
    )
    assert store.count() == 4
    assert store.count(algorithm="blastn") == 3
    assert store.count(algorithm="blastn", platform="cpu-small") == 2
    assert store.count(platform="nowhere") == 0
    assert [m.run_id for m in store.measurements()] == ["a", "b", "c"]
    assert [m.run_id for m in store.measurements(algorithm="blastn", successful_only=False)] == ["a", "b", "failed"]
    assert [m.run_id for m in store.measurements(platform="gpu-a100")] == ["b"]


def test_add_is_idempotent_by_run_id(store: MeasurementStore) -> None:
    assert store.add([run("x"), run("y"), run("x", wall=99.0)]) == AddResult(stored=["x", "y"], duplicates=["x"])
    assert store.add(iter([run("y"), run("z")])) == AddResult(stored=["z"], duplicates=["y"])
    assert store.add([]) == AddResult(stored=[], duplicates=[])
    assert store.count() == 3
    assert {m.run_id: m.wall_seconds for m in store.measurements()}["x"] == 10.0


def test_concurrent_writers_store_every_run_exactly_once(store_url: str, store: MeasurementStore) -> None:
    writers = 8
    batches = [[run(f"run-{j:03d}", wall=float(j)) for j in range(i * 10, i * 10 + 40)] for i in range(writers)]
    results: list[AddResult] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(writers)
    lock = threading.Lock()

    def write(batch: list[Measurement]) -> None:
        own = MeasurementStore(store_url)  # an engine per writer, like separate processes
        try:
            barrier.wait()
            for chunk in (batch[::-1], batch):  # reversed first: overlapping keys in opposite input orders
                result = own.add(chunk)
                with lock:
                    results.append(result)
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)
        finally:
            own.dispose()

    threads = [threading.Thread(target=write, args=(b,)) for b in batches]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    expected = {m.run_id for b in batches for m in b}
    stored = [run_id for r in results for run_id in r.stored]
    assert sorted(stored) == sorted(expected)  # every run stored by exactly one writer
    assert all(len(r.stored) + len(r.duplicates) == 40 for r in results)
    assert store.count() == len(expected) == 110


def test_frame_has_one_row_per_measurement_and_feature_columns(store: MeasurementStore) -> None:
    store.add(
        [
            run("a", wall=1.5, features={"query_length": 100.0}, params={"evalue": 0.1}, max_rss_kb=2048),
            run("b", wall=2.5, features={"db_bytes": 7.0}, cpu_seconds=2.0),
            run("failed", exit_status=1, features={"other": 1.0}),
        ]
    )
    frame = store.frame()
    assert list(frame.columns) == [
        "run_id",
        "algorithm",
        "platform",
        "machine",
        "wall_seconds",
        "cpu_seconds",
        "max_rss_kb",
        "exit_status",
        "censored",
        "cache_state",
        "source",
        "recorded_at",
        "db_bytes",
        "query_length",
        "params",
        "submitted_at",
    ]
    assert frame["run_id"].tolist() == ["a", "b"]
    # no wait known: submitted when its run began
    assert (frame["submitted_at"] == frame["recorded_at"] - pd.to_timedelta(frame["wall_seconds"], unit="s")).all()
    assert frame["query_length"].tolist()[0] == 100.0 and pd.isna(frame["query_length"].tolist()[1])
    assert frame["db_bytes"].dtype == "float64" and frame["max_rss_kb"].dtype == "float64"
    assert frame["params"].tolist() == [{"evalue": 0.1}, {}]
    assert frame["cache_state"].tolist() == ["unknown", "unknown"]
    assert str(frame["recorded_at"].dt.tz) == "UTC" and frame["recorded_at"].iloc[0] == pd.Timestamp(T0)
    everything = store.frame(successful_only=False)
    assert len(everything) == 3 and "other" in everything.columns
    empty = store.frame(algorithm="nothing")
    assert empty.empty and list(empty.columns)[:12] == list(frame.columns)[:12]


def test_pairs_and_profile_table_use_successful_runs(store: MeasurementStore) -> None:
    store.add(
        [
            run("a1", wall=10.0),
            run("a2", wall=20.0),
            run("a-failed", wall=1000.0, exit_status=2),
            run("g1", platform="gpu-a100", wall=4.0),
            run("m-failed", algorithm="mafft", exit_status=1),
        ]
    )
    assert store.pairs() == [("blastn", "cpu-small"), ("blastn", "gpu-a100")]
    assert store.profile_table() == {("blastn", "cpu-small"): (15.0, 2), ("blastn", "gpu-a100"): (4.0, 1)}


def test_the_profile_table_is_the_median_of_plausible_runs(store: MeasurementStore) -> None:
    """Issue 30 item 1: runs stored before absurd times were refused (1e308 s, 3.7e16 s) leave the fallback finite."""
    walls = [10.0, 20.0, 30.0, 1e7, 1e308, 3.7e16]
    store.add([run(f"w{i}", wall=w) for i, w in enumerate(walls)] + [run("odd", platform="gpu-a100", wall=4.0)])
    assert store.profile_table() == {("blastn", "cpu-small"): (25.0, 4), ("blastn", "gpu-a100"): (4.0, 1)}


UNREADABLE_FEATURES = {
    "sqlite": ["'not json'", "CAST(X'7b22ff223a20317d' AS TEXT)", """'{"size": "big"}'"""],
    "postgresql": ["'[1, 2]'", """'{"size": "big"}'"""],  # its json column refuses text that is not JSON
}


def test_a_stored_row_that_cannot_be_read_is_set_aside_once_and_the_others_are_read(
    store: MeasurementStore, caplog
) -> None:
    """Issue 30 item 5: one row whose features were not JSON made every read, so every worker pass, fail."""
    store.add([run("good-1"), run("good-2")])
    poisons = UNREADABLE_FEATURES[store.dialect]
    with store.engine.begin() as conn:
        for i, features in enumerate(poisons):
            conn.execute(
                text(
                    "INSERT INTO measurements (run_id, algorithm, platform, machine, params, features, wall_seconds, exit_status,"
                    f" censored, cache_state, source, recorded_at, context) VALUES ('bad-{i}', 'blastn', 'cpu-small', 'm', '{{}}',"
                    f" {features}, 5.0, 0, false, 'unknown', 'production', '2026-03-01 12:00:00', '{{}}')"
                )
            )
    with caplog.at_level("WARNING", logger="predictor.store.store"):
        assert sorted(store.frame()["run_id"]) == ["good-1", "good-2"]
        assert [m.run_id for m in store.measurements()] == ["good-1", "good-2"] and store.measurement("bad-0") is None
    assert len(caplog.records) == len(poisons) and all("set aside" in r.getMessage() for r in caplog.records)
    with store.engine.connect() as conn:
        aside = conn.execute(text("SELECT run_id, reason, row FROM measurements_set_aside ORDER BY run_id")).all()
    assert [r.run_id for r in aside] == [f"bad-{i}" for i in range(len(poisons))]
    assert (
        aside[-1].reason == "features holds a value that is not a number"
        and "big" in json.loads(aside[-1].row)["features"]
    )
    assert aside[0].reason.startswith("features is not " + ("JSON" if store.dialect == "sqlite" else "a JSON object"))
    assert store.count() == 2 and store.profile_table() == {("blastn", "cpu-small"): (10.0, 2)}


def test_sqlite_runs_in_wal_mode(tmp_path) -> None:
    store = MeasurementStore(f"sqlite:///{tmp_path / 'new' / 'dir' / 's.db'}")
    try:
        store.migrate()
        with store.engine.connect() as conn:
            assert conn.execute(text("PRAGMA journal_mode")).scalar_one() == "wal"
            assert conn.execute(text("PRAGMA foreign_keys")).scalar_one() == 1
    finally:
        store.dispose()


@pytest.mark.postgres
def test_postgres_server_is_real(postgres_server: PostgresServer) -> None:
    store = MeasurementStore(postgres_server.url())
    try:
        with store.engine.connect() as conn:
            assert conn.execute(text("SELECT current_setting('server_version_num')::int")).scalar_one() >= 130000
    finally:
        store.dispose()


def test_large_batches_report_every_run(store: MeasurementStore) -> None:
    store.add([run(f"big-{i:05d}") for i in range(0, 2500, 2)])
    result = store.add([run(f"big-{i:05d}") for i in range(2500)])  # spans several multi-row INSERT pages
    assert (len(result.stored), len(result.duplicates), store.count()) == (1250, 1250, 2500)
    assert result.stored[:2] == ["big-00001", "big-00003"]


def test_censored_runs_are_stored_and_read_with_finished_ones_for_training(store: MeasurementStore) -> None:
    store.add(
        [
            run("done", wall=5.0),
            run("timed-out", wall=60.0, exit_status=124, censored=True),
            run("failed", wall=1.0, exit_status=1),
        ]
    )
    assert [m.run_id for m in store.measurements()] == ["done"]
    informative = store.measurements(with_censored=True)
    assert sorted(m.run_id for m in informative) == ["done", "timed-out"]
    assert {m.run_id: m.censored for m in informative} == {"done": False, "timed-out": True}
    assert store.count(informative_only=True) == 2 and store.count() == 3
    frame = store.frame(with_censored=True)
    assert frame.set_index("run_id")["censored"].to_dict() == {"done": False, "timed-out": True}


def test_served_estimates_are_kept_once_per_run_and_joined_with_measurements(store: MeasurementStore) -> None:
    from predictor.domain import ServedEstimate

    def served(run_id: str, seconds: float) -> ServedEstimate:
        return ServedEstimate(
            run_id=run_id, algorithm="blastn", platform="cpu-small", seconds=seconds, limit=2 * seconds
        )

    assert store.add_served([served("r1", 4.0), served("r2", 8.0), served("r3", 1.0)]) == 3
    assert store.add_served([served("r1", 99.0)]) == 0  # the first estimate recorded for a run stays
    store.add([run("r1", wall=5.0), run("r2", wall=20.0, exit_status=137, censored=True), run("r3", exit_status=1)])
    window = store.live_window("blastn", "cpu-small", size=10)
    assert window["run_id"].tolist() == ["r1", "r2"]  # the failed run r3 says nothing about run time
    assert window["seconds"].tolist() == [4.0, 8.0] and window["censored"].tolist() == [False, True]
    assert store.live_window("blastn", "cpu-small", size=1)["run_id"].tolist() == ["r2"]
    assert store.served_pairs() == [("blastn", "cpu-small")]


def test_decisions_are_listed_newest_first(store: MeasurementStore) -> None:
    for n, decision in enumerate(("promoted", "kept")):
        store.add_decision(
            {
                "decided_at": T0 + timedelta(minutes=n),
                "algorithm": "mafft",
                "platform": "cpu1",
                "decision": decision,
                "trigger": "manual",
                "challenger": "mean",
                "incumbent": "linear_log",
                "version": str(n + 1),
                "serving_version": "1",
                "n_rows": 10,
                "reason": "test",
                "details": {"rae": 1.0},
            }
        )
    rows = store.decisions("mafft")
    assert [r["decision"] for r in rows] == ["kept", "promoted"] and rows[0]["details"] == {"rae": 1.0}
    assert store.decisions(platform="gpu") == []


def test_the_newest_decision_of_each_pair_among_platforms(store: MeasurementStore) -> None:
    """Issue 39: what production reads of the planning decisions (one row per site and family, the newest)."""
    for n, (site, platform) in enumerate(
        [("a", "planning:easy"), ("a", "planning:easy"), ("b", "planning:easy"), ("a", "planning:edf"), ("a", "cpu1")]
    ):
        store.add_decision(
            {
                "decided_at": T0 + timedelta(minutes=n),
                "algorithm": site,
                "platform": platform,
                "decision": "kept",
                "trigger": "manual",
                "challenger": "",
                "incumbent": None,
                "version": None,
                "serving_version": None,
                "n_rows": n,
                "reason": "test",
                "details": {"n": n},
            }
        )
    families = ["planning:easy", "planning:conservative", "planning:edf"]
    rows = store.newest_decisions(families)
    assert [(r["algorithm"], r["platform"], r["n_rows"]) for r in rows] == [
        ("a", "planning:edf", 3),
        ("b", "planning:easy", 2),
        ("a", "planning:easy", 1),
    ]
    assert [r["n_rows"] for r in store.newest_decisions(["planning:easy"], algorithm="a")] == [1]
    assert store.newest_decisions(["planning:conservative"]) == [] and store.newest_decisions([]) == []


def test_runs_an_operator_sets_aside_leave_every_read_and_never_come_back(store: MeasurementStore) -> None:
    """Issue 41 item 2: runs named by user, time or input are moved out of what training reads, with the reason."""

    from predictor.store.selection import RunSelection

    base = datetime(2026, 1, 1, tzinfo=UTC)
    runs = [
        Measurement(
            run_id=f"r{i}",
            algorithm="tool",
            platform="cpu",
            features={"size": float(i % 3)},
            wall_seconds=1.0 + i,
            context={"user": "mallory" if i % 4 == 0 else "alice"},
            recorded_at=base + timedelta(hours=i),
        )
        for i in range(12)
    ]
    store.add(runs)
    by_user = store.set_aside_runs(RunSelection(user="mallory", until=base + timedelta(hours=5)), "bad user")
    assert sorted(by_user) == ["r0", "r4"]
    by_input = store.set_aside_runs(RunSelection(like="r1", since=base + timedelta(hours=6)), "bad input")
    assert sorted(by_input) == ["r10", "r7"]  # the input of r1 (size 1), recorded from hour 6 on
    assert {m.run_id for m in store.measurements()} == {f"r{i}" for i in range(12)} - {"r0", "r4", "r7", "r10"}
    assert store.add(runs[:1]).stored == []  # storing it again does nothing
    with pytest.raises(ValueError, match="name the runs"):
        RunSelection(algorithm="tool")
    assert store.set_aside_runs(RunSelection(like="nope"), "x") == []
