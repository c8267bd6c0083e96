"""Online champions, live: the store's copy of a served online member learns every recorded run in constant time, keeps
its forward score, and survives a restart (issue 39)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import event

from models import make_model
from predictor.domain import Measurement, Target
from predictor.online import LiveMember
from predictor.store import MeasurementStore
from training.dataset import load_training_sets
from training.live_members import live_member, refresh_live_members
from training.memory import MemoryChampions, MemoryMeasurements, MemoryTracker
from training.pipeline import train
from training.settings import TrainingSettings

START = datetime(2026, 1, 1, tzinfo=UTC)


def _runs(n: int, start: int = 0, seed: int = 0, pair: tuple[str, str] = ("tool", "cpu")) -> list[Measurement]:
    """Seconds ~ 0.01 x size, each run ending a second after the one before."""
    rng = np.random.default_rng(seed)
    return [
        Measurement(
            run_id=f"r{start + i:07d}",
            algorithm=pair[0],
            platform=pair[1],
            features={"input.size": float(x)},
            wall_seconds=float(0.01 * x * rng.lognormal(0, 0.1)),
            recorded_at=START + timedelta(seconds=start + i),
        )
        for i, x in enumerate(rng.uniform(10, 1000, n))
    ]


def _member(runs: list[Measurement]) -> LiveMember:
    """The live member of an ``online_log`` fitted on ``runs``, as training would serve it at version 1."""
    X = pd.DataFrame({"input.size": [m.features["input.size"] for m in runs]})
    model = make_model("online_log").fit(X, np.array([m.wall_seconds for m in runs]))
    member = live_member("tool", "cpu", Target.TIME, {"online_log": 1}, "1", model, ["input.size"])
    assert member is not None
    return member


def test_only_a_single_online_member_learns_live() -> None:
    runs = _runs(30)
    X = pd.DataFrame({"input.size": [m.features["input.size"] for m in runs]})
    y = np.array([m.wall_seconds for m in runs])
    linear = make_model("linear_log").fit(X, y)
    assert live_member("tool", "cpu", Target.TIME, {"linear_log": 1}, "1", linear, ["input.size"]) is None
    online = make_model("online_log").fit(X, y)
    assert live_member("tool", "cpu", Target.TIME, {"online_log": 1, "mean": 1}, "1", online, ["input.size"]) is None
    member = live_member("tool", "cpu", Target.TIME, {"online_log": 1}, "1", online, ["input.size"])
    assert member is not None and member.model is not online  # a copy: the registered version is never changed


def test_each_recorded_run_is_answered_then_learned_and_scored(store: MeasurementStore) -> None:
    member = _member(_runs(30))
    before = member.model.predict(pd.DataFrame({"input.size": [500.0]}))[0]
    store.set_live_member(member.key, member)
    store.add(_runs(5, start=30, seed=1))
    store.add(_runs(5, start=30, seed=1))  # the same runs again: duplicates, nothing learned twice
    live = store.live_members()[member.key]
    assert (live.learned, live.revision, live.scored) == (5, 1, 5)
    assert 0 < live.live_male < 1  # its answers before learning each run were close: a factor of e at most
    assert live.model.predict(pd.DataFrame({"input.size": [500.0]}))[0] != before
    store.add(_runs(3, start=40, pair=("other", "cpu")))  # another pair's runs teach it nothing
    assert store.live_revisions()[member.key] == ("1", 1)


def test_an_update_costs_the_same_after_10_and_after_100000_runs_and_survives_a_restart(store_url: str) -> None:
    """Constant time, shown by what an update does rather than by a clock: the same statements and the same stored
    state, whatever was learned before (benchmarks/online_update.py times it)."""
    store = MeasurementStore(store_url)
    store.migrate()
    member = _member(_runs(30))
    store.set_live_member(member.key, member)
    statements: list[str] = []
    event.listen(store.engine, "before_cursor_execute", lambda *a: statements.append(a[2].split()[0]))

    def one_update(start: int) -> tuple[int, int]:
        statements.clear()
        store.add(_runs(1, start=start, seed=start))
        found = store.live_members()[member.key]
        numbers = sum(len(v) if isinstance(v, list) else 1 for v in found.record()["state"].values())
        return len([s for s in statements if s in ("SELECT", "UPDATE", "INSERT")]), numbers

    early = [one_update(100 + i) for i in range(10)]
    grown = store.live_members()[member.key]
    grown.learn(_runs(100_000, start=1_000, seed=7))  # the same learning step, 100,000 times, outside the store
    store.set_live_member(member.key, grown)
    late = one_update(200_000)
    assert early[-1] == late  # as many statements, and as many numbers stored
    store.dispose()
    again = MeasurementStore(store_url)  # a restart: a new process reads the same database
    found = again.live_members()[member.key]
    assert found.learned == 100_011 and found.version == "1"
    X = pd.DataFrame({"input.size": [10.0, 500.0]})
    np.testing.assert_allclose(found.model.predict(X), grown.model.predict(X), rtol=0.2)
    again.dispose()


def test_training_that_serves_an_online_member_makes_it_live_and_others_drop_it(tmp_path) -> None:
    settings = TrainingSettings(home=tmp_path, cv_folds=3, n_jobs=1)
    store, book, tracker = MemoryMeasurements(), MemoryChampions(), MemoryTracker(0.9)
    store.add(_runs(60))
    outcomes = train(
        settings, load_training_sets(store), models=["online_log"], tracker=tracker, champions=book, force=True
    )
    refresh_live_members(store, book, outcomes)
    (key,) = store.live_members()
    assert key == ("tool", "cpu", Target.TIME) and store.live[key].version == outcomes[0].version
    store.add(_runs(4, start=60, seed=3))
    assert store.live[key].learned == 4
    outcomes = train(
        settings, load_training_sets(store), models=["linear_log"], tracker=tracker, champions=book, force=True
    )
    refresh_live_members(store, book, outcomes)
    assert store.live_members() == {}  # the new champion does not learn online


@pytest.mark.parametrize("target", list(Target))
def test_a_run_that_did_not_finish_or_measure_the_target_teaches_nothing(target: Target) -> None:
    member = _member(_runs(30))
    member.target = target
    run = _runs(1, start=30)[0]
    failed, stopped = run.model_copy(update={"exit_status": 1}), run.model_copy(update={"censored": True})
    assert member.learn([failed, stopped]) == 0
    measured = run.model_copy(update={"max_rss_kb": 2048})
    assert member.learn([measured]) == 1 and member.revision == 1
