"""The one interface through which the scheduler sees run times, and the oracles a simulation can plug in.

Every oracle is a :class:`predictor.oracle.Oracle`. The service passes :class:`predictor.oracle.RuntimeOracle`
(models); a simulation passes a table of true times, the same with lognormal error, the users' requested
times, fitted-model predictions, or no estimates at all.
"""

from __future__ import annotations

import hashlib
import json
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

from predictor.domain import Estimate
from predictor.oracle import JobQuery, Oracle

if TYPE_CHECKING:
    from scheduler.state import Job, Machine, Run

_NORMAL = NormalDist()


class QuantileOracle(ABC):
    """An oracle that also serves each job's upper quantiles (backfilling's ``quantile`` correction climbs them).

    Each ability an oracle may have beyond :class:`Oracle` is one of these classes: an oracle that has it subclasses
    it, and its user finds the ability by the oracle's class.
    """

    @abstractmethod
    def quantiles(self, job: Job, platform: str) -> tuple[float, ...]:
        """The job's served quantiles on ``platform``, in seconds ascending."""


class ObservingOracle(ABC):
    """An oracle that learns from every cleanly finished run, as the service's store records it."""

    @abstractmethod
    def observe(self, job: Job, run: Run, machine: Machine, wall: float) -> None:
        """``job`` finished cleanly on ``machine`` after ``wall`` seconds."""


class TerminationOracle(ABC):
    """An oracle that hears of every run that ends by itself, cleanly or with an error (users' recent run times)."""

    @abstractmethod
    def terminated(self, job: Job, wall: float) -> None:
        """``job`` ended (done or failed) after ``wall`` seconds."""


def job_key(algorithm: str, params: Mapping[str, Any] | None) -> str:
    """A job's identity for tables of per-job times: algorithm and canonical parameters."""
    return f"{algorithm}|{json.dumps(params or {}, sort_keys=True, default=str)}"


class TableOracle(Oracle):
    """Answers from a table {job key: {platform: seconds or None}}; ``label`` names where the numbers came from."""

    def __init__(self, table: Mapping[str, Mapping[str, float | None]], label: str) -> None:
        self.table = table
        self.label = label

    def answer(self, job: JobQuery) -> dict[str, Estimate]:
        """The row of the job; a job missing from the table is an error."""
        row = self.table[job_key(job.algorithm, job.params)]
        return {p: Estimate(platform=p, seconds=s, model_name=self.label) for p, s in row.items() if job.allows(p)}


class NoisyOracle(Oracle):
    """Another oracle's estimates times a lognormal factor exp(sigma * z), the same for the same job and platform."""

    def __init__(self, inner: Oracle, sigma: float, seed: int = 0) -> None:
        if sigma < 0:
            raise ValueError(f"sigma must be >= 0, got {sigma}")
        self.inner = inner
        self.sigma = sigma
        self.seed = seed

    def answer(self, job: JobQuery) -> dict[str, Estimate]:
        """Scale each available estimate by its own deterministic error factor."""
        key = job_key(job.algorithm, job.params)
        out = {}
        for p, e in self.inner.answer(job).items():
            if e.seconds is not None:
                e = e.model_copy(
                    update={"seconds": e.seconds * self.factor(key, p), "model_name": f"noisy:{self.sigma}"}
                )
            out[p] = e
        return out

    def factor(self, key: str, platform: str) -> float:
        """exp(sigma * z) with z a standard normal drawn from a hash of (seed, job, platform)."""
        digest = hashlib.blake2b(f"{self.seed}|{key}|{platform}".encode(), digest_size=8).digest()
        u = (int.from_bytes(digest, "big") + 0.5) / 2**64
        return math.exp(self.sigma * _NORMAL.inv_cdf(u))


class BlindOracle(Oracle):
    """Which platforms can run a job, and no run times: the scheduler schedules without estimates."""

    def __init__(self, inner: Oracle) -> None:
        self.inner = inner

    def answer(self, job: JobQuery) -> dict[str, Estimate]:
        """The inner oracle's platforms, every estimate withheld."""
        return {p: Estimate(platform=p, reason="no estimates") for p in self.inner.answer(job)}


def seconds(estimates: Mapping[str, Estimate]) -> dict[str, float | None]:
    """Platform -> the seconds to plan with (None where the oracle has none).

    An estimate for a job outside the model's training data is uncertain: the scheduler plans
    with its limit (the upper estimate), not its point.
    """
    return {p: e.limit if e.extrapolating and e.limit is not None else e.seconds for p, e in estimates.items()}
