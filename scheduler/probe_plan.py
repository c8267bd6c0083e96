"""The service's probe source: a sweep plan's candidate jobs, ranked against what the store holds.

The simulator's :class:`scheduler.probing.RankedCandidates` knows each candidate's true time; the service
knows none, and learns from the store instead. For a machine, :class:`PlanCandidates` offers the best-ranked
candidate (:func:`data.probe.rank_candidates`, the ranking `predictor probe plan` prints) among the
pairs of its platform. A candidate whose run id (the one `predictor probe run` uses) is in the store is
never offered again, so probes the service ran, probes run by hand and restarts share one memory. A
pair's ranking is computed again after each of its probes ends, and at least every ``refresh_s`` seconds
(production runs change it too), not at every event: ranking fits a committee of models.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from data.acquisition import Rule
from data.probe import ProbeCandidate, Ranked, candidates, pairs_of, rank_candidates
from data.sweep import SweepPlan, load_plan
from predictor.catalog import Catalog
from predictor.settings import Settings
from predictor.store import MeasurementStore
from scheduler.probing import IdleProber, ProbeBudget, ProbeJob
from scheduler.settings import ProbeSettings

Pair = tuple[str, str]


@dataclass
class PlanCandidates:
    """A :class:`scheduler.probing.ProbeSource` over a plan's candidates per (algorithm, platform), ranked against the store."""

    pools: dict[Pair, list[ProbeCandidate]]
    store: MeasurementStore
    seed: int
    rule: Rule
    cost_weight: float = 1.0
    refresh_s: float = 300.0
    _ranked: dict[Pair, tuple[float, list[Ranked]]] = field(default_factory=dict)  # pair -> (when ranked, ranking)
    # run ids of probes that ended (a failed one leaves no run)
    _tried: set[str] = field(default_factory=set)

    @classmethod
    def from_plan(
        cls,
        plan: SweepPlan,
        catalog: Catalog,
        store: MeasurementStore,
        workdir: Path,
        *,
        rule: Rule,
        cost_weight: float = 1.0,
    ) -> PlanCandidates:
        """Every pair of ``plan``, its inputs generated (or reused) in ``workdir``: the folder every machine must read."""
        pools = {pair: candidates(plan, catalog, workdir, *pair) for pair in pairs_of(plan)}
        return cls(pools, store, plan.seed, rule, cost_weight)

    @property
    def platforms(self) -> set[str]:
        return {platform for _, platform in self.pools}

    def next_probe(self, platform: str, machine: str, now: float, refused: frozenset[str]) -> ProbeJob | None:
        best: Ranked | None = None
        for pair in self.pools:
            if pair[1] != platform:
                continue
            pick = next(
                (r for r in self._ranking(pair, now) if self._id(r.candidate) not in refused | self._tried), None
            )
            if pick is not None and (best is None or pick.pick.score > best.pick.score):
                best = pick
        if best is None:
            return None
        run = best.candidate.run
        return ProbeJob(
            self._id(best.candidate),
            run.algorithm,
            dict(best.candidate.features),
            params=dict(run.params),
            platforms=frozenset({platform}),
        )

    def measured(self, probe: ProbeJob, platform: str, seconds: float, censored: bool) -> None:
        """The executor stored the run itself (through the profile wrapper): rank the pair again at its next probe."""
        self._tried.add(probe.id)
        self._ranked.pop((probe.algorithm, platform), None)

    def _ranking(self, pair: Pair, now: float) -> list[Ranked]:
        when, ranking = self._ranked.get(pair, (None, []))
        if when is None or now - when >= self.refresh_s:
            pool = self.pools[pair]
            ranking = rank_candidates(
                pool, self.store, seed=self.seed, rule=self.rule, n=len(pool), cost_weight=self.cost_weight
            )
            self._ranked[pair] = (now, ranking)
        return ranking

    def _id(self, candidate: ProbeCandidate) -> str:
        return candidate.run_id(self.seed)


def idle_prober(
    settings: Settings, probing: ProbeSettings, store: MeasurementStore, catalog: Catalog
) -> IdleProber | None:
    """The scheduler service's prober as the probe settings ask: the probe plan's pairs, each platform with the same
    budget and cap; None without a plan or a budget (no probing)."""
    if probing.plan is None or probing.budget_s <= 0:
        return None
    plan = load_plan(probing.plan)
    source = PlanCandidates.from_plan(plan, catalog, store, probing.resolved_workdir(settings), rule=probing.rule)
    budget = ProbeBudget(probing.budget_s, probing.cap_s)
    return IdleProber(source, dict.fromkeys(source.platforms, budget))
