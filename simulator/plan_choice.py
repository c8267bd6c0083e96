"""The number a scheduler plans with, chosen by replaying the site's own past rather than by prediction error.

Equal prediction errors schedule differently: what matters to a backfilling scheduler is how the error falls (Gaussier
et al. 2015). So the *planning configuration* (which loss the scheduler-trained member learns with, which of its
numbers plans: the point or a quantile of its residuals, how a job that outlives its plan is corrected, in which
order backfill candidates are tried) is chosen by replaying a window of the site's past jobs under each candidate
and keeping the one that does best on the site's objective. A guard, like the champion guard, moves off the
configuration serving now only for a candidate better by ``margin`` on the same window. :func:`choose` is given the
window and nothing else, so a choice cannot read the jobs it is later scored on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from itertools import product
from pathlib import Path
from typing import Literal

from scheduler.planning_times import Correction
from scheduler.specs import make_policy
from simulator.metrics import Metrics
from simulator.online import SC15, OnlineOptions, OnlineOracle, with_plan
from simulator.runner import run
from simulator.workload import Workload
from simulator.workloads import swf

Family = Literal["easy", "conservative", "edf"]
LOSSES: dict[str, OnlineOptions] = {  # the loss families the member may learn with (models/online.py)
    "under-squared": OnlineOptions(under="squared", over="absolute"),  # an under-estimate costs more the larger it is
    "median": OnlineOptions(under="absolute", over="absolute"),  # both sides linear: the median of log run time
    "sc15": SC15,  # seconds learned directly, under-estimates squared, over-estimates linear, jobs weighted by area
}
NUMBERS = ("point", "q0.75")
CORRECTIONS: tuple[Correction, ...] = ("tsafrir", "quantile", "doubling")
ORDERS = ("fcfs", "sjbf", "saf")
OBJECTIVES: dict[str, Callable[[Metrics], float]] = {  # lower is better
    "avebsld": lambda m: m.avebsld,
    "mean_wait": lambda m: m.mean_waiting,
    "mean_completion": lambda m: m.mean_completion,
}


@dataclass(frozen=True, order=True)
class PlanningConfig:
    """One way to plan: the member's loss, the number that plans, the correction and the backfill order.

    The default, what a site serves before any choice, is the anchor's own setup (Gaussier et al. 2015): the SC'15
    loss, its point, EASY-SJBF, and underestimates corrected by doubling.
    """

    loss: str = "sc15"
    number: str = "point"
    correction: Correction = "doubling"
    order: str = "sjbf"

    def options(self) -> OnlineOptions:
        """The online member's options for this configuration."""
        return with_plan(LOSSES[self.loss], self.number)

    def policy(self, family: Family) -> str:
        """The policy spec of ``family`` planned this way (EDF has neither correction nor backfill order)."""
        if family == "easy":
            return f"easy:order={self.order},correction={self.correction}"
        if family == "conservative":
            return f"conservative:correction={self.correction}"
        return "edf"

    @classmethod
    def from_record(cls, record: dict[str, str]) -> PlanningConfig:
        """The configuration a decision row's details recorded (:meth:`Choice.decision_row`), checked."""
        config = cls(**{k: str(record[k]) for k in ("loss", "number", "correction", "order") if k in record})  # type: ignore[arg-type]
        if config.loss not in LOSSES or config.correction not in CORRECTIONS or config.order not in ORDERS:
            raise ValueError(f"not a planning configuration: {record}")
        config.options()  # the number must parse
        return config

    def label(self, family: Family) -> str:
        """A short name for tables."""
        if family == "edf":
            return f"{self.loss}, {self.number}"
        if family == "conservative":
            return f"{self.loss}, {self.number}, {self.correction}"
        return f"{self.loss}, {self.number}, {self.correction}, {self.order}"


def past_windows(
    log: Path, start: float, stop: float, parts: int, nodes: Literal["pooled", "packed"] = "pooled"
) -> list[Workload]:
    """The SWF log's jobs between its ``start`` and ``stop`` fractions as ``parts`` consecutive replays, each after all
    the log before it as history: the windows :func:`choose` scores on."""
    cuts = [start + (stop - start) * i / parts for i in range(parts + 1)]
    return [swf.replay(log, train_fraction=a, stop_fraction=b, nodes=nodes) for a, b in zip(cuts, cuts[1:])]


def candidates(family: Family) -> list[PlanningConfig]:
    """Every configuration worth replaying for ``family`` (the options a family has no use for left at default)."""
    if family == "edf":
        return [PlanningConfig(loss, number) for loss, number in product(LOSSES, NUMBERS)]
    if family == "conservative":
        return [PlanningConfig(loss, number, c) for loss, number, c in product(LOSSES, NUMBERS, CORRECTIONS)]
    return [PlanningConfig(*combo) for combo in product(LOSSES, NUMBERS, CORRECTIONS, ORDERS)]


@dataclass(frozen=True)
class Replayed:
    """One configuration replayed on a window: its metrics and what the replay cost."""

    config: PlanningConfig
    metrics: Metrics
    cpu_seconds: float
    wall_seconds: float


def replay_config(workload: Workload, family: Family, config: PlanningConfig) -> Replayed:
    """``workload`` scheduled by ``family`` planned with ``config`` (the member learning as the replay goes)."""
    wall, cpu = time.perf_counter(), time.process_time()
    oracle = OnlineOracle(workload, config.options())
    _, metrics = run(workload, make_policy(config.policy(family)), oracle, label=config.label(family))
    return Replayed(config, metrics, time.process_time() - cpu, time.perf_counter() - wall)


@dataclass(frozen=True)
class Choice:
    """What the guard decided on a window: the configuration to serve, and every candidate's score there."""

    family: Family
    objective: str
    incumbent: PlanningConfig
    chosen: PlanningConfig
    promoted: bool
    reason: str
    scores: dict[PlanningConfig, float] = field(default_factory=dict)  # mean objective relative to the incumbent's
    jobs: int = 0
    cpu_seconds: float = 0.0
    raw: dict[PlanningConfig, list[float]] = field(default_factory=dict)  # the objective on each window
    challenger: PlanningConfig | None = None  # the best candidate by mean score, promoted or not

    def record(self) -> dict[str, object]:
        """The decision as a plain row (for ``models history`` and results files)."""
        return {
            "family": self.family,
            "objective": self.objective,
            "jobs": self.jobs,
            "promoted": self.promoted,
            "reason": self.reason,
            "incumbent": self.incumbent.label(self.family),
            "chosen": self.chosen.label(self.family),
            "incumbent_score": self.scores.get(self.incumbent),
            "chosen_score": self.scores.get(self.chosen),
            "cpu_seconds": self.cpu_seconds,
            "incumbent_per_window": self.raw.get(self.incumbent),
            "chosen_per_window": self.raw.get(self.chosen),
        }

    def decision_row(self, job_class: str, trigger: str) -> dict[str, object]:
        """The ``model_decisions`` row of this choice (what ``predictor models history`` lists): the job class as the
        algorithm, ``planning:FAMILY`` as the platform, and the configuration in ``details`` to serve on."""
        return {
            "decided_at": datetime.now(UTC),
            "algorithm": job_class[:200],
            "platform": f"planning:{self.family}",
            "decision": "promoted" if self.promoted else "kept",
            "trigger": trigger[:200],
            "challenger": self.challenger.label(self.family)[:200] if self.challenger else "",
            "incumbent": self.incumbent.label(self.family)[:200],
            "version": None,
            "serving_version": None,
            "n_rows": self.jobs,
            "reason": self.reason,
            "details": {**self.record(), "config": asdict(self.chosen)},
        }


def choose(
    windows: Sequence[Workload],
    family: Family,
    incumbent: PlanningConfig = PlanningConfig(),
    *,
    objective: str = "avebsld",
    margin: float = 0.02,
    grid: Sequence[PlanningConfig] | None = None,
) -> Choice:
    """Replay each of ``windows`` (consecutive stretches of the site's past: nothing after them) under every candidate
    and score it by its objective relative to ``incumbent``'s on the same window, averaged over the windows (1 is
    the incumbent's own score; several windows keep one stretch's accidents from deciding). Serve the best only if
    its score is below ``1 - margin`` and it beats the incumbent by the margin on most windows (more than half): a mean
    moved by one window alone is one stretch's accident, which the replays on HPC2N and wagap showed does not carry
    over; else keep ``incumbent``."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    if not 0 <= margin < 1:
        raise ValueError(f"margin must be in [0, 1), got {margin}")
    if not windows or not all(w.jobs for w in windows):
        raise ValueError("a choice needs at least one window of past jobs, none of them empty")
    configs = list(dict.fromkeys([incumbent, *(grid if grid is not None else candidates(family))]))
    raw: dict[PlanningConfig, list[float]] = {c: [] for c in configs}
    cpu = 0.0
    for window in windows:
        for config in configs:
            replayed = replay_config(window, family, config)
            raw[config].append(OBJECTIVES[objective](replayed.metrics))
            cpu += replayed.cpu_seconds
    scores = {
        c: sum(v / max(k, 1e-12) for v, k in zip(raw[c], raw[incumbent], strict=True)) / len(windows) for c in configs
    }
    best = min(configs, key=lambda c: (scores[c], c != incumbent))
    wins = sum(ours < theirs * (1.0 - margin) for ours, theirs in zip(raw[best], raw[incumbent], strict=True))
    promoted = best != incumbent and scores[best] < 1.0 - margin and wins > len(windows) / 2
    jobs = sum(len(w.jobs) for w in windows)
    where = f"{len(windows)} window(s), {jobs} past jobs"
    won = f"better by {margin:.0%} on {wins} of {len(windows)} window(s)"
    if best == incumbent:
        reason = f"the serving configuration is the best of {len(configs)} on {where}"
    elif promoted:
        reason = f"{objective} {scores[best]:.3f} of the serving configuration's on {where}, {won}"
    else:
        reason = (
            f"best {objective} {scores[best]:.3f} of the serving configuration's on {where}, {won}: not on most, kept"
        )
    chosen = best if promoted else incumbent
    return Choice(family, objective, incumbent, chosen, promoted, reason, scores, jobs, cpu, raw, challenger=best)
