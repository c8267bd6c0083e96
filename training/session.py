"""One training session of a target: its pairs' fold plans, their fits fanned out, each candidate logged as its folds come
in, the guard's decisions and the versions they register.

A :class:`TrainingSession` carries the session's state from phase to phase (:func:`training.pipeline.train` calls
them): :meth:`~TrainingSession.plan` the folds of the pairs to train, :meth:`~TrainingSession.cross_validate` every
member on them and judge each pair as it completes, :meth:`~TrainingSession.register` what the decisions register,
and give the :meth:`~TrainingSession.outcomes`. Each pair's cross-validations and candidates are kept by member in its
:class:`PairTraining`, and each decision in a :class:`Pick` that knows its pair.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from sklearn.base import RegressorMixin

from models import available_models, make_model
from models.ensemble import ENSEMBLE, AveragedRegressor
from models.zoo import applicable, is_rule
from predictor.domain import Target
from predictor.envelope import TrainingEnvelope
from predictor.settings import Settings
from training.champions import best_candidate, served_with_envelope
from training.crossval import CVResult, FoldFit, collect, fold_envelopes, one_pass
from training.dataset import TrainingSet
from training.ensemble import cross_validated_ensemble, fixed_ensemble, leads
from training.fanout import run_fits
from training.fit_tasks import EVERY_FOLD, Failed, Fit, FitResult, Refit
from training.folds import FoldPlan
from training.guard import Decision, GuardSettings, Incumbent, RunsSeen, Serve, Verdict, judge, label
from training.settings import TrainingSettings
from training.tracking import Candidate

log = logging.getLogger(__name__)

Progress = Callable[[str], None]


class Tracker(Protocol):
    """Where training logs each session and candidate: MLflow (:class:`~training.tracking.MlflowTracker`) or memory."""

    def sessions(
        self, algorithms: Sequence[str], models: Sequence[str], target: Target = Target.TIME
    ) -> AbstractContextManager[dict[str, Any]]: ...

    def log_candidate(
        self,
        session: Any,
        training_set: TrainingSet,
        plan: FoldPlan,
        result: CVResult,
        model: RegressorMixin,
        *,
        params: Mapping[str, object] | None = None,
    ) -> Candidate: ...

    def note(self, session: Any, tags: Mapping[str, str]) -> None: ...


class ChampionBook(Protocol):
    """Where champions are registered and looked up: the MLflow registry
    (:class:`~training.champions.MlflowChampions`) or memory."""

    def incumbent(self, algorithm: str, platform: str, target: Target = Target.TIME) -> Incumbent | None: ...

    def remember(self, algorithm: str, platform: str, fingerprint: str, target: Target = Target.TIME) -> None: ...

    def served_model(
        self, algorithm: str, platform: str, target: Target = Target.TIME
    ) -> tuple[dict[str, int], str, Any, list[str]] | None: ...

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
    ) -> str: ...


@dataclass(frozen=True)
class TrainingOutcome:
    """What one (algorithm, platform) got for ``target``: the guard's decision, what serves now, and every candidate's pooled CV
    metrics.

    ``challenger`` is the session's best candidate (a member or ``ensemble``); ``serving`` the zoo
    member of the version the alias points at after the decision and ``version`` its number
    (None when nothing serves, or on a dry run that would change it); ``serving_run`` the session's child run of
    that candidate (None when it is none of them); ``registered`` the versions this session added.
    """

    algorithm: str
    platform: str
    challenger: str
    decision: Decision
    serving: str | None
    version: str | None
    registered: list[str]
    metrics: dict[str, dict[str, float]]
    n_rows: int
    serving_run: str | None = None
    target: Target = Target.TIME
    # the forward-validation metric that judged the pair
    metric: str = "rae"


@dataclass
class PairTraining:
    """One (algorithm, platform) set of a session: its fold plan, the champion serving it, the members cross-validated on
    it (a member whose fit failed is dropped), the metric that judges it, and each member's cross-validation and logged
    candidate as they come in, then the versions registered for it."""

    ts: TrainingSet
    plan: FoldPlan
    incumbent: Incumbent | None
    members: list[str]
    # the members asked for (the others are the site's rules and the incumbent's)
    chosen: list[str]
    metric: str
    results: dict[str, CVResult] = field(default_factory=dict)
    candidates: dict[str, Candidate] = field(default_factory=dict)
    # each version registered, with whether it took the alias
    registered: list[tuple[str, bool]] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Whether every member still in has its cross-validation."""
        return len(self.results) == len(self.members)

    @cached_property
    def envelopes(self) -> list[TrainingEnvelope]:
        """Each fold's training envelope, fitted once for every learned member (:func:`~training.crossval.fold_envelopes`)."""
        return fold_envelopes(self.ts, self.plan)

    def served_by(self, member: str) -> list[TrainingEnvelope | None]:
        """The envelope each fold serves ``member`` with: the fold's, or none where its champion would have none
        (:func:`~training.champions.served_with_envelope`)."""
        if served_with_envelope(self.ts, {member: 1}):
            return list(self.envelopes)
        return [None] * self.plan.n_folds


@dataclass(frozen=True)
class Pick:
    """A pair's challenger and incumbent (candidates and compositions), what the guard decided between them, and every
    candidate of the pair."""

    pair: PairTraining
    challenger: Candidate
    challenger_members: dict[str, int]
    incumbent: Candidate | None
    incumbent_members: dict[str, int]
    decision: Decision
    candidates: list[Candidate]

    def to_register(self) -> list[tuple[Candidate, dict[str, int], bool]]:
        """(candidate, composition, takes the alias) for each version to register, in order."""
        serve, out = self.decision.serve, []
        if self.decision.register_challenger:
            out.append((self.challenger, self.challenger_members, serve is Serve.CHALLENGER))
        if serve is Serve.INCUMBENT and self.incumbent is not None:
            out.append((self.incumbent, self.incumbent_members, True))
        return out

    @cached_property
    def refitted(self) -> list[str]:
        """The members refitted on every row for the versions it registers."""
        return sorted({m for _, members, _ in self.to_register() for m in members})

    def outcome(self, dry_run: bool) -> TrainingOutcome:
        """The pair's outcome: what serves after the decision (on a dry run: what would, without its version number)."""
        ts, incumbent, registered = self.pair.ts, self.pair.incumbent, self.pair.registered
        serve = self.decision.serve
        aliased = next((version for version, alias in registered if alias), None)
        serving: str | None
        version: str | None
        run: str | None
        if serve is Serve.CHALLENGER and (dry_run or aliased):
            serving, version, run = self.challenger.model_name, aliased, self.challenger.run_id
        elif serve is Serve.INCUMBENT and (dry_run or aliased):
            serving, version = self.incumbent.model_name if self.incumbent else None, aliased
            run = self.incumbent.run_id if self.incumbent else None
        else:
            # the alias stays (or the refit of what should take it failed): its candidate on this plan, if logged
            serving = label(incumbent.composition) if incumbent else None
            version = incumbent.version if incumbent else None
            run = self.incumbent.run_id if incumbent and self.incumbent else None
        return TrainingOutcome(
            algorithm=ts.algorithm,
            platform=ts.platform,
            challenger=self.challenger.model_name,
            decision=self.decision,
            serving=serving,
            version=version,
            registered=[v for v, _ in registered],
            metrics={c.model_name: c.metrics for c in self.candidates},
            n_rows=len(ts),
            serving_run=run,
            target=ts.target,
            metric=self.pair.metric,
        )


@dataclass
class TrainingSession:
    """One session of ``target``: where it logs and registers, how it runs, and what its phases planned, collected and
    decided (the pairs unchanged, the pairs trained, their picks in the order they were judged)."""

    settings: TrainingSettings
    tracker: Tracker
    book: ChampionBook
    target: Target
    progress: Progress | None = None
    force: bool = False
    dry_run: bool = False
    unchanged: list[TrainingOutcome] = field(default_factory=list, init=False)
    pairs: list[PairTraining] = field(default_factory=list, init=False)
    picks: list[Pick] = field(default_factory=list, init=False)
    # each algorithm's session run in the tracker, while the session is tracked
    runs: dict[str, Any] = field(default_factory=dict, init=False)

    def plan(self, asked: Sequence[tuple[TrainingSet, list[str]]], *, retrain: bool) -> None:
        """Plan the folds of each set with the members asked for it (and the site's rules) that apply to it, the largest
        first; a set whose champion was judged by a session of the same runs, members and settings keeps it, unless
        ``retrain`` or ``force``."""
        usable: list[tuple[TrainingSet, list[str], list[str]]] = []
        for ts, chosen in sorted(asked, key=lambda pair: (pair[0].algorithm, pair[0].platform)):
            if names := applicable_members(chosen, ts):
                usable.append((ts, chosen, names))
            else:
                log.warning(
                    "skipping %s on %s: none of the models applies to its %d runs", ts.algorithm, ts.platform, len(ts)
                )
        # Largest sets first: their fits cost most, and the last to finish should be a small one.
        usable.sort(key=lambda pair: len(pair[0]), reverse=True)
        judged: list[tuple[TrainingSet, list[str], list[str], Incumbent | None]] = []
        for ts, chosen, names in usable:
            incumbent = self.book.incumbent(ts.algorithm, ts.platform, self.target)
            if (
                not (self.force or retrain)
                and incumbent is not None
                and incumbent.judged == session_fingerprint(self.settings, ts, chosen)
            ):
                self.unchanged.append(_unchanged(ts, incumbent, selection_metric(self.settings, ts)))
            else:
                judged.append((ts, chosen, names, incumbent))
        self.pairs = [
            PairTraining(
                ts,
                _save_plan(self.settings, ts),
                incumbent,
                _with_incumbents_members(names, incumbent, ts),
                chosen,
                selection_metric(self.settings, ts),
            )
            for ts, chosen, names, incumbent in judged
        ]

    @contextmanager
    def tracked(self) -> Iterator[None]:
        """The tracker's session run of each algorithm trained, open while the session logs, judges and registers."""
        every = list(dict.fromkeys(name for pair in self.pairs for name in pair.chosen))
        with self.tracker.sessions(sorted({pair.ts.algorithm for pair in self.pairs}), every, self.target) as runs:
            self.runs = runs
            yield

    def cross_validate(self) -> None:
        """Cross-validate every pair's members: log each candidate as soon as its folds are in, and let the guard judge
        each pair as soon as its last candidate is."""
        for pair, name, result in self._cross_validations():
            ts = pair.ts
            if result is None:
                pair.members = [m for m in pair.members if m != name]
            else:
                pair.results[name] = result
                model = make_model(name, seed=self.settings.seed)
                pair.candidates[name] = self.tracker.log_candidate(
                    self.runs[ts.algorithm], ts, pair.plan, result, model
                )
            if pair.complete and not pair.results:
                log.warning("skipping %s on %s: every member failed", ts.algorithm, ts.platform)
            elif pair.complete:
                pick = self._judge(pair)
                self.picks.append(pick)
                self._report(f"{ts.algorithm}/{ts.platform} {pick.decision.verdict.value}")

    def register(self) -> None:
        """Refit on every row, in parallel, each member of every composition the decisions register, and register them
        in order; a dry run registers nothing.

        An ensemble is assembled from its members' refits; a composition whose refit failed is not registered (logged).
        """
        if self.dry_run:
            return
        fits = [Fit(index, name, None) for index, pick in enumerate(self.picks) for name in pick.refitted]
        refits: dict[int, dict[str, Refit | Failed]] = {}
        for fit, result in self._fits([pick.pair for pick in self.picks], fits):
            # a fit on every row (fold None) gives the refit, or its failure
            assert isinstance(result, Refit | Failed)
            done = refits.setdefault(fit.set_index, {})
            done[fit.model_name] = result
            if len(done) == len(self.picks[fit.set_index].refitted):
                self._register(self.picks[fit.set_index], done)

    def outcomes(self) -> list[TrainingOutcome]:
        """Every pair's outcome, by algorithm and platform; each judged one noted on its session run, and the session of a
        decision that leaves a version serving remembered (not on a dry run)."""
        outcomes = list(self.unchanged)
        for pick in self.picks:
            ts, outcome = pick.pair.ts, pick.outcome(self.dry_run)
            self.tracker.note(self.runs[ts.algorithm], _session_tags(outcome))
            if not self.dry_run and outcome.version is not None:
                fingerprint = session_fingerprint(self.settings, ts, pick.pair.chosen)
                self.book.remember(ts.algorithm, ts.platform, fingerprint, self.target)
            outcomes.append(outcome)
        return sorted(outcomes, key=lambda o: (o.algorithm, o.platform))

    def _cross_validations(self) -> Iterator[tuple[PairTraining, str, CVResult | None]]:
        """Every fold fit of each pair's members (as they are when the first is asked for), in parallel.

        Yields (pair, member, cross-validation) for each member as soon as its last fold is in, so
        tracking in this process overlaps the fits still running in the workers; the cross-validation
        is None when one of the member's fits raised (logged; the member is left out of that pair).
        """
        fits = [
            fit
            for index, pair in enumerate(self.pairs)
            for name in pair.members
            for fit in (
                [Fit(index, name, EVERY_FOLD)]
                if one_pass(name, pair.plan)
                else [Fit(index, name, fold) for fold in range(pair.plan.n_folds)]
            )
        ]
        folds: dict[tuple[int, str], list[FoldFit]] = {}
        failed: set[tuple[int, str]] = set()
        for fit, result in self._fits(self.pairs, fits):
            key, pair = (fit.set_index, fit.model_name), self.pairs[fit.set_index]
            ts, plan = pair.ts, pair.plan
            every = fit.fold == EVERY_FOLD
            done = f"folds 1-{plan.n_folds}" if every else f"fold {(fit.fold or 0) + 1}"
            for _ in range(plan.n_folds if every else 1):
                self._report(f"{ts.algorithm}/{ts.platform} {fit.model_name} {done}/{plan.n_folds}")
            if key in failed:
                continue
            if isinstance(result, Failed):
                failed.add(key)
                folds.pop(key, None)
                log.warning(
                    "%s on %s: %s failed on fold %s and is left out: %s",
                    ts.algorithm,
                    ts.platform,
                    fit.model_name,
                    "(all)" if every else (fit.fold or 0) + 1,
                    result.error,
                )
                yield pair, fit.model_name, None
                continue
            # a fit of one fold gives that fold, a fit of every fold in one pass gives them all
            assert not isinstance(result, Refit)
            found = folds.setdefault(key, [])
            found.extend(result if isinstance(result, list) else [result])
            if len(found) == plan.n_folds:
                served_by = pair.served_by(fit.model_name)
                yield pair, fit.model_name, collect(fit.model_name, ts, plan, folds.pop(key), served_by)

    def _fits(self, pairs: Sequence[PairTraining], fits: Sequence[Fit]) -> Iterator[tuple[Fit, FitResult]]:
        """``fits`` (their ``set_index`` a place in ``pairs``) made by the executor the settings choose (local processes
        or a Ray cluster), as they finish."""
        return run_fits(
            fits,
            [pair.ts for pair in pairs],
            [pair.plan for pair in pairs],
            seed=self.settings.seed,
            n_jobs=self.settings.n_jobs,
            executor=self.settings.executor,
            ray_address=self.settings.ray_address,
        )

    def _judge(self, pair: PairTraining) -> Pick:
        """Pick the best learned candidate of ``pair`` among its ``chosen`` members (and their ensemble, if it leads
        beyond chance) and the best of the site's rules that apply; let the guard judge them and the incumbent.

        With ``force`` the challenger is the best of the ``chosen`` members, rule or not, and the guard is overridden.
        """
        ts, plan, incumbent, metric = pair.ts, pair.plan, pair.incumbent, pair.metric
        results, found = dict(pair.results), dict(pair.candidates)
        order = [*pair.members, ENSEMBLE]
        names = [n for n in pair.chosen if n in results]
        weights: Counter[str] = Counter()
        leading: list[Candidate] = []
        if len(names) > 1:
            ensemble, weights = cross_validated_ensemble([results[n] for n in names], ts, plan, metric)
            results[ENSEMBLE] = ensemble
            found[ENSEMBLE] = self._log_ensemble(pair, ensemble, weights)
            # a lead chance can explain would not carry over to new runs
            if leads(ensemble, [results[n] for n in names], ts, metric, self.settings.guard_confidence):
                leading.append(found[ENSEMBLE])

        def best(candidates: list[Candidate]) -> Candidate | None:
            ranked = sorted(candidates, key=lambda c: order.index(c.model_name))
            return best_candidate(ranked, metric) if ranked else None

        rule = best([found[n] for n in pair.members if n in results and is_rule(n)])
        learned = best([found[n] for n in names if not is_rule(n)] + leading)
        challenger = best([found[n] for n in names] + leading) if self.force else learned or rule
        if challenger is None:
            raise ValueError(f"{ts.algorithm} on {ts.platform}: no candidate to judge")
        challenger_members = _members_of(challenger, weights)
        incumbent_candidate, incumbent_predictions, X = None, None, None
        if incumbent is not None and all(m in results for m in incumbent.composition):
            incumbent_candidate, incumbent_predictions = self._incumbent_result(
                pair, incumbent.composition, results, found, challenger_members
            )
            if set(incumbent.feature_names) <= set(ts.X.columns):
                X = ts.X[incumbent.feature_names].to_numpy(dtype="float64")
        # the guard compares on finished runs a fold scored: a censored run's time is only a bound
        finished = ts.finished
        done = finished & plan.scored
        decision = judge(
            y=ts.y[done],
            priors=results[challenger.model_name].priors[done],
            jobs=ts.jobs[done],
            run_ids=[r for r, keep in zip(ts.run_ids, done, strict=True) if keep],
            X=None if X is None else X[done],
            challenger=challenger_members,
            challenger_predictions=results[challenger.model_name].predictions[done],
            incumbent=incumbent,
            incumbent_predictions=None if incumbent_predictions is None else incumbent_predictions[done],
            settings=guard_settings(self.settings, metric),
            force=self.force,
            rule=None if rule is None else {rule.model_name: 1},
            rule_predictions=None if rule is None else results[rule.model_name].predictions[done],
            every_run=RunsSeen(
                ts.y[finished], ts.jobs[finished], [r for r, f in zip(ts.run_ids, finished, strict=True) if f]
            ),
            windows=plan.folds[done],
        )
        served = found[_served_name(decision, challenger, rule)]
        return Pick(
            pair=pair,
            challenger=served,
            challenger_members=_members_of(served, weights),
            incumbent=incumbent_candidate,
            incumbent_members=dict(incumbent.composition) if incumbent is not None else {},
            decision=decision,
            candidates=list(found.values()),
        )

    def _incumbent_result(
        self,
        pair: PairTraining,
        composition: Mapping[str, int],
        results: Mapping[str, CVResult],
        found: Mapping[str, Candidate],
        challenger_members: Mapping[str, int],
    ) -> tuple[Candidate, np.ndarray]:
        """The incumbent composition's candidate and out-of-fold predictions on the pair's plan (an ensemble with its
        fixed weights, logged unless it is the challenger's)."""
        if len(composition) == 1:
            name = next(iter(composition))
            return found[name], results[name].predictions
        if dict(composition) == dict(challenger_members):
            return found[ENSEMBLE], results[ENSEMBLE].predictions
        fixed = fixed_ensemble(results, Counter(composition), pair.ts, pair.plan)
        return self._log_ensemble(pair, fixed, Counter(composition), role="incumbent"), fixed.predictions

    def _log_ensemble(
        self, pair: PairTraining, result: CVResult, weights: Counter[str], role: str = "challenger"
    ) -> Candidate:
        """An ensemble's cross-validation logged as one more candidate of the pair (it fits nothing itself)."""
        names = list(weights)
        seed = self.settings.seed
        model = AveragedRegressor([(n, make_model(n, seed=seed)) for n in names], [weights[n] for n in names])
        described = ", ".join(f"{n} x{weights[n]}" for n in names)
        params = {"ensemble.members": described, "role": role}
        return self.tracker.log_candidate(
            self.runs[pair.ts.algorithm], pair.ts, pair.plan, result, model, params=params
        )

    def _register(self, pick: Pick, refits: Mapping[str, Refit | Failed]) -> None:
        """Register, in order, each composition ``pick`` registers, assembled from its members' ``refits``."""
        ts = pick.pair.ts
        for candidate, members, alias in pick.to_register():
            broken = {m: refit.error for m in members if isinstance(refit := refits[m], Failed)}
            if broken:
                log.error(
                    "%s on %s: %s not registered, its refit failed: %s",
                    ts.algorithm,
                    ts.platform,
                    label(members),
                    broken,
                )
                continue
            fitted = {m: refit for m in members if isinstance(refit := refits[m], Refit)}
            version = self.book.register(
                ts,
                candidate,
                _assembled(members, fitted, ts),
                refit_seconds=sum(refit.seconds for refit in fitted.values()),
                coverage=self.settings.interval_coverage,
                composition=members,
                decision=pick.decision,
                alias=alias,
            )
            pick.pair.registered.append((version, alias))
            self._report(f"{ts.algorithm}/{ts.platform} {label(members)} registered as version {version}")

    def _report(self, message: str) -> None:
        """Tell ``progress``, if any, one step more."""
        if self.progress is not None:
            self.progress(message)


def fold_plan_path(settings: Settings, algorithm: str, platform: str, target: Target = Target.TIME) -> Path:
    """Where training writes the fold plan of a pair's ``target``, for peer tools to cross-validate on the very same folds.

    A memory set holds only the runs that measured their peak memory, so its plan has a file of its own.
    """
    folder = settings.resolved_home / "folds"
    return (folder if target is Target.TIME else folder / target.value) / f"{algorithm}-{platform}.csv"


def forward_plan(settings: TrainingSettings, ts: TrainingSet) -> FoldPlan:
    """The set's forward plan: its runs in the order they ended, cut as the settings say."""
    return FoldPlan.forward_chain(
        ts.run_ids, ts.ended, settings.cv_folds, settings.forward_start, ts.submitted, finished=ts.finished
    )


def _save_plan(settings: TrainingSettings, ts: TrainingSet) -> FoldPlan:
    """The set's forward plan (:func:`forward_plan`), written where peer tools find it."""
    plan = forward_plan(settings, ts)
    path = fold_plan_path(settings, ts.algorithm, ts.platform, ts.target)
    path.parent.mkdir(parents=True, exist_ok=True)
    plan.save(path)
    return plan


def applicable_members(chosen: Sequence[str], ts: TrainingSet) -> list[str]:
    """The chosen members that apply to ``ts`` (its features, its number of runs, its target), then the site's rules
    for its kind of set that apply and are not among them: a rule is always a candidate. A job class's run-time rules
    are the request and the last two runs, not the class's median: a batch site has the former, and one number for
    every user of a class is not a rule any site plans with (its peak memory keeps the median: no request is known)."""
    job_class = ts.carries_requests and ts.target is Target.TIME
    rules = [name for name in available_models() if is_rule(name, job_class=job_class)]
    names = [*chosen, *(name for name in rules if name not in chosen)]
    return [name for name in names if applicable(name, ts.feature_names, len(ts), ts.target)]


def _with_incumbents_members(names: list[str], incumbent: Incumbent | None, ts: TrainingSet) -> list[str]:
    """``names`` and, after them, the serving champion's members that apply to ``ts`` and are not among them."""
    if incumbent is None:
        return names
    return names + [m for m in applicable_members(list(incumbent.composition), ts) if m not in names]


def selection_metric(settings: TrainingSettings, ts: TrainingSet) -> str:
    """The metric that judges ``ts``: the job-class metric for a set that carries its users' requests (a job class),
    else the selection metric."""
    return settings.job_class_metric if ts.carries_requests else settings.selection_metric


def guard_settings(settings: TrainingSettings, metric: str | None = None) -> GuardSettings:
    """The guard's thresholds from the service settings, judging by ``metric`` (the selection metric when None)."""
    return GuardSettings(
        metric=metric or settings.selection_metric,
        margin=settings.guard_margin,
        confidence=settings.guard_confidence,
        min_new_jobs=settings.guard_min_new_jobs,
        refresh_tolerance=settings.guard_refresh_tolerance,
        recent_min_runs=settings.guard_recent_min_runs,
        seed=settings.seed,
    )


def session_fingerprint(settings: TrainingSettings, ts: TrainingSet, members: Sequence[str]) -> str:
    """What decides a pair's training session: its data, the members, and the settings selection and the guard read."""
    config = [
        list(members),
        settings.cv_folds,
        settings.seed,
        settings.selection_metric,
        settings.job_class_metric,
        settings.forward_start,
        settings.interval_coverage,
        settings.guard_margin,
        settings.guard_confidence,
        settings.guard_min_new_jobs,
        settings.guard_refresh_tolerance,
        settings.guard_recent_min_runs,
    ]
    return hashlib.sha256(f"{ts.fingerprint}|{json.dumps(config)}".encode()).hexdigest()


def _unchanged(ts: TrainingSet, incumbent: Incumbent, metric: str) -> TrainingOutcome:
    """The outcome of a pair not trained again: the same session already judged it, and its champion stays."""
    reason = f"same runs, members and settings as the session that judged version {incumbent.version}: not trained (--force retrains)"
    decision = Decision(Verdict.UNCHANGED, None, False, incumbent.label, incumbent.label, reason, metric=metric)
    return TrainingOutcome(
        algorithm=ts.algorithm,
        platform=ts.platform,
        challenger=incumbent.label,
        decision=decision,
        serving=incumbent.label,
        version=incumbent.version,
        registered=[],
        metrics={incumbent.label: dict(incumbent.metrics)},
        n_rows=len(ts),
        target=ts.target,
        metric=metric,
    )


def _served_name(decision: Decision, challenger: Candidate, rule: Candidate | None) -> str:
    """The candidate the guard's decision names as its challenger: the learned one, or the rule that replaced it."""
    if rule is not None and decision.challenger == rule.model_name:
        return rule.model_name
    return challenger.model_name


def _members_of(candidate: Candidate, weights: Counter[str]) -> dict[str, int]:
    """A candidate's composition: the ensemble's weights, or the one member."""
    return dict(weights) if candidate.model_name == ENSEMBLE else {candidate.model_name: 1}


def _assembled(members: Mapping[str, int], refits: Mapping[str, Refit], ts: TrainingSet) -> RegressorMixin:
    """The served model of a composition: its single member's refit, or the weighted mean of its members' refits."""
    if len(members) == 1:
        return refits[next(iter(members))].model
    return AveragedRegressor.from_fitted([(n, refits[n].model) for n in members], list(members.values()), ts.X)


def _session_tags(outcome: TrainingOutcome) -> dict[str, str]:
    """What the session's parent run says of one platform: the serving member, its best candidate, the guard's verdict."""
    p = outcome.platform
    return {
        f"champion.{p}": outcome.serving or "",
        f"challenger.{p}": outcome.challenger,
        f"guard.{p}": outcome.decision.verdict.value,
        f"metric.{p}": outcome.metric,
        f"guard_reason.{p}": outcome.decision.reason[:4000],
        f"champion_version.{p}": outcome.version or "",
        f"champion_run.{p}": outcome.serving_run or "",
    }
