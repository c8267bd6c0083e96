"""The retrain worker's triggers (new runs, drifting live error) and one pass, on a real store with in-memory champions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import text

from predictor.domain import Measurement, ServedEstimate, Target
from predictor.store import MeasurementStore
from predictor.thirdparty import mlflow_uris
from training.guard import Verdict
from training.memory import MemoryChampions, MemoryTracker
from training.settings import WorkerSettings
from training.worker import due, retrain_due


def _runs(n: int, start: int = 0, speed: float = 1.0, seed: int = 0) -> list[Measurement]:
    rng = np.random.default_rng(seed)
    size = rng.uniform(10, 1000, n)
    return [
        Measurement(
            run_id=f"r{start + i:04d}",
            algorithm="tool",
            platform="cpu",
            features={"input.size": float(x)},
            wall_seconds=float(speed * 0.01 * x * rng.lognormal(0, 0.05)),
        )
        for i, x in enumerate(size)
    ]


@pytest.fixture
def store(tmp_path) -> MeasurementStore:
    store = MeasurementStore(f"sqlite:///{tmp_path / 'store.db'}")
    store.migrate()
    yield store
    store.dispose()


@pytest.fixture
def settings(tmp_path) -> WorkerSettings:
    return WorkerSettings(
        home=tmp_path,
        cv_folds=5,
        n_jobs=1,
        train_models=["linear_log"],
        retrain_min_new_runs=10,
        retrain_min_new_fraction=0.25,
        drift_min_runs=10,
    )


def _served(runs: list[Measurement], speed: float) -> list[ServedEstimate]:
    """Version 1's answers for ``runs`` that ran ``speed`` times slower than it expected."""
    return [
        ServedEstimate(
            run_id=m.run_id, algorithm="tool", platform="cpu", seconds=m.wall_seconds / speed, model_version="1"
        )
        for m in runs
    ]


def test_a_pair_without_a_champion_is_due_then_trained_and_recorded(
    settings: WorkerSettings, store: MeasurementStore
) -> None:
    book, tracker = MemoryChampions(), MemoryTracker(0.9)
    store.add(_runs(40))
    assert [t.reason for t in due(settings, store, book)] == ["no champion; 40 runs"]
    outcomes = retrain_due(settings, store, book=book, tracker=tracker)
    assert [o.decision.verdict for o in outcomes] == [Verdict.PROMOTED]
    assert store.decisions()[0]["trigger"] == "worker: no champion; 40 runs"
    assert due(settings, store, book) == []  # nothing new since


def test_new_runs_trigger_only_past_both_thresholds(settings: WorkerSettings, store: MeasurementStore) -> None:
    book, tracker = MemoryChampions(), MemoryTracker(0.9)
    store.add(_runs(40))
    retrain_due(settings, store, book=book, tracker=tracker)
    store.add(_runs(9, start=40, seed=1))
    assert due(settings, store, book) == []  # 9 < 10 new runs
    store.add(_runs(1, start=49, seed=2))
    assert [t.reason for t in due(settings, store, book)] == ["10 new runs since version 1 (40 runs)"]
    outcomes = retrain_due(settings, store, book=book, tracker=tracker)
    assert outcomes[0].decision.verdict is Verdict.REFRESHED and outcomes[0].version == "2" and outcomes[0].n_rows == 50


def test_drifting_live_error_triggers_a_retrain(settings: WorkerSettings, store: MeasurementStore) -> None:
    settings = settings.model_copy(update={"retrain_min_new_runs": 100})  # only the drift can trigger here
    book, tracker = MemoryChampions(), MemoryTracker(0.9)
    store.add(_runs(40))
    retrain_due(settings, store, book=book, tracker=tracker)
    runs = _runs(5, start=40, speed=4.0, seed=3)  # the program got 4x slower; too few runs to trigger on count
    store.add(runs, served=_served(runs, 4.0))
    assert due(settings, store, book) == []  # 5 runs: fewer than drift_min_runs
    more = _runs(5, start=45, speed=4.0, seed=4)
    store.add(more, served=_served(more, 4.0))
    (trigger,) = due(settings, store, book)
    assert trigger.reason.startswith("live RAE ") and "over 10 runs" in trigger.reason


def test_under_persistent_drift_the_worker_tries_again_once_per_drift_min_runs(
    settings: WorkerSettings, store: MeasurementStore
) -> None:
    """Issue 39: once the guard kept a champion whose live error stayed high, every later check asked for a retrain
    (the drift was judged on the whole window again); it is judged on the runs since the last attempt."""
    settings = settings.model_copy(update={"retrain_min_new_runs": 10_000})  # only the drift can trigger here
    book, tracker = MemoryChampions(), MemoryTracker(0.9)
    store.add(_runs(40))
    retrain_due(settings, store, book=book, tracker=tracker)
    attempts = []
    for i, run in enumerate(_runs(100, start=40, speed=4.0, seed=5)):
        store.add([run], served=_served([run], 4.0))
        triggers = due(settings, store, book)
        if triggers:  # the worker tries, and the guard keeps version 1 serving: the drift persists
            attempts.append(i + 1)
            (trigger,) = triggers
            assert "since the last attempt" in trigger.reason
            store.add_decision(
                {
                    "decided_at": pd.Timestamp.now(tz="UTC").to_pydatetime(),
                    "algorithm": "tool",
                    "platform": "cpu",
                    "target": "time",
                    "decision": "kept",
                    "trigger": f"worker: {trigger.reason}",
                    "challenger": "linear_log",
                    "n_rows": store.count("tool", "cpu", informative_only=True),
                    "reason": "kept (test)",
                    "details": {},
                }
            )
    assert attempts == [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]  # once per drift_min_runs new runs, not 91 times


def test_the_worker_reads_the_champions_of_its_settings_not_mlflows_default(
    settings: WorkerSettings, store: MeasurementStore, tmp_path
) -> None:
    """A worker process whose MLflow default points elsewhere (a stale ./mlflow.db in its folder) still judges the real champions."""
    settings = settings.model_copy(
        update={
            "mlflow_tracking_uri": f"sqlite:///{tmp_path / 'registry.db'}",
            "mlflow_artifact_root": tmp_path / "artifacts",
        }
    )
    store.add(_runs(40))
    assert [o.version for o in retrain_due(settings, store)] == ["1"]
    with mlflow_uris(f"sqlite:///{tmp_path / 'elsewhere.db'}"):
        store.add(_runs(9, start=40, seed=1))
        assert (
            retrain_due(settings, store) == []
        )  # 9 new runs on version 1: not due (the empty default registry has no champion)


def test_one_input_run_300_times_far_slower_is_flagged_not_served(settings: WorkerSettings, store_url: str) -> None:
    """Issue 30 item 3: 300 runs of one input at 3,600 s were refreshed in unchecked ("too few to compare") and served."""
    store = MeasurementStore(store_url)
    store.migrate()
    try:
        book, tracker = MemoryChampions(), MemoryTracker(0.9)
        store.add(_runs(40))
        assert [o.version for o in retrain_due(settings, store, book=book, tracker=tracker)] == ["1"]
        one = _runs(1)[0]
        store.add(one.model_copy(update={"run_id": f"slow-{i}", "wall_seconds": 3600.0}) for i in range(300))
        (outcome,) = retrain_due(settings, store, book=book, tracker=tracker)
        assert outcome.decision.verdict is Verdict.KEPT and outcome.version == "1"  # the alias stays on version 1
        row = store.decisions()[0]
        assert (
            row["decision"] == "kept"
            and "flagged: 300 new run(s) of an input version 1 was trained on" in row["reason"]
        )
        assert row["details"]["flag_jump"] > 100
        served = book.alias[("tool", "cpu", Target.TIME)].champion.model.predict(
            pd.DataFrame({"input.size": [one.features["input.size"]]})
        )
        assert served[0] < 100  # still what the 40 runs say, not 3,600 s
    finally:
        store.dispose()


def test_a_run_whose_features_are_not_json_is_set_aside_and_the_pass_trains_the_rest(
    settings: WorkerSettings, store_url: str
) -> None:
    """Issue 30 item 5: one such row made every worker pass fail, for every pair."""
    store = MeasurementStore(store_url)
    store.migrate()
    try:
        store.add(_runs(40))
        features = (
            "'not json'" if store.dialect == "sqlite" else "'[1, 2]'"
        )  # PostgreSQL's json column refuses the first
        with store.engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO measurements (run_id, algorithm, platform, machine, params, features, wall_seconds, exit_status,"
                    f" censored, cache_state, source, recorded_at, context) VALUES ('poison', 'tool', 'cpu', 'm', '{{}}', {features},"
                    " 5.0, 0, false, 'unknown', 'production', '2026-03-01 12:00:00', '{}')"
                )
            )
        book, tracker = MemoryChampions(), MemoryTracker(0.9)
        (outcome,) = retrain_due(settings, store, book=book, tracker=tracker)
        assert outcome.decision.verdict is Verdict.PROMOTED and outcome.n_rows == 40
        with store.engine.connect() as conn:
            assert conn.execute(text("SELECT run_id FROM measurements_set_aside")).scalars().all() == ["poison"]
    finally:
        store.dispose()


def _measured(runs: list[Measurement], per_unit_kb: float = 300.0) -> list[Measurement]:
    """``runs`` with a peak memory of 20 MB plus ``per_unit_kb`` per unit of input size."""
    return [m.model_copy(update={"max_rss_kb": int(20_000 + per_unit_kb * m.features["input.size"])}) for m in runs]


def test_each_target_is_due_by_its_own_runs_and_gets_its_own_champion(
    settings: WorkerSettings, store: MeasurementStore
) -> None:
    book, tracker = MemoryChampions(), MemoryTracker(0.9)
    store.add(_runs(10) + _measured(_runs(30, start=10, seed=1)))  # 40 runs, 30 of them with a peak memory
    assert [(t.target, t.reason) for t in due(settings, store, book)] == [
        (Target.TIME, "no champion; 40 runs"),
        (Target.MEMORY, "no champion; 30 runs"),
    ]
    outcomes = retrain_due(settings, store, book=book, tracker=tracker)
    assert [(o.target, o.decision.verdict, o.n_rows) for o in outcomes] == [
        (Target.TIME, Verdict.PROMOTED, 40),
        (Target.MEMORY, Verdict.PROMOTED, 30),
    ]
    assert [(r["target"], r["trigger"]) for r in store.decisions()] == [
        ("memory", "worker: no champion; 30 runs"),
        ("time", "worker: no champion; 40 runs"),
    ]
    assert set(book.alias) == {("tool", "cpu", Target.TIME), ("tool", "cpu", Target.MEMORY)}
    assert book.champions(Target.MEMORY)[("tool", "cpu")].name == "memory-tool-cpu"
    store.add(_runs(10, start=40, seed=2))  # new runs without a peak memory: run time is due, memory is not
    assert [(t.target, t.reason) for t in due(settings, store, book)] == [
        (Target.TIME, "10 new runs since version 1 (40 runs)")
    ]
    store.add(_measured(_runs(10, start=50, seed=3)))
    assert [(t.target, t.reason) for t in due(settings, store, book)] == [
        (Target.TIME, "20 new runs since version 1 (40 runs)"),
        (Target.MEMORY, "10 new runs since version 1 (30 runs)"),
    ]
    assert [(t.target, t.reason) for t in due(settings, store, book, [Target.MEMORY])] == [
        (Target.MEMORY, "10 new runs since version 1 (30 runs)")
    ]


def test_a_pass_tells_its_progress_to_the_status_that_readyz_and_the_cli_read(
    settings: WorkerSettings, store: MeasurementStore
) -> None:
    """Issue 42: training in the background shows how far it is; a status file under the home is what other processes
    read (serving/routers/health.py, `predictor models list`)."""
    from predictor.training_status import read_status
    from training.status import StatusReport

    book, tracker = MemoryChampions(), MemoryTracker(0.9)
    store.add(_runs(40))
    report = StatusReport(settings.resolved_home, interval_s=60)
    assert read_status(settings.resolved_home).state == "waiting"
    seen = []

    def step(label: str) -> None:
        report(label)
        seen.append(read_status(settings.resolved_home))

    outcomes = retrain_due(settings, store, book=book, tracker=tracker, progress=step, on_start=report.start)
    first, last = seen[0], seen[-1]
    assert first.state == "training" and first.target == "time" and first.pairs == ["tool/cpu"]
    assert first.done == 1 and first.total > 1  # about as many steps as training will report
    assert [s.done for s in seen] == list(range(1, len(seen) + 1))
    assert last.step == "tool/cpu linear_log registered as version 1"
    share = round(100 / first.total)
    assert f"training time of 1 pair(s) since {first.started_at}: 1/{first.total} steps ({share} %), last " in (
        first.summary()
    )
    report.passed(outcomes)
    waiting = read_status(settings.resolved_home)
    assert waiting.state == "waiting" and waiting.last_decisions == {"promoted": 1}
    assert "retrain worker waiting; last pass " in waiting.summary() and ": 1 promoted; next pass " in waiting.summary()
    report.stopped()
    assert read_status(settings.resolved_home).state == "stopped"


def test_a_rule_serving_drifts_like_any_champion(settings: WorkerSettings, store: MeasurementStore) -> None:
    """Issue 39, wagap: a class's median served 435 later jobs 2,600x off, and no retrain came, since rules were exempt
    from drift. A rule whose live error leaves its validated one far behind asks for a retrain like any champion."""
    settings = settings.model_copy(update={"retrain_min_new_runs": 10_000, "train_models": ["median"]})
    book, tracker = MemoryChampions(), MemoryTracker(0.9)
    store.add(_runs(40))
    (first,) = retrain_due(settings, store, book=book, tracker=tracker)
    assert first.serving == "median"
    more = _runs(40, start=40, speed=50.0, seed=6)
    store.add(more, served=_served(more, 50.0))
    (trigger,) = due(settings, store, book)
    assert trigger.reason.startswith("live RAE ") and "since the last attempt" in trigger.reason


def test_a_job_class_chosen_by_its_median_log_error_drifts_on_rae(
    settings: WorkerSettings, store: MeasurementStore
) -> None:
    """A job class's champion is chosen, and its version tagged, by MdALE; its drift is judged on RAE all the same
    (training/worker.py says why: judged on MdALE, HPC2N's class retrained 12 times instead of 27 and lost to the
    last two runs)."""
    settings = settings.model_copy(update={"retrain_min_new_runs": 10_000})  # only the drift can trigger here
    book, tracker = MemoryChampions(), MemoryTracker(0.9)
    runs = [m.model_copy(update={"features": {**m.features, "request.time": 1e5}}) for m in _runs(40)]
    store.add(runs)
    (first,) = retrain_due(settings, store, book=book, tracker=tracker)
    assert first.metric == "mdale" and book.alias[("tool", "cpu", Target.TIME)].champion.tags["judged_by"] == "mdale"
    slower = [m.model_copy(update={"features": {**m.features, "request.time": 1e5}}) for m in _runs(10, 40, 4.0, 3)]
    store.add(slower, served=_served(slower, 4.0))
    (trigger,) = due(settings, store, book)
    assert trigger.reason.startswith("live RAE ") and "over 10 runs since the last attempt" in trigger.reason
