"""The planning configuration a site chose by replaying its own past, as production reads and follows it.

A *planning configuration* names whose estimates plan (the users' last two runs, as EASY++ has them: Tsafrir, Etsion &
Feitelson 2007; the users' requests; or what the service serves), which of the service's numbers, how a job that
outlives its plan is corrected and in which order backfill candidates are tried. ``predictor plan choose`` replays the
site's accounting under each candidate and records the one it keeps (:mod:`simulator.plan_choice`) as a
``model_decisions`` row: the site as the algorithm, ``planning:FAMILY`` as the platform, the configuration in
``details["config"]``. The embedded scheduler (its ``planned`` backfilling) and the Slurm plugin's route (its
``time_min``) follow the newest such row, read here at most every few seconds (:class:`FollowedDecision`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, get_args

from predictor.store import MeasurementStore
from scheduler.planning_times import Correction

log = logging.getLogger("scheduler")
Family = Literal["easy", "conservative", "edf"]
FAMILIES: tuple[Family, ...] = get_args(Family)
PlanSource = Literal["last-two", "requested", "service"]
SOURCES: tuple[PlanSource, ...] = get_args(PlanSource)  # whose estimates plan
# the service's point, or its point scaled by its residuals' 0.75 quantile
NUMBERS = ("point", "q0.75")
CORRECTIONS: tuple[Correction, ...] = ("tsafrir", "quantile", "doubling")  # those a configuration chooses among
ORDERS = ("fcfs", "sjbf", "saf")
# a planning decision's platform is this and its family
PLATFORM_PREFIX = "planning:"
# how stale the followed decision may be: the route asks at most this often
FOLLOW_EVERY_S = 5.0


@dataclass(frozen=True, order=True)
class PlanningConfig:
    """One way to plan: whose estimates, which of the service's numbers, the correction and the backfill order.

    The default is EASY++ (Tsafrir et al. 2007): the users' last two runs, EASY-SJBF, underestimates corrected as
    Tsafrir does: what a site that runs backfilling has without the service.
    """

    source: PlanSource = "last-two"
    number: str = "point"
    correction: Correction = "tsafrir"
    order: str = "sjbf"

    def policy(self, family: Family) -> str:
        """The policy spec of ``family`` planned this way (EDF has neither correction nor backfill order)."""
        if family == "easy":
            return f"easy:order={self.order},correction={self.correction}"
        if family == "conservative":
            return f"conservative:correction={self.correction}"
        return "edf"

    @property
    def level(self) -> float | None:
        """The residual quantile the number plans with (None: the point)."""
        return None if self.number == "point" else float(self.number[1:])

    @classmethod
    def from_record(cls, record: dict[str, str]) -> PlanningConfig:
        """The configuration a decision row's details recorded, checked."""
        if not isinstance(record, dict) or set(record) - {"source", "number", "correction", "order"}:
            raise ValueError(f"not a planning configuration: {record}")
        values, default = {k: str(v) for k, v in record.items()}, cls()
        source = values.get("source", default.source)
        correction = values.get("correction", default.correction)
        number, order = values.get("number", default.number), values.get("order", default.order)
        if source not in SOURCES or correction not in CORRECTIONS or order not in ORDERS:
            raise ValueError(f"not a planning configuration: {record}")
        if number != "point" and (source != "service" or number not in NUMBERS):
            raise ValueError(f"not a planning configuration: {record}")
        return cls(source, number, correction, order)

    def label(self, family: Family) -> str:
        """A short name for tables."""
        whose = {"last-two": "last two", "requested": "requests", "service": "service"}[self.source]
        if family == "edf":
            return f"{whose}, {self.number}"
        if family == "conservative":
            return f"{whose}, {self.number}, {self.correction}"
        return f"{whose}, {self.number}, {self.correction}, {self.order}"


def site_rule(family: Family) -> PlanningConfig:
    """What a site plans with before the service: EASY++ for backfilling, the users' requests for EDF."""
    return PlanningConfig("requested") if family == "edf" else PlanningConfig()


def decision_platform(family: Family) -> str:
    """The ``model_decisions`` platform of ``family``'s planning decisions."""
    return PLATFORM_PREFIX + family


@dataclass(frozen=True)
class PlanningDecision:
    """One recorded planning decision: the site (the accounting log's name), the family, and the configuration to serve."""

    id: int
    site: str
    family: Family
    decision: str  # promoted, kept or reverted
    decided_at: datetime | None
    config: PlanningConfig
    reason: str
    details: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> PlanningDecision:
        """A ``model_decisions`` row as a planning decision; ValueError saying why it is not a readable one."""
        platform = str(row.get("platform", ""))
        family = platform.removeprefix(PLATFORM_PREFIX)
        if not platform.startswith(PLATFORM_PREFIX) or family not in FAMILIES:
            raise ValueError(f"decision {row.get('id')} is not a planning decision ({platform!r})")
        details = row.get("details")
        if row.get("unreadable") or not isinstance(details, dict) or "config" not in details:
            raise ValueError(f"decision {row.get('id')} records no readable configuration")
        when = row.get("decided_at")
        return cls(
            id=int(row["id"]),
            site=str(row["algorithm"]),
            family=family,
            decision=str(row["decision"]),
            decided_at=when if isinstance(when, datetime) else None,
            config=PlanningConfig.from_record(details["config"]),
            reason=str(row.get("reason") or ""),
            details=details,
        )


def planning_decisions(
    store: MeasurementStore, families: Sequence[Family] = ("easy", "conservative", "edf"), site: str | None = None
) -> list[PlanningDecision]:
    """The newest readable decision of each (site, family) among ``families`` (of ``site`` alone when given), newest
    first; a newest row that cannot be read is logged and left out (its pair then has none: nothing is followed)."""
    out = []
    for row in store.newest_decisions([decision_platform(f) for f in families], site):
        try:
            out.append(PlanningDecision.from_row(row))
        except (TypeError, ValueError, KeyError) as exc:
            log.warning("planning decision left out: %s", exc)
    return out


class FollowedDecision:
    """The newest planning decision of ``families`` (of ``site`` when given), read again at most every ``every_s``
    seconds of ``clock``: what production follows, for the cost of one indexed query every few seconds whatever the
    traffic. A failed read keeps the last decision read (and is logged); the next call after ``every_s`` tries again."""

    def __init__(
        self,
        store: MeasurementStore,
        families: Sequence[Family],
        site: str | None = None,
        *,
        every_s: float = FOLLOW_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store, self.families, self.site, self.every_s, self.clock = store, tuple(families), site, every_s, clock
        self._lock = threading.Lock()
        self._read_at: float | None = None
        self._decision: PlanningDecision | None = None

    def current(self) -> PlanningDecision | None:
        """The newest decision (None before any), as last read; read again when the last read is ``every_s`` old."""
        with self._lock:
            now = self.clock()
            if self._read_at is None or not 0 <= now - self._read_at < self.every_s:  # a clock set back reads too
                self._read_at = now
                try:
                    found = planning_decisions(self.store, self.families, self.site)
                    self._decision = found[0] if found else None
                # the database is down or busy: keep following what was read last
                except Exception:
                    log.exception("reading the planning decision failed; keeping the last one read")
            return self._decision
