"""Training without MLflow: candidates and champions kept in memory, for the simulator's ``service`` estimates.

The simulator retrains hundreds of times in one run; logging each candidate's figures and tables
and registering each version would cost more than the fits. These keep exactly what selection,
the guard and the oracle use (metrics, residual quantiles, the fitted composition, its envelope),
so the models a simulation serves are the ones the real pipeline would promote.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.base import RegressorMixin

from predictor.registry import Champion, registered_name
from training.champions import training_envelope, version_tags
from training.crossval import CVResult
from training.dataset import TrainingSet
from training.folds import FoldPlan
from training.guard import Decision, Incumbent
from training.tracking import Candidate, candidate_numbers


class MemoryTracker:
    """Keeps candidates' numbers only; sessions and notes are no-ops."""

    def __init__(self, coverage: float) -> None:
        self.coverage = coverage
        self._ids = itertools.count(1)

    @contextmanager
    def sessions(self, algorithms: Sequence[str], models: Sequence[str]) -> Iterator[dict[str, None]]:
        yield dict.fromkeys(algorithms)

    def log_candidate(
        self,
        session: None,
        training_set: TrainingSet,
        plan: FoldPlan,
        result: CVResult,
        model: RegressorMixin,
        *,
        params: Mapping[str, object] | None = None,
    ) -> Candidate:
        metrics, quantiles = candidate_numbers(training_set, plan, result, self.coverage)
        return Candidate(result.model_name, run_id=f"memory-{next(self._ids)}", metrics=metrics, residual_quantiles=quantiles)

    def note(self, session: None, tags: Mapping[str, str]) -> None:
        return None


@dataclass(frozen=True)
class Version:
    """One registered version: the fitted composition, the rows it was fitted on, and its tags."""

    number: str
    champion: Champion
    composition: dict[str, int]
    trained_runs: frozenset[str]


class MemoryChampions:
    """Registered versions and the ``champion`` alias per (algorithm, platform), in memory."""

    def __init__(self) -> None:
        self.versions: dict[tuple[str, str], list[Version]] = {}
        self.alias: dict[tuple[str, str], Version] = {}

    def incumbent(self, algorithm: str, platform: str) -> Incumbent | None:
        served = self.alias.get((algorithm, platform))
        if served is None:
            return None
        champion = served.champion
        names = champion.feature_names

        def predict(X: np.ndarray) -> np.ndarray:
            return np.asarray(champion.model.predict(pd.DataFrame(X, columns=names)), dtype="float64")

        return Incumbent(
            served.number, served.composition, served.trained_runs, names, predict,
            n_rows=len(served.trained_runs), metrics=champion.metrics,
        )  # fmt: skip

    def register(
        self,
        training_set: TrainingSet,
        candidate: Candidate,
        model: RegressorMixin,
        *,
        refit_seconds: float,
        coverage: float,
        composition: Mapping[str, int],
        decision: Decision,
        alias: bool,
    ) -> str:
        ts = training_set
        pair = (ts.algorithm, ts.platform)
        versions = self.versions.setdefault(pair, [])
        number = str(len(versions) + 1)
        champion = Champion(
            algorithm=ts.algorithm, platform=ts.platform, name=registered_name(*pair), version=number, flavor="sklearn",
            feature_names=list(ts.feature_names), model=model,
            tags={**version_tags(ts, candidate, composition, coverage), "guard_verdict": decision.verdict.value},
            envelope=training_envelope(ts),
        )  # fmt: skip
        version = Version(number, champion, dict(composition), frozenset(ts.run_ids))
        versions.append(version)
        if alias:
            self.alias[pair] = version
        return number

    def champions(self) -> dict[tuple[str, str], Champion]:
        """The champion of every pair that has one."""
        return {pair: version.champion for pair, version in self.alias.items()}
