"""The service's learning loop in one process, for replays: what the store, the retrain worker and the API do apart.

At a site the store records each finished run (and its live online champions learn it), the retrain worker trains
what its rule says is due (:func:`training.worker.why_due`) under the guard, and the API serves the champions, with
the live members' numbers. :class:`ServiceLoop` runs those same functions on one clock: :meth:`ServiceLoop.record`
is a run ending, its :attr:`~ServiceLoop.oracle` what the API would answer now. Tracking and the registry are kept
in memory (:mod:`training.memory`), as is the store; training runs in this process. The simulator's ``service``
source and the live-accuracy replay both drive it, so what they measure is what production does.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from predictor.catalog import Catalog
from predictor.domain import Measurement, ServedEstimate, Target
from predictor.online import with_live_member
from predictor.oracle import Pair, RuntimeOracle, ServedModel, serve_model
from training.dataset import load_training_sets
from training.live_members import refresh_live_members
from training.memory import MemoryChampions, MemoryMeasurements, MemoryTracker
from training.pipeline import TrainingOutcome, decision_row, train
from training.settings import WorkerSettings
from training.worker import why_due


@dataclass
class LoopCosts:
    """What the loop spent on training: retrained pairs, sessions and their CPU seconds."""

    retrains: int = 0
    sessions: int = 0
    train_cpu_s: float = 0.0


class ServiceLoop:
    """Runs recorded, pairs retrained when due, champions served: see the module docstring.

    ``targets`` are the targets it learns (run time by default; peak memory too where the runs measure it).
    """

    def __init__(
        self,
        settings: WorkerSettings,
        catalog: Catalog,
        *,
        targets: Sequence[Target] = (Target.TIME,),
    ) -> None:
        self.settings = settings.model_copy(update={"n_jobs": 1})
        self.targets = tuple(targets)
        self.store = MemoryMeasurements()
        self.book = MemoryChampions()
        self.tracker = MemoryTracker(settings.interval_coverage, settings.limit_quantile)
        self.costs = LoopCosts()
        self.oracle = RuntimeOracle(
            catalog,
            {},
            coverage=settings.interval_coverage,
            limit_quantile=settings.limit_quantile,
            memory_limit_quantile=settings.memory_limit_quantile,
        )

    @property
    def decisions(self) -> list[dict[str, object]]:
        """Every decision recorded so far, oldest first (what ``predictor models history`` would list)."""
        return self.store.decision_rows

    def record(
        self, measurements: Iterable[Measurement], served: Iterable[ServedEstimate] = ()
    ) -> list[TrainingOutcome]:
        """Runs ended: store them (live members learn them), train the pairs the worker's rule finds due, and serve what
        now holds the aliases. The training outcomes, if any."""
        runs = list(measurements)
        new_pairs = {(m.algorithm, m.platform) for m in runs} - set(self.oracle.profile_table)
        self.store.add(runs, served)
        due: dict[tuple[Pair, Target], str] = {}
        for pair in sorted({(m.algorithm, m.platform) for m in runs}):
            for target in self.targets:
                # the worker's rule, which reads no live window while too few runs arrived for either trigger
                reason = why_due(self.settings, self.store, *pair, self.book.incumbent(*pair, target), target)
                if reason is not None:
                    due[(pair, target)] = reason
        outcomes = self._retrain(due) if due else []
        self._serve(profile=bool(outcomes or new_pairs))
        return outcomes

    def _retrain(self, due: dict[tuple[Pair, Target], str]) -> list[TrainingOutcome]:
        """Train the due pairs of each target under the guard, record the decisions, and make the live members."""
        outcomes = []
        cpu = time.process_time()
        for target in self.targets:
            reasons = {pair: reason for (pair, t), reason in due.items() if t is target}
            sets = [
                ts
                for pair in sorted(reasons)
                for ts in load_training_sets(self.store, [pair[0]], [pair[1]], target=target)
            ]
            if not sets:
                continue
            trained = train(self.settings, sets, tracker=self.tracker, champions=self.book, target=target)
            for outcome in trained:
                reason = reasons[(outcome.algorithm, outcome.platform)]
                self.store.add_decision(decision_row(outcome, f"worker: {reason}"))
            refresh_live_members(self.store, self.book, trained)
            self.costs.retrains += len(sets)
            self.costs.sessions += 1
            outcomes += trained
        self.costs.train_cpu_s += time.process_time() - cpu
        return outcomes

    def _serve(self, *, profile: bool) -> None:
        """Swap in the champions that changed, each online one answering with its live member (the very object the
        store teaches, so it needs no new swap as it learns), and the profile table when asked."""
        served = {Target.TIME: self.oracle.models, Target.MEMORY: self.oracle.memory_models}
        models: dict[Target, dict[Pair, ServedModel]] = {}
        for target in Target:
            current, models[target] = served[target], {}
            for pair, champion in self.book.champions(target).items():
                member = self.store.live.get((*pair, target))
                if member is not None and member.version == champion.version:
                    champion = with_live_member(champion, member)
                existing = current.get(pair)
                same = existing is not None and (
                    existing.champion is champion
                    or (existing.champion.version == champion.version and existing.champion.model is champion.model)
                )
                models[target][pair] = existing if same and existing is not None else serve_model(champion)
        self.oracle.swap(
            models[Target.TIME],
            self.store.profile_table() if profile else None,
            memory=models[Target.MEMORY],
        )
