"""A planning decision recorded as `predictor plan choose` records one, for the tests of what production does with it."""

from __future__ import annotations

from predictor.store import MeasurementStore
from scheduler.planning import Family, PlanningConfig, decision_platform, site_rule
from simulator.plan_choice import Choice


def record_planning(
    store: MeasurementStore, site: str, family: Family, config: PlanningConfig, *, promoted: bool = True
) -> int:
    """Record ``config`` as the site's planning for ``family`` (promoted over the site's rule, or kept); its row id."""
    rule = site_rule(family)
    scores = {rule: 1.0, config: 0.9}
    raw = {rule: [10.0, 10.0], config: [9.0, 9.0]}
    choice = Choice(family, "avebsld", rule, config, promoted, "recorded by a test", scores, 100, 0.0, raw, config)
    store.add_decision(choice.decision_row(site, "test"))
    return int(store.decisions(site, decision_platform(family), limit=1)[0]["id"])
