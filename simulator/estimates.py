"""What the simulated scheduler is told: the truth, fitted models, noisy truth, users' requests, or nothing.

Each source is an object that builds the oracle for a workload and a seed: :class:`Truth` (true times),
:class:`Fitted` (a zoo model per algorithm and platform fitted on the workload's history, the same
:class:`predictor.registry.Champion` objects the service's runtime oracle calls), :class:`Noisy` (true times x a
lognormal factor), :class:`Blind` (no estimates), :class:`Requested` (the time the user asked for, where the
workload has one), :class:`LastTwoMean` (the user's last two run times, learnt as jobs end: Tsafrir et al.
2007, :mod:`simulator.last_two`), :class:`Online` (the scheduler-trained member, learning per ended job:
:mod:`simulator.online`), :class:`Service` (the product itself: champions chosen by the real training pipeline, retrained
as jobs end; :mod:`simulator.learning`) and :class:`Champions` (the service's registered models). Their names in
specs (``oracle``, ``model:MEMBER``, ``noisy:SIGMA``, ...) are :mod:`simulator.scenarios`'.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pandas as pd

from predictor.domain import Measurement
from predictor.registry import Champion
from scheduler.run_times import BlindOracle, NoisyOracle, Oracle, TableOracle, job_key
from scheduler.state import requested_seconds
from simulator.last_two import LastTwoMeanOracle
from simulator.workload import JobSpec, Workload

if TYPE_CHECKING:
    from simulator.learning import LearningOptions
    from simulator.online import OnlineOptions

DEFAULT_MODEL = "linear_log"


def truth(workload: Workload) -> TableOracle:
    """The true run time of every job on every platform that can run it."""
    return TableOracle({job_key(j.algorithm, j.params): j.true_times for j in workload.jobs}, "oracle")


def requested(workload: Workload) -> TableOracle:
    """The user's requested time (``params['requested_time']``) on every platform; unknown where absent or not positive."""
    table = {}
    for j in workload.jobs:
        value = requested_seconds(j.params)
        table[job_key(j.algorithm, j.params)] = dict.fromkeys(j.true_times, value)
    return TableOracle(table, "requested")


def fit_champions(
    history: Sequence[Measurement], model: str = DEFAULT_MODEL, seed: int = 0
) -> dict[tuple[str, str], Champion]:
    """One fitted zoo ``model`` per (algorithm, platform) of ``history``, wrapped as champions."""
    from models.zoo import make_model

    groups: dict[tuple[str, str], list[Measurement]] = defaultdict(list)
    for m in history:
        if m.succeeded:
            groups[(m.algorithm, m.platform)].append(m)
    out = {}
    for (algorithm, platform), runs in sorted(groups.items()):
        names = sorted({name for r in runs for name in r.features})
        frame = pd.DataFrame([[r.features.get(n, np.nan) for n in names] for r in runs], columns=names)
        fitted = make_model(model, seed=seed).fit(frame, np.array([r.wall_seconds for r in runs]))
        out[(algorithm, platform)] = Champion(
            algorithm=algorithm,
            platform=platform,
            name=f"sim-{model}-{algorithm}-{platform}",
            version="fitted",
            flavor="sklearn",
            feature_names=names,
            model=fitted,
        )
    return out


def predicted(jobs: Sequence[JobSpec], champions: dict[tuple[str, str], Champion], label: str) -> TableOracle:
    """Each job's estimate from the champion of its (algorithm, platform), predicted in one batch per pair.

    Gives the numbers :class:`predictor.oracle.RuntimeOracle` gives for the same champions and features, and
    leaves a platform without a champion unknown.
    """
    table: dict[str, dict[str, float | None]] = {
        job_key(j.algorithm, j.params): dict.fromkeys(j.true_times) for j in jobs
    }
    by_pair: dict[tuple[str, str], list[JobSpec]] = defaultdict(list)
    for j in jobs:
        for platform in j.true_times:
            by_pair[(j.algorithm, platform)].append(j)
    for pair, members in by_pair.items():
        champion = champions.get(pair)
        if champion is None:
            continue
        rows = [[float((j.features or {}).get(n, np.nan)) for n in champion.feature_names] for j in members]
        values = np.maximum(champion.model.predict(pd.DataFrame(rows, columns=champion.feature_names)), 0.0)
        for j, value in zip(members, values.tolist()):
            table[job_key(j.algorithm, j.params)][pair[1]] = value
    return TableOracle(table, label)


class EstimateSource(Protocol):
    """Where a simulation's estimates come from: the oracle it builds for a workload and a seed (of noise and fits)."""

    def oracle(self, workload: Workload, seed: int = 0) -> Oracle: ...


@dataclass(frozen=True)
class Truth:
    """``oracle``: the true times."""

    def oracle(self, workload: Workload, seed: int = 0) -> Oracle:
        return truth(workload)


@dataclass(frozen=True)
class Blind:
    """``none``: no estimates at all."""

    def oracle(self, workload: Workload, seed: int = 0) -> Oracle:
        return BlindOracle(truth(workload))


@dataclass(frozen=True)
class Requested:
    """``requested``: the time each user asked for."""

    def oracle(self, workload: Workload, seed: int = 0) -> Oracle:
        return requested(workload)


@dataclass(frozen=True)
class LastTwoMean:
    """``last_two_mean``: the mean of the user's last two terminated jobs' run times, capped by the request (online)."""

    def oracle(self, workload: Workload, seed: int = 0) -> Oracle:
        return LastTwoMeanOracle(workload)


@dataclass(frozen=True)
class Noisy:
    """``noisy:SIGMA``: the true times x a lognormal factor of log-sd ``sigma``, drawn from the seed."""

    sigma: float = 0.5

    def oracle(self, workload: Workload, seed: int = 0) -> Oracle:
        return NoisyOracle(truth(workload), self.sigma, seed)


@dataclass(frozen=True)
class Fitted:
    """``model:MEMBER``: zoo ``member`` fitted per (algorithm, platform) on the workload's history."""

    member: str = DEFAULT_MODEL

    def oracle(self, workload: Workload, seed: int = 0) -> Oracle:
        if not workload.history:
            raise ValueError(f"workload {workload.name} has no history to fit a model on")
        return predicted(workload.jobs, fit_champions(workload.history, self.member, seed), f"model:{self.member}")


@dataclass(frozen=True)
class Service:
    """``service:OPTIONS``: the product, learning online (:mod:`simulator.learning`; default options when None)."""

    options: LearningOptions | None = None

    def oracle(self, workload: Workload, seed: int = 0) -> Oracle:
        from simulator.learning import LearningOptions, LearningOracle
        from training.settings import WorkerSettings

        if not workload.history:
            raise ValueError(f"workload {workload.name} has no history for the service to start from")
        return LearningOracle(workload, WorkerSettings(seed=seed), self.options or LearningOptions())


@dataclass(frozen=True)
class Online:
    """``online:OPTIONS`` (``sc15``: its SC'15-style preset): the scheduler-trained member, one update per ended job
    (:mod:`simulator.online`; default options when None)."""

    options: OnlineOptions | None = None

    def oracle(self, workload: Workload, seed: int = 0) -> Oracle:
        from simulator.online import OnlineOptions, OnlineOracle

        return OnlineOracle(workload, self.options or OnlineOptions())


@dataclass(frozen=True)
class Champions:
    """``champions``: the service's registered models, as ``load`` builds their runtime oracle."""

    load: Callable[[], Oracle]

    def oracle(self, workload: Workload, seed: int = 0) -> Oracle:
        return self.load()
