"""Idle-time probes: runs the cluster makes for its models when a machine would otherwise stay idle (Brandstätter-Müller et al. 2011, section 2).

A probe is invisible to the scheduler: its state, its policies and the plan of real jobs never see
one. The resource manager's side asks an :class:`IdleProber`, once the scheduler has had its say
about a moment, which idle machines may probe, and cancels a machine's probe the moment the
scheduler starts a real job there; a cancelled probe is not tried on that machine again. Two sides
call it: the simulator (probes take simulated time) and the scheduler service (probes are orders a
resource manager carries out by running the program through the profile wrapper).
So a real job starts exactly when it would without probing. Probes run at the lowest priority in
this sense and are always preemptible; each is killed at its platform's time cap (a censored
measurement), and a platform spends at most its budget of machine-seconds per clock hour: a probe
reserves its cap in the hour it starts and gives back what it did not use when it ends.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
import pandas as pd

from data.acquisition import Rule, rank
from predictor.domain import Measurement, Source
from scheduler.state import Machine, State

HOUR = 3600.0
# a real probe not reported ended this long after its cap is taken for lost
OVERDUE_S = 120.0


@dataclass(frozen=True)
class ProbeJob:
    """A run worth measuring: an algorithm, its features, and (in a simulation) its true seconds per platform.

    ``params`` are what a real run is given (its inputs); ``platforms`` where it may run (None: where it has a true time).
    """

    id: str
    algorithm: str
    features: dict[str, float]
    true_times: dict[str, float] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    platforms: frozenset[str] | None = None

    def runs_on(self, platform: str) -> bool:
        return platform in (self.platforms if self.platforms is not None else self.true_times)


@dataclass(frozen=True)
class ProbeBudget:
    """How much a platform may probe: machine-seconds per clock hour, and the most one probe may run."""

    seconds_per_hour: float
    cap_s: float

    def __post_init__(self) -> None:
        if self.seconds_per_hour < 0 or self.cap_s <= 0:
            raise ValueError(
                f"a probe budget needs seconds_per_hour >= 0 and cap_s > 0, got {self.seconds_per_hour}, {self.cap_s}"
            )


class ProbeSource(Protocol):
    """Where probes come from: the most informative candidate for a machine, and what each probe measured."""

    def next_probe(self, platform: str, machine: str, now: float, refused: frozenset[str]) -> ProbeJob | None: ...

    def measured(self, probe: ProbeJob, platform: str, seconds: float, censored: bool) -> None: ...


Outcome = Literal["done", "capped", "cancelled", "failed"]


@dataclass(frozen=True)
class ProbeRecord:
    """How one probe went: ``capped`` when killed at the cap, ``cancelled`` when a real job took its machine (or it was
    lost), ``failed`` when a real run left no measurement."""

    probe: str
    algorithm: str
    machine: str
    platform: str
    start: float
    end: float
    outcome: Outcome
    token: int = 0  # the run's number (ProbeRun.token)


@dataclass(frozen=True)
class ProbeRun:
    """A probe running on a machine: it ends at ``start + seconds`` unless a real job cancels it first."""

    probe: ProbeJob
    machine: str
    platform: str
    start: float
    seconds: float
    capped: bool
    token: int


def unknown_duration(probe: ProbeJob, platform: str) -> float:
    """A real run's length is known when it ends: until then it may last to its cap."""
    return float("inf")


@dataclass
class IdleProber:
    """Starts probes on idle machines within each platform's budget; cancels them when real work arrives.

    ``duration(probe, platform)`` is how long a probe would take there (in a simulation, its true time; for a
    real run, unknown until it ends). Platforms without a budget never probe.
    """

    source: ProbeSource
    budgets: Mapping[str, ProbeBudget]
    duration: Callable[[ProbeJob, str], float] = unknown_duration
    running: dict[str, ProbeRun] = field(default_factory=dict)
    records: list[ProbeRecord] = field(default_factory=list)
    # (platform, clock hour) -> machine-seconds reserved
    used: dict[tuple[str, int], float] = field(default_factory=dict)
    refused: dict[str, set[str]] = field(default_factory=dict)  # machine -> probes cancelled there
    _token: int = 0

    def fill(self, state: State, now: float) -> list[ProbeRun]:
        """Start a probe on every online machine with nothing running, no probe, and budget left on its platform."""
        started = []
        for machine in state.machines.values():
            if machine.online and machine.used == 0 and machine.id not in self.running:
                run = self._start(machine, now)
                if run is not None:
                    started.append(run)
        return started

    def preempt(self, machine: str, now: float) -> ProbeRecord | None:
        """A real job starts on ``machine``: its probe (if any) is cancelled at once and not retried there."""
        run = self.running.get(machine)
        if run is None:
            return None
        self.refused.setdefault(machine, set()).add(run.probe.id)
        return self._close(run, now, "cancelled")

    def reclaim(self, state: State, now: float) -> list[ProbeRecord]:
        """For a real resource manager: cancel at once every probe whose machine is no longer idle (a real job took it,
        or it went offline), and close as failed one not reported ended :data:`OVERDUE_S` after its cap (its executor
        lost it), so its machine may probe again. The caller orders each of them killed."""
        busy = [
            m
            for m in self.running
            if m not in state.machines or not state.machines[m].online or state.machines[m].used > 0
        ]
        closed = [record for m in busy if (record := self.preempt(m, now)) is not None]
        lost = [run for run in self.running.values() if now - run.start > run.seconds + OVERDUE_S]
        return closed + [
            record for run in lost if (record := self.ended(run.machine, run.token, now, failed=True)) is not None
        ]

    def ended(
        self, machine: str, token: int, now: float, *, capped: bool | None = None, failed: bool = False
    ) -> ProbeRecord | None:
        """A probe's end came: measured (censored at the cap; ``capped`` says so for a real run, whose length was
        not known), or ``failed`` without a measurement (not tried on that machine again); None if that probe was
        cancelled before."""
        run = self.running.get(machine)
        if run is None or run.token != token:
            return None
        censored = run.capped if capped is None else capped
        if failed:
            self.refused.setdefault(machine, set()).add(run.probe.id)
            return self._close(run, now, "failed")
        record = self._close(run, now, "capped" if censored else "done")
        self.source.measured(run.probe, run.platform, now - run.start, censored)
        return record

    def restore(self, running: list[ProbeRun], closed: list[ProbeRecord], last_token: int) -> None:
        """Take up where a stopped prober left off (the service restarted, or a step was not committed): its running
        probes, the budget its probes used (their caps while running, their lengths once closed) and the probes
        cancelled or failed per machine."""
        self.running = {run.machine: run for run in running}
        self.used, self.refused = {}, {}
        self._token = max(self._token, last_token)
        for run in running:
            hour = (run.platform, int(run.start // HOUR))
            self.used[hour] = self.used.get(hour, 0.0) + self._reserve(run.platform)
        for record in closed:
            hour = (record.platform, int(record.start // HOUR))
            self.used[hour] = self.used.get(hour, 0.0) + record.end - record.start
            if record.outcome in ("cancelled", "failed"):
                self.refused.setdefault(record.machine, set()).add(record.probe)

    def _start(self, machine: Machine, now: float) -> ProbeRun | None:
        budget = self.budgets.get(machine.platform)
        hour = (machine.platform, int(now // HOUR))
        if budget is None or self.used.get(hour, 0.0) + budget.cap_s > budget.seconds_per_hour:
            return None
        busy = {run.probe.id for run in self.running.values() if run.platform == machine.platform}  # one copy at a time
        probe = self.source.next_probe(
            machine.platform, machine.id, now, frozenset(self.refused.get(machine.id, set()) | busy)
        )
        if probe is None:
            return None
        # inf for a real run: it reserves and may use its whole cap
        full = self.duration(probe, machine.platform)
        self._token += 1
        run = ProbeRun(
            probe, machine.id, machine.platform, now, min(full, budget.cap_s), full > budget.cap_s, self._token
        )
        self.used[hour] = self.used.get(hour, 0.0) + budget.cap_s
        self.running[machine.id] = run
        return run

    def _reserve(self, platform: str) -> float:
        """What a running probe holds of its hour's budget: its cap (nothing on a platform no longer given one)."""
        budget = self.budgets.get(platform)
        return budget.cap_s if budget is not None else 0.0

    def _close(self, run: ProbeRun, now: float, outcome: Outcome) -> ProbeRecord:
        del self.running[run.machine]
        hour = (run.platform, int(run.start // HOUR))
        self.used[hour] -= self._reserve(run.platform) - (now - run.start)
        record = ProbeRecord(
            run.probe.id, run.probe.algorithm, run.machine, run.platform, run.start, now, outcome, run.token
        )
        self.records.append(record)
        return record


@dataclass
class RankedCandidates:
    """A probe source over a fixed set of candidate jobs, each measured at most once per platform.

    For a machine it offers the candidate of best acquisition score (:func:`data.acquisition.rank`)
    among the algorithms that run on its platform, against what is known there: the runs given at the
    start (the store's history) and the probes measured since. A pair's ranking is computed once and kept
    until one of its probes is measured (ranking fits models; machines ask at every event). Every probe's
    result is kept as a measurement with source ``probe`` (censored at the cap), for the retrain worker.
    """

    candidates: list[ProbeJob]
    # pair -> (features, seconds) of finished runs
    known: dict[tuple[str, str], list[tuple[dict[str, float], float]]]
    rule: Rule = "coverage"
    cost_weight: float = 1.0
    measurements: list[Measurement] = field(default_factory=list)
    _probed: set[tuple[str, str]] = field(default_factory=set)  # (probe id, platform)
    # pair -> (score, job), best first
    _ranked: dict[tuple[str, str], list[tuple[float, ProbeJob]]] = field(default_factory=dict)

    def next_probe(self, platform: str, machine: str, now: float, refused: frozenset[str]) -> ProbeJob | None:
        best: tuple[float, ProbeJob] | None = None
        for algorithm in sorted({c.algorithm for c in self.candidates}):
            pick = next((ranked for ranked in self._ranking(algorithm, platform) if ranked[1].id not in refused), None)
            if pick is not None and (best is None or pick[0] > best[0]):
                best = pick
        return best[1] if best is not None else None

    def measured(self, probe: ProbeJob, platform: str, seconds: float, censored: bool) -> None:
        self._probed.add((probe.id, platform))
        self._ranked.pop((probe.algorithm, platform), None)
        if not censored:
            self.known.setdefault((probe.algorithm, platform), []).append((probe.features, seconds))
        self.measurements.append(
            Measurement(
                run_id=f"probe-{probe.id}-{platform}-{len(self.measurements)}",
                algorithm=probe.algorithm,
                platform=platform,
                features=dict(probe.features),
                wall_seconds=seconds,
                censored=censored,
                exit_status=137 if censored else 0,
                source=Source.PROBE,
            )
        )

    def _ranking(self, algorithm: str, platform: str) -> list[tuple[float, ProbeJob]]:
        """The pair's candidates not yet measured, best first, against what is known there now."""
        pair = (algorithm, platform)
        if pair not in self._ranked:
            left = [
                c
                for c in self.candidates
                if c.algorithm == algorithm and c.runs_on(platform) and (c.id, platform) not in self._probed
            ]
            ranked: list[tuple[float, ProbeJob]] = []
            if left:
                runs = self.known.get(pair, [])
                pool = pd.DataFrame([c.features for c in left])
                measured = pd.DataFrame([f for f, _ in runs], columns=pool.columns)
                seconds = np.array([s for _, s in runs], dtype="float64")
                picks = rank(pool, measured, seconds, rule=self.rule, n=len(left), cost_weight=self.cost_weight)
                ranked = [(pick.score, left[pick.index]) for pick in picks]
            self._ranked[pair] = ranked
        return self._ranked[pair]
