"""How a scheduler plans, chosen by replaying the site's own past rather than by prediction error.

Equal prediction errors schedule differently: what matters to a backfilling scheduler is how the error falls (Gaussier
et al. 2015). So the *planning configuration* (whose estimates plan: the site's rule, the users' last two runs as
EASY++ has them (Tsafrir, Etsion & Feitelson 2007), the users' requests, or what the service serves; which of the
service's numbers: its point or a quantile of its residuals; how a job that outlives its plan is corrected; in which
order backfill candidates are tried) is chosen by replaying a window of the site's past jobs under each candidate and
keeping the one that does best on the site's objective. The service's numbers are production's: its learning loop
(:class:`training.service_loop.ServiceLoop`, the same selection, guard, online members and retrain rule) answers each
job of the window at its submission and learns each job at the instant the log says it ended, once per window; every
configuration that plans with the service replays those answers. There is no second learner here.

A guard, like the champion guard, moves off the configuration serving now only for a candidate better by ``margin``
on the same windows; a site starts from its own rule (EASY++ for backfilling, the requests for EDF), so the service
plans only where it beat that rule on the site's past. :func:`choose` is given the windows and nothing else, so a
choice cannot read the jobs it is later scored on. The configuration itself (:class:`scheduler.planning.PlanningConfig`)
is production's, which follows the newest choice (the embedded scheduler's backfilling, the Slurm plugin's
``time_min``); :func:`live_score` scores a choice on the jobs that came after it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from itertools import product
from pathlib import Path
from typing import Any, Literal

from features.swf import UNKNOWN, read_swf
from predictor.domain import Estimate, Measurement, ServedEstimate, Source
from predictor.intervals import scaled
from predictor.oracle import JobQuery, Oracle, ResolvedJob

# the configuration production follows, defined once
from scheduler.planning import (
    CORRECTIONS,
    NUMBERS,
    ORDERS,
    SOURCES,
    Family,
    PlanningConfig,
    site_rule,
)
from scheduler.run_times import QuantileOracle, job_key
from scheduler.specs import make_policy
from scheduler.state import Job, requested_seconds
from simulator.estimates import requested
from simulator.last_two import LastTwoMeanOracle
from simulator.learning import service_catalog
from simulator.metrics import Metrics
from simulator.runner import run
from simulator.workload import Workload
from simulator.workloads import swf
from training.service_loop import ServiceLoop
from training.settings import WorkerSettings

OBJECTIVES: dict[str, Callable[[Metrics], float]] = {  # lower is better
    "avebsld": lambda m: m.avebsld,
    "mean_wait": lambda m: m.mean_waiting,
    "mean_completion": lambda m: m.mean_completion,
}


def past_windows(
    log: Path, start: float, stop: float, parts: int, nodes: Literal["pooled", "packed"] = "pooled"
) -> list[Workload]:
    """The SWF log's jobs between its ``start`` and ``stop`` fractions as ``parts`` consecutive replays, each after all
    the log before it as history: the windows :func:`choose` scores on."""
    cuts = [start + (stop - start) * i / parts for i in range(parts + 1)]
    return [swf.replay(log, train_fraction=a, stop_fraction=b, nodes=nodes) for a, b in zip(cuts, cuts[1:])]


def candidates(family: Family) -> list[PlanningConfig]:
    """Every configuration worth replaying for ``family`` (the options a family has no use for left at default): the
    site's rules with the corrections that need no quantiles, the service with its numbers and every correction."""
    numbers = {"last-two": ("point",), "requested": ("point",), "service": NUMBERS}
    if family == "edf":
        return [PlanningConfig(s, n) for s in SOURCES for n in numbers[s]]
    corrections = {s: tuple(c for c in CORRECTIONS if s == "service" or c != "quantile") for s in SOURCES}
    if family == "conservative":
        return [PlanningConfig(s, n, c) for s in SOURCES for n in numbers[s] for c in corrections[s]]
    return [PlanningConfig(s, n, c, o) for s in SOURCES for n, c, o in product(numbers[s], corrections[s], ORDERS)]


class ServedAnswers(Oracle, QuantileOracle):
    """What the service answered each job of a workload at its submission, planned with ``level``'s quantile (None: the
    point); the upper quantiles above the planned number for ``correction=quantile``."""

    def __init__(self, answers: dict[str, dict[str, Estimate]], quantiles: dict[str, dict[str, dict[float, float]]]):
        self.answers, self.quantiles_of = answers, quantiles
        self.level: float | None = None

    def planned(self, level: float | None) -> ServedAnswers:
        """The same answers, planning with ``level``."""
        out = ServedAnswers(self.answers, self.quantiles_of)
        out.level = level
        return out

    def answer(self, job: JobQuery) -> dict[str, Estimate]:
        key = job_key(job.algorithm, job.params)
        out = {}
        for platform, estimate in self.answers[key].items():
            if not job.allows(platform):
                continue
            recorded = self.quantiles_of[key].get(platform, {})
            if self.level is not None and estimate.seconds is not None and recorded:
                estimate = estimate.model_copy(
                    update={"seconds": float(scaled(estimate.seconds, recorded, self.level))}
                )
            out[platform] = estimate
        return out

    def quantiles(self, job: Job, platform: str) -> tuple[float, ...]:
        """The served point scaled by its residual quantiles above the planned level, ascending (capped at the request)."""
        key = job_key(job.algorithm, job.params)
        estimate, recorded = self.answers[key].get(platform), self.quantiles_of[key].get(platform, {})
        if estimate is None or estimate.seconds is None or not recorded:
            return ()
        floor = max(self.level or 0.5, 0.5)
        request = requested_seconds(job.params)
        ladder = sorted({float(scaled(estimate.seconds, recorded, level)) for level in recorded if level > floor})
        return tuple(v for v in ladder if request is None or v < request)


def service_answers(workload: Workload, settings: WorkerSettings | None = None) -> ServedAnswers:
    """The service's answers for every job of ``workload``: production's loop, trained on the workload's history, answers
    each job at its submission and learns each one at the instant the site ended it (``workload.ended``; else its
    submission plus its run), as the site's accounting brings it."""
    loop = ServiceLoop(settings or WorkerSettings(), service_catalog(workload))
    loop.record(workload.history)
    events = sorted(
        [(spec.submit, 1, i) for i, spec in enumerate(workload.jobs)]
        + [
            (workload.ended.get(spec.id, spec.submit + min(spec.true_times.values())), 0, i)
            for i, spec in enumerate(workload.jobs)
        ]
    )
    answers: dict[str, dict[str, Estimate]] = {}
    quantiles: dict[str, dict[str, dict[float, float]]] = {}
    instant = workload.clock()
    for _, submitted, i in events:
        spec = workload.jobs[i]
        key = job_key(spec.algorithm, spec.params)
        if submitted:
            platforms = tuple(spec.true_times)
            answers[key] = loop.oracle.estimate_jobs(
                [ResolvedJob(spec.algorithm, platforms, dict(spec.features or {}))]
            )[0]
            quantiles[key] = {
                p: dict(model.quantiles) for p in platforms if (model := loop.oracle.models.get((spec.algorithm, p)))
            }
            continue
        platform, wall = next(iter(spec.true_times.items()))
        run_id = f"log-{spec.id}"
        end = workload.ended.get(spec.id, spec.submit + wall)
        measurement = Measurement(
            run_id=run_id,
            algorithm=spec.algorithm,
            platform=platform,
            features=dict(spec.features or {}),
            wall_seconds=wall,
            exit_status=1 if spec.fails else 0,
            source=Source.PRODUCTION,
            recorded_at=instant(end),
            context={"wait_seconds": max(end - wall - spec.submit, 0.0)},
        )
        served = answers.get(key, {}).get(platform)
        record = ServedEstimate.of(run_id, spec.algorithm, served, origin="scheduler") if served is not None else None
        loop.record([measurement], [record] if record is not None else [])
    return ServedAnswers(answers, quantiles)


def source_oracle(workload: Workload, config: PlanningConfig, answers: ServedAnswers | None) -> Oracle:
    """The estimates ``config`` plans with on ``workload``: the users' last two runs, their requests, or the service's
    answers (computed here when not given)."""
    if config.source == "last-two":
        return LastTwoMeanOracle(workload)
    if config.source == "requested":
        return requested(workload)
    return (answers or service_answers(workload)).planned(config.level)


@dataclass(frozen=True)
class Replayed:
    """One configuration replayed on a window: its metrics and what the replay cost."""

    config: PlanningConfig
    metrics: Metrics
    cpu_seconds: float
    wall_seconds: float


def replay_config(
    workload: Workload, family: Family, config: PlanningConfig, answers: ServedAnswers | None = None
) -> Replayed:
    """``workload`` scheduled by ``family`` planned with ``config`` (the service's answers given, or computed here)."""
    wall, cpu = time.perf_counter(), time.process_time()
    oracle = source_oracle(workload, config, answers)
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
    # mean objective relative to the incumbent's
    scores: dict[PlanningConfig, float] = field(default_factory=dict)
    jobs: int = 0
    cpu_seconds: float = 0.0
    raw: dict[PlanningConfig, list[float]] = field(default_factory=dict)  # the objective on each window
    # the best candidate by mean score, promoted or not
    challenger: PlanningConfig | None = None

    @property
    def runner_up(self) -> PlanningConfig | None:
        """The best candidate other than the chosen one, by mean score (None when there was no other): what the chosen
        one's live score is measured against."""
        others = [c for c in self.scores if c != self.chosen]
        return min(others, key=lambda c: (self.scores[c], c)) if others else None

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

    def decision_row(
        self,
        job_class: str,
        trigger: str,
        *,
        seen_until: float | None = None,
        serving: Serving | None = None,
        live: LiveScore | None = None,
    ) -> dict[str, object]:
        """The ``model_decisions`` row of this choice (what ``predictor models history`` lists): the job class as the
        algorithm, ``planning:FAMILY`` as the platform, and the configuration in ``details`` to serve on.

        ``details`` also holds what the next pass scores it live with: the runner-up and the instant of the log (its
        seconds) after which jobs count as live. A choice that keeps what ``serving`` served carries both on (with
        ``live``, its score so far), so the live window runs from when the configuration began to serve and against
        the runner-up of then: jobs no choice had seen; ``seen_until`` is the log's newest submission now."""
        carried = (
            serving is not None
            and serving.config == self.chosen
            and serving.since is not None
            and serving.runner_up is not None
        )
        runner_up = serving.runner_up if carried and serving is not None else self.runner_up
        since = serving.since if carried and serving is not None else seen_until
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
            "details": {
                **self.record(),
                "config": asdict(self.chosen),
                "runner_up": asdict(runner_up) if runner_up is not None else None,
                "runner_up_label": runner_up.label(self.family) if runner_up is not None else None,
                "runner_up_score": self.scores.get(runner_up) if runner_up is not None else None,
                "seen_until": seen_until,
                "live_since": since,
                "live": live.record() if carried and live is not None else None,
            },
        }


@dataclass(frozen=True)
class Serving:
    """A recorded planning decision as the next pass reads it back: the configuration it serves, the runner-up its live
    score is measured against, and the instant of the log (its seconds) after which jobs count as live (None: a
    decision recorded without them)."""

    config: PlanningConfig
    runner_up: PlanningConfig | None = None
    since: float | None = None

    @classmethod
    def from_details(cls, details: dict[str, Any]) -> Serving:
        """What a decision row's ``details`` recorded (:meth:`Choice.decision_row`); ValueError when unreadable."""
        runner_up, since = details.get("runner_up"), details.get("live_since")
        if since is not None and (isinstance(since, bool) or not isinstance(since, int | float)):
            raise ValueError(f"not an instant of the log: {since!r}")
        return cls(
            PlanningConfig.from_record(details["config"]),
            PlanningConfig.from_record(runner_up) if runner_up is not None else None,
            None if since is None else float(since),
        )


@dataclass(frozen=True)
class LiveScore:
    """How the serving configuration did on the jobs submitted after it was chosen, against its runner-up, both
    replayed on those jobs: ``score`` is the serving one's objective over the runner-up's (below 1: ahead)."""

    family: Family
    objective: str
    serving: PlanningConfig
    runner_up: PlanningConfig
    since: float
    jobs: int
    serving_value: float
    runner_up_value: float

    @property
    def score(self) -> float:
        return self.serving_value / max(self.runner_up_value, 1e-12)

    def behind(self, margin: float) -> bool:
        """Whether the runner-up did better by ``margin`` (a fraction of the serving one's objective), as a candidate
        must to be promoted."""
        return self.runner_up_value < self.serving_value * (1.0 - margin)

    def record(self) -> dict[str, object]:
        """The score as a plain row (a decision's ``details["live"]``)."""
        return {
            "objective": self.objective,
            "since": self.since,
            "jobs": self.jobs,
            "serving": self.serving.label(self.family),
            "runner_up": self.runner_up.label(self.family),
            "serving_value": self.serving_value,
            "runner_up_value": self.runner_up_value,
            "score": self.score,
        }

    def reverted_row(self, job_class: str, trigger: str, margin: float, seen_until: float) -> dict[str, object]:
        """The ``model_decisions`` row that reverts to the runner-up (decision ``reverted``): it serves from now on, its
        live window starts now, against the configuration it replaces; its ``live`` is this score seen from its side."""
        back = replace(
            self,
            serving=self.runner_up,
            runner_up=self.serving,
            serving_value=self.runner_up_value,
            runner_up_value=self.serving_value,
        )
        reason = (
            f"live {self.objective} {self.score:.3f} of the runner-up's on {self.jobs} jobs since the log's second "
            f"{self.since:.0f}: behind by more than {margin:.0%}, reverted to it"
        )
        return {
            "decided_at": datetime.now(UTC),
            "algorithm": job_class[:200],
            "platform": f"planning:{self.family}",
            "decision": "reverted",
            "trigger": trigger[:200],
            "challenger": self.runner_up.label(self.family)[:200],
            "incumbent": self.serving.label(self.family)[:200],
            "version": None,
            "serving_version": None,
            "n_rows": self.jobs,
            "reason": reason,
            "details": {
                "family": self.family,
                "objective": self.objective,
                "jobs": self.jobs,
                "promoted": False,
                "reason": reason,
                "incumbent": self.serving.label(self.family),
                "chosen": self.runner_up.label(self.family),
                "incumbent_score": None,
                "chosen_score": None,
                "config": asdict(self.runner_up),
                "runner_up": asdict(self.serving),
                "runner_up_label": self.serving.label(self.family),
                "runner_up_score": None,
                "seen_until": seen_until,
                "live_since": seen_until,
                "live": back.record(),
            },
        }


def last_submit(log: Path) -> float:
    """The newest submission of the SWF log (its seconds) among its finished jobs: how far a decision made now saw."""
    return max((j.submit for j in read_swf(log).jobs if j.run != UNKNOWN), default=0.0)


def jobs_after(log: Path, since: float, nodes: Literal["pooled", "packed"] = "pooled") -> Workload:
    """The SWF log's jobs submitted after ``since`` (its seconds), every job before them the history: what came after
    a decision that had seen the log up to ``since``."""
    return swf.replay(log, after=since, nodes=nodes)


def live_score(workload: Workload, family: Family, serving: Serving, objective: str = "avebsld") -> LiveScore:
    """``serving``'s configuration and its runner-up replayed on ``workload`` (:func:`jobs_after` the instant it began
    to serve), with the service's answers when either plans with them."""
    if serving.runner_up is None or serving.since is None:
        raise ValueError("the serving decision recorded no runner-up or instant to score it live against")
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    if not workload.jobs:
        raise ValueError("no jobs after the decision to score it on")
    pair = (serving.config, serving.runner_up)
    answers = service_answers(workload) if any(c.source == "service" for c in pair) else None
    ours, theirs = (OBJECTIVES[objective](replay_config(workload, family, c, answers).metrics) for c in pair)
    return LiveScore(family, objective, *pair, serving.since, len(workload.jobs), ours, theirs)


def choose(
    windows: Sequence[Workload],
    family: Family,
    incumbent: PlanningConfig | None = None,
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
    incumbent = incumbent or site_rule(family)
    configs = list(dict.fromkeys([incumbent, *(grid if grid is not None else candidates(family))]))
    raw: dict[PlanningConfig, list[float]] = {c: [] for c in configs}
    cpu = 0.0
    for window in windows:
        started = time.process_time()
        answers = service_answers(window) if any(c.source == "service" for c in configs) else None
        cpu += time.process_time() - started
        for config in configs:
            replayed = replay_config(window, family, config, answers)
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
