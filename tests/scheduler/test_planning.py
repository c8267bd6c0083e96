"""The planning decision production follows (issue 39): the newest of a site and family, read at most every few
seconds, a row it cannot read left out."""

from __future__ import annotations

from pathlib import Path

import pytest

from predictor.store import MeasurementStore
from scheduler.planning import FollowedDecision, PlanningConfig, planning_decisions
from tests.planning import record_planning

SERVICE = PlanningConfig("service", "point", "doubling", "saf")


@pytest.fixture
def store(tmp_path: Path) -> MeasurementStore:
    store = MeasurementStore(f"sqlite:///{tmp_path / 'store.db'}")
    store.migrate()
    return store


def test_the_followed_decision_is_read_again_at_most_every_interval(store: MeasurementStore) -> None:
    now = [0.0]
    followed = FollowedDecision(store, ("easy", "conservative"), "site", every_s=5.0, clock=lambda: now[0])
    assert followed.current() is None  # before any decision
    first = record_planning(store, "site", "easy", SERVICE)
    now[0] = 4.9
    assert followed.current() is None  # not read again yet: at most one query every 5 s whatever the traffic
    now[0] = 5.0
    decision = followed.current()
    assert decision is not None and (decision.id, decision.site, decision.family, decision.config) == (
        first,
        "site",
        "easy",
        SERVICE,
    )
    later = record_planning(store, "site", "conservative", PlanningConfig(), promoted=False)
    record_planning(store, "elsewhere", "easy", SERVICE)  # another site's: not this one's
    now[0] = 10.0
    assert followed.current().id == later  # type: ignore[union-attr]  # the newest of either family


def test_a_newest_row_that_cannot_be_read_is_left_out(store: MeasurementStore) -> None:
    good = record_planning(store, "a", "easy", SERVICE)
    record_planning(store, "b", "easy", SERVICE)
    row = store.decisions("b", "planning:easy", limit=1)[0]
    broken = {k: v for k, v in row.items() if k not in ("id", "unreadable")}
    store.add_decision({**broken, "details": {"config": {"source": "oracle"}}})  # no such source
    assert [d.id for d in planning_decisions(store, ("easy",))] == [good]
