"""Training without MLflow: candidates and champions kept in memory, for the simulator's ``service`` estimates.

The simulator retrains hundreds of times in one run; logging each candidate's figures and tables
and registering each version would cost more than the fits. These keep exactly what selection,
the guard and the oracle use (metrics, residual quantiles, the fitted composition, its envelope),
so the models a simulation serves are the ones the real pipeline would promote.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import RegressorMixin

from predictor.domain import MAX_WALL_SECONDS, Measurement, ServedEstimate, Target
from predictor.online import LiveMember
from predictor.registry import Champion, registered_name
from predictor.store.store import SERVED_LIVE, frame_of, live_frame, measurement_row
from training.champions import training_envelope, version_tags
from training.crossval import CVResult
from training.dataset import TrainingSet
from training.folds import FoldPlan
from training.guard import Decision, Incumbent
from training.tracking import Candidate, candidate_numbers


class MemoryTracker:
    """Keeps candidates' numbers only; sessions and notes are no-ops."""

    def __init__(self, coverage: float, limit_quantile: float = 0.95) -> None:
        self.coverage = coverage
        self.limit_quantile = limit_quantile
        self._ids = itertools.count(1)

    @contextmanager
    def sessions(
        self, algorithms: Sequence[str], models: Sequence[str], target: Target = Target.TIME
    ) -> Iterator[dict[str, None]]:
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
        metrics, quantiles = candidate_numbers(training_set, plan, result, self.coverage, self.limit_quantile)
        return Candidate(
            result.model_name, run_id=f"unlogged-{next(self._ids)}", metrics=metrics, residual_quantiles=quantiles
        )

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
    """Registered versions and the ``champion`` alias per (algorithm, platform, target), in memory."""

    def __init__(self) -> None:
        self.versions: dict[tuple[str, str, Target], list[Version]] = {}
        self.alias: dict[tuple[str, str, Target], Version] = {}
        self.judged: dict[tuple[str, str, Target], str] = {}

    def incumbent(self, algorithm: str, platform: str, target: Target = Target.TIME) -> Incumbent | None:
        key = (algorithm, platform, target)
        served = self.alias.get(key)
        if served is None:
            return None
        champion = served.champion
        names = champion.feature_names

        def predict(X: np.ndarray) -> np.ndarray:
            return np.asarray(champion.model.predict(pd.DataFrame(X, columns=names)), dtype="float64")

        return Incumbent(
            served.number,
            served.composition,
            served.trained_runs,
            names,
            predict,
            n_rows=len(served.trained_runs),
            metrics=champion.metrics,
            judged=self.judged.get(key),
        )

    def remember(self, algorithm: str, platform: str, fingerprint: str, target: Target = Target.TIME) -> None:
        self.judged[(algorithm, platform, target)] = fingerprint

    def served_model(
        self, algorithm: str, platform: str, target: Target = Target.TIME
    ) -> tuple[dict[str, int], str, Any, list[str]] | None:
        """The composition, version number, fitted model and feature order the alias of the pair's target points at."""
        served = self.alias.get((algorithm, platform, target))
        if served is None:
            return None
        return dict(served.composition), served.number, served.champion.model, list(served.champion.feature_names)

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
        key = (ts.algorithm, ts.platform, ts.target)
        versions = self.versions.setdefault(key, [])
        number = str(len(versions) + 1)
        champion = Champion(
            algorithm=ts.algorithm,
            platform=ts.platform,
            name=registered_name(*key),
            version=number,
            flavor="sklearn",
            feature_names=list(ts.feature_names),
            model=model,
            tags={
                **version_tags(ts, candidate, composition, coverage),
                "guard_verdict": decision.verdict.value,
                "judged_by": decision.metric,
            },
            envelope=training_envelope(ts, composition),
        )
        version = Version(number, champion, dict(composition), frozenset(ts.run_ids))
        versions.append(version)
        if alias:
            self.alias[key] = version
        return number

    def champions(self, target: Target = Target.TIME) -> dict[tuple[str, str], Champion]:
        """The champion of ``target`` of every pair that has one."""
        return {(a, p): version.champion for (a, p, t), version in self.alias.items() if t is target}


class MemoryMeasurements:
    """Measurements, served estimates and decisions in memory, read as :class:`predictor.store.MeasurementStore` reads them.

    The simulator stores every finished job here: a SQLite transaction per job end would cost more
    than the simulation. Frames come from the store's own :func:`~predictor.store.store.frame_of`.
    """

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._served: dict[str, ServedEstimate] = {}
        self._served_order: dict[tuple[str, str], list[str]] = {}
        self._by_id: dict[str, dict[str, Any]] = {}
        self._finished: dict[tuple[str, str], list[float]] = {}  # wall seconds of finished runs per pair
        self._informative: dict[tuple[str, str], int] = {}
        self.decision_rows: list[dict[str, Any]] = []
        self.live: dict[tuple[str, str, Target], LiveMember] = {}

    def add(self, measurements: Iterable[Measurement], served: Iterable[ServedEstimate] = ()) -> None:
        """Keep new runs (a run id seen before is ignored) and the estimates they were served; the live online
        champions of their pairs learn them, as the store's ``add`` has them do."""
        new = []
        for m in measurements:
            if m.run_id in self._by_id:
                continue
            new.append(m)
            pair = (m.algorithm, m.platform)
            row = self._by_id[m.run_id] = measurement_row(m)
            self._rows.setdefault(pair, []).append(row)
            if m.succeeded:
                self._finished.setdefault(pair, []).append(m.wall_seconds)
            if m.informative:
                self._informative[pair] = self._informative.get(pair, 0) + 1
        for s in served:
            if s.run_id not in self._served:
                self._served[s.run_id] = s
                self._served_order.setdefault((s.algorithm, s.platform), []).append(s.run_id)
        if self.live and new:
            pairs = {(m.algorithm, m.platform) for m in new}
            for member in self.live.values():
                if (member.algorithm, member.platform) in pairs:
                    member.learn(new)

    def set_live_member(self, key: tuple[str, str, Target], member: LiveMember | None) -> None:
        """Make ``member`` the live online champion of ``key``; None: it has none."""
        if member is None:
            self.live.pop(key, None)
        else:
            self.live[key] = member

    def live_members(self) -> dict[tuple[str, str, Target], LiveMember]:
        return dict(self.live)

    def live_revisions(self) -> dict[tuple[str, str, Target], tuple[str, int]]:
        return {key: (m.version, m.revision) for key, m in self.live.items()}

    def pairs(self) -> list[tuple[str, str]]:
        return sorted(self._finished)

    def count(
        self, algorithm: str | None = None, platform: str | None = None, *, informative_only: bool = False
    ) -> int:
        if algorithm is not None and platform is not None and informative_only:
            # the simulator asks this at every job end
            return self._informative.get((algorithm, platform), 0)
        return sum(1 for r in self._select(algorithm, platform) if not informative_only or _informative(r))

    def profile_table(self) -> dict[tuple[str, str], tuple[float, int]]:
        """Median wall seconds and count of finished runs of at most a year per pair (the oracle's fallback, as the store's)."""
        plausible = {pair: [w for w in walls if w <= MAX_WALL_SECONDS] for pair, walls in self._finished.items()}
        return {pair: (float(np.median(walls)), len(walls)) for pair, walls in plausible.items() if walls}

    def frame(
        self,
        algorithm: str | None = None,
        platform: str | None = None,
        successful_only: bool = True,
        *,
        with_censored: bool = False,
    ) -> pd.DataFrame:
        rows = [
            r
            for r in self._select(algorithm, platform)
            if not successful_only or r["exit_status"] == 0 or (with_censored and r["censored"])
        ]
        return frame_of(rows)

    def live_window(self, algorithm: str, platform: str, size: int) -> pd.DataFrame:
        found = []
        for run_id in reversed(self._served_order.get((algorithm, platform), [])):
            row = self._by_id.get(run_id)
            if row is not None and _informative(row):
                s = self._served[run_id]
                served = tuple(getattr(s, name) for name in SERVED_LIVE)
                found.append((run_id, *served, row["wall_seconds"], row["censored"], row["max_rss_kb"]))
                if len(found) == size:
                    break
        return live_frame(found[::-1])

    def served_pairs(self) -> list[tuple[str, str]]:
        return sorted(self._served_order)

    def add_decision(self, row: dict[str, Any]) -> None:
        self.decision_rows.append(row)

    def decisions(
        self, algorithm: str | None = None, platform: str | None = None, limit: int = 100, target: str | None = None
    ) -> list[dict[str, Any]]:
        """The newest ``limit`` decisions, newest first, as :meth:`MeasurementStore.decisions` filters them."""
        wanted = (("algorithm", algorithm), ("platform", platform), ("target", target))
        found = (r for r in reversed(self.decision_rows) if all(v is None or r.get(k) == v for k, v in wanted))
        return list(itertools.islice(found, limit))

    def _select(self, algorithm: str | None, platform: str | None) -> Iterator[dict[str, Any]]:
        for (a, p), rows in self._rows.items():
            if algorithm in (None, a) and platform in (None, p):
                yield from rows


def _informative(row: Mapping[str, Any]) -> bool:
    return row["exit_status"] == 0 or bool(row["censored"])
