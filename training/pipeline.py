"""The training pipeline: measurements -> training sets -> zoo x k-fold CV -> tracked runs -> guarded champions.

One call trains one target (:class:`~predictor.domain.Target`): run time, or peak memory in bytes. Both
go the same way (zoo, folds, tracking, guard, intervals); each (algorithm, platform, target) has its own
champion, and members that only estimate run times (they read a requested time) are left out of memory.

All fold fits (every algorithm, platform, model and fold) fan out over ``settings.n_jobs`` local
processes, or over a Ray cluster (``settings.executor``), while this process tracks each candidate as its folds come in. Each pair's best candidate
is judged against the serving champion by the guard (:mod:`training.guard`); then only what the
decisions register is refitted on every row, in the same processes, and registered. Tracking and
the registry are MLflow's by default, or in memory (:mod:`training.memory`) for simulations.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
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
from training.champions import MlflowChampions, best_candidate, check_selection_metric, served_with_envelope
from training.crossval import CVResult, FoldFit, collect, fold_envelopes, one_pass
from training.dataset import MeasurementFrames, TrainingSet, load_training_sets
from training.ensemble import cross_validated_ensemble, fixed_ensemble, leads
from training.fanout import run_fits
from training.fit_tasks import EVERY_FOLD, Failed, Fit, FitResult, Refit
from training.folds import FoldPlan
from training.guard import Decision, GuardSettings, Incumbent, RunsSeen, Serve, Verdict, judge, label
from training.settings import TrainingSettings
from training.tracking import Candidate, MlflowTracker

log = logging.getLogger(__name__)

# Every family on raw and on log seconds (cheap ones also smeared): cross-validation picks the target transform.
# Raw-seconds SVR is registered but not a default: it lost to ``svr_log`` on all 14 bundled pairs, by
# 5 to 45 points of RAE, at the same cost (README, "Peers on the same folds").
DEFAULT_MODELS: tuple[str, ...] = (
    "mean",
    "profile_mean",
    "last_two_mean",
    "requested_time",
    "linear",
    "linear_log",
    "tobit_log",
    "linear_log_smeared",
    "lad",
    "lad_log",
    "sparse_lad_log",
    "quadratic_log",
    "simple_linear",
    "simple_linear_log",
    "isotonic",
    "isotonic_log",
    "svr_log",
    "mlp",
    "mlp_log",
    "lightgbm",
    "lightgbm_log",
    "lightgbm_log_smeared",
    "online_log",
    "online_area_log",
    "cascade",
    "cascade_log",
)

# A job class's runs (thousands, with the job-history features of features/history.py) are trained with members
# that fit them in seconds: the site's rules, the power laws, boosted trees and the online learners. The networks and
# the SVR search cost minutes per fit on such sets, and a replay retrains each class again and again.
JOB_CLASS_MODELS: tuple[str, ...] = (
    "mean",
    "requested_time",
    "last_two_mean",
    "linear_log",
    "tobit_log",
    "lightgbm_log",
    "online_log",
    "online_median_log",
    "online_area_log",
    "sc15",
)

Progress = Callable[[str], None]


class Tracker(Protocol):
    """Where training logs each session and candidate: MLflow (:class:`MlflowTracker`) or memory."""

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
    """Where champions are registered and looked up: the MLflow registry (:class:`MlflowChampions`) or memory."""

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
    metric: str = "rae"  # the forward-validation metric that judged the pair


def fold_plan_path(settings: Settings, algorithm: str, platform: str, target: Target = Target.TIME) -> Path:
    """Where training writes the fold plan of a pair's ``target``, for peer tools to cross-validate on the very same folds.

    A memory set holds only the runs that measured their peak memory, so its plan has a file of its own.
    """
    folder = settings.resolved_home / "folds"
    return (folder if target is Target.TIME else folder / target.value) / f"{algorithm}-{platform}.csv"


@dataclass
class PairTraining:
    """One (algorithm, platform) set of a session: its fold plan, the champion serving it, the members cross-validated on
    it (a member whose fit failed is dropped) and their cross-validations and logged candidates as they come in.

    A session's pairs are a list; ``set_index`` (a :class:`~training.fit_tasks.Fit`'s, a :class:`Pick`'s) is the place in it.
    """

    ts: TrainingSet
    plan: FoldPlan
    incumbent: Incumbent | None
    members: list[str]
    chosen: list[str]  # the members asked for (the others are the site's rules and the incumbent's)
    results: dict[str, CVResult] = field(default_factory=dict)
    candidates: list[Candidate] = field(default_factory=list)

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
    """A set's challenger and incumbent (candidates and compositions), and what the guard decided between them."""

    set_index: int
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


def guard_settings(settings: TrainingSettings, metric: str | None = None) -> GuardSettings:
    """The guard's thresholds from the service settings, judging by ``metric`` (the selection metric when None)."""
    return GuardSettings(
        metric=metric or settings.selection_metric,
        margin=settings.guard_margin,
        confidence=settings.guard_confidence,
        min_new_jobs=settings.guard_min_new_jobs,
        refresh_tolerance=settings.guard_refresh_tolerance,
        seed=settings.seed,
    )


def count_steps(
    settings: TrainingSettings, training_sets: Sequence[TrainingSet], *, models: Sequence[str] | None = None
) -> int:
    """How many times :func:`train` with the same arguments will call ``progress`` at least: once per fold fit, once per pair.

    Members the serving champions need for their comparison are fitted too and add steps.
    """
    explicit = models if models is not None else settings.train_models
    return sum(
        len(names) * _plan(settings, ts).n_folds + 1
        for ts in training_sets
        if (names := _members(_chosen(explicit, ts), ts))
    )


def run_training(
    settings: TrainingSettings,
    store: MeasurementFrames,
    *,
    algorithms: Iterable[str] | None = None,
    models: Sequence[str] | None = None,
    progress: Progress | None = None,
    force: bool = False,
    target: Target = Target.TIME,
) -> list[TrainingOutcome]:
    """Train ``target`` of every stored pair of ``algorithms`` (all by default) under the guard (overridden with ``force``)."""
    sets = load_training_sets(store, algorithms, target=target)
    return train(settings, sets, models=models, progress=progress, force=force, target=target)


def train(
    settings: TrainingSettings,
    training_sets: Sequence[TrainingSet],
    *,
    models: Sequence[str] | None = None,
    progress: Progress | None = None,
    tracker: Tracker | None = None,
    champions: ChampionBook | None = None,
    force: bool = False,
    retrain: bool = False,
    dry_run: bool = False,
    target: Target = Target.TIME,
) -> list[TrainingOutcome]:
    """Cross-validate ``models`` on each set, log them, let the guard judge the best against the serving champion, register.

    Every set must be of ``target`` (a ValueError otherwise): its sessions, champions and registered
    names are that target's; members that cannot estimate it are left out.

    The fold fits of every set share one pool of processes; each candidate is logged as soon as
    its folds are in, and each set is judged as soon as its last candidate is. The serving
    champion's members are fitted on the same folds when ``models`` leave them out, so the guard
    compares like with like (:mod:`training.guard`). Then what the decisions register is refitted
    on every row, together, and registered; ``dry_run`` stops before that. ``retrain`` trains a set
    again even when the session that judged its champion saw the same runs; ``force`` does too, and promotes each
    set's best candidate whatever the guard says. Members that do not apply to a set are left out
    of it; ``progress`` is called once per fold fit, as fits finish, and once per judged set.
    """
    explicit = models if models is not None else settings.train_models
    if explicit is not None:
        _models(explicit)  # unknown names are refused before any work
    check_selection_metric(settings.selection_metric)
    check_selection_metric(settings.job_class_metric)
    if others := sorted(
        {f"{ts.algorithm}/{ts.platform} ({ts.target.value})" for ts in training_sets if ts.target is not target}
    ):
        raise ValueError(f"training {target.value} on sets of another target: {', '.join(others)}")
    tracker = tracker or MlflowTracker(settings)
    book = champions or MlflowChampions(settings.resolved_tracking_uri)
    usable: list[tuple[TrainingSet, list[str], list[str]]] = []
    for ts in sorted(training_sets, key=lambda ts: (ts.algorithm, ts.platform)):
        chosen = _chosen(explicit, ts)
        if names := _members(chosen, ts):
            usable.append((ts, chosen, names))
        else:
            log.warning(
                "skipping %s on %s: none of the models applies to its %d runs", ts.algorithm, ts.platform, len(ts)
            )
    # Largest sets first: their fits cost most, and the last to finish should be a small one.
    usable.sort(key=lambda pair: len(pair[0]), reverse=True)
    unchanged: list[TrainingOutcome] = []
    judged: list[tuple[TrainingSet, list[str], list[str], Incumbent | None]] = []
    for ts, chosen, names in usable:
        incumbent = book.incumbent(ts.algorithm, ts.platform, target)
        if (
            not (force or retrain)
            and incumbent is not None
            and incumbent.judged == session_fingerprint(settings, ts, chosen)
        ):
            unchanged.append(_unchanged(ts, incumbent, selection_metric(settings, ts)))
        else:
            judged.append((ts, chosen, names, incumbent))
    pairs = [
        PairTraining(ts, _save_plan(settings, ts), incumbent, _with_incumbents_members(names, incumbent, ts), chosen)
        for ts, chosen, names, incumbent in judged
    ]
    picks: list[Pick] = []
    every = list(dict.fromkeys(name for pair in pairs for name in pair.chosen))
    with tracker.sessions(sorted({pair.ts.algorithm for pair in pairs}), every, target) as sessions:
        for index, name, result in _cross_validate_all(settings, pairs, progress):
            pair = pairs[index]
            ts, session = pair.ts, sessions[pair.ts.algorithm]
            if result is None:
                pair.members = [m for m in pair.members if m != name]
            else:
                pair.results[name] = result
                pair.candidates.append(
                    tracker.log_candidate(session, ts, pair.plan, result, make_model(name, seed=settings.seed))
                )
            if not pair.results and pair.complete:
                log.warning("skipping %s on %s: every member failed", ts.algorithm, ts.platform)
                pair.members = []  # judged by nobody; never matches again
            elif pair.members and pair.complete:
                pick = _judge(settings, tracker, session, index, pair, force)
                picks.append(pick)
                if progress is not None:
                    progress(f"{ts.algorithm}/{ts.platform} {pick.decision.verdict.value}")
        registered = {} if dry_run else _register_all(settings, book, pairs, picks, progress)
        outcomes = list(unchanged)
        for pick in picks:
            pair = pairs[pick.set_index]
            ts = pair.ts
            outcome = _outcome(pick, ts, pair.incumbent, registered.get(pick.set_index, []), dry_run)
            outcome = replace(outcome, metric=selection_metric(settings, ts))
            tracker.note(sessions[ts.algorithm], _session_tags(outcome))
            if not dry_run and outcome.version is not None:
                book.remember(ts.algorithm, ts.platform, session_fingerprint(settings, ts, pair.chosen), target)
            outcomes.append(outcome)
    return sorted(outcomes, key=lambda o: (o.algorithm, o.platform))


def _with_incumbents_members(names: list[str], incumbent: Incumbent | None, ts: TrainingSet) -> list[str]:
    """``names`` and, after them, the serving champion's members that apply to ``ts`` and are not among them."""
    if incumbent is None:
        return names
    return names + [m for m in _members(list(incumbent.composition), ts) if m not in names]


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
    ]
    return hashlib.sha256(f"{ts.fingerprint}|{json.dumps(config)}".encode()).hexdigest()


def _unchanged(ts: TrainingSet, incumbent: Incumbent, metric: str) -> TrainingOutcome:
    """The outcome of a pair not trained again: the same session already judged it, and its champion stays."""
    reason = f"same runs, members and settings as the session that judged version {incumbent.version}: not trained (--force retrains)"
    decision = Decision(Verdict.UNCHANGED, None, False, incumbent.label, incumbent.label, reason)
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


def _judge(
    settings: TrainingSettings,
    tracker: Tracker,
    session: Any,
    index: int,
    pair: PairTraining,
    force: bool,
) -> Pick:
    """Pick the best learned candidate of ``pair`` (set ``index``) among the ``chosen`` members (and their ensemble, if it
    leads beyond chance) and the best of the site's rules that apply; let the guard judge them and the incumbent.

    With ``force`` the challenger is the best of the ``chosen`` members, rule or not, and the guard is overridden.
    """
    ts, plan, results, incumbent, chosen = pair.ts, pair.plan, pair.results, pair.incumbent, pair.chosen
    metric = selection_metric(settings, ts)
    found = {c.model_name: c for c in pair.candidates}
    order = [*pair.members, ENSEMBLE]
    names = [n for n in chosen if n in results]
    weights: Counter[str] = Counter()
    leading: list[Candidate] = []
    if len(names) > 1:
        ensemble, weights = cross_validated_ensemble([results[n] for n in names], ts, plan, metric)
        results = {**results, ENSEMBLE: ensemble}
        found[ENSEMBLE] = _log_ensemble(settings, tracker, session, ts, plan, ensemble, weights)
        if leads(ensemble, [results[n] for n in names], ts, metric, settings.guard_confidence):
            leading.append(found[ENSEMBLE])  # a lead chance can explain would not carry over to new runs

    def best(candidates: list[Candidate]) -> Candidate | None:
        ranked = sorted(candidates, key=lambda c: order.index(c.model_name))
        return best_candidate(ranked, metric) if ranked else None

    rule = best([found[n] for n in pair.members if n in results and is_rule(n)])
    learned = best([found[n] for n in names if not is_rule(n)] + leading)
    if force:
        challenger = best([found[n] for n in names] + leading)
    else:
        challenger = learned or rule
    if challenger is None:
        raise ValueError(f"{ts.algorithm} on {ts.platform}: no candidate to judge")
    challenger_members = dict(weights) if challenger.model_name == ENSEMBLE else {challenger.model_name: 1}
    incumbent_candidate, incumbent_predictions, X = None, None, None
    if incumbent is not None and all(m in results for m in incumbent.composition):
        incumbent_candidate, incumbent_predictions = _incumbent_result(
            settings, tracker, session, ts, plan, results, found, incumbent.composition, challenger_members
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
        settings=guard_settings(settings, metric),
        force=force,
        rule=None if rule is None else {rule.model_name: 1},
        rule_predictions=None if rule is None else results[rule.model_name].predictions[done],
        every_run=RunsSeen(
            ts.y[finished], ts.jobs[finished], [r for r, f in zip(ts.run_ids, finished, strict=True) if f]
        ),
        windows=plan.folds[done],
    )
    served = found[_served_name(decision, challenger, rule)]
    members = dict(incumbent.composition) if incumbent is not None else {}
    return Pick(
        index, served, _members_of(served, weights), incumbent_candidate, members, decision, list(found.values())
    )


def _served_name(decision: Decision, challenger: Candidate, rule: Candidate | None) -> str:
    """The candidate the guard's decision names as its challenger: the learned one, or the rule that replaced it."""
    if rule is not None and decision.challenger == rule.model_name:
        return rule.model_name
    return challenger.model_name


def _members_of(candidate: Candidate, weights: Counter[str]) -> dict[str, int]:
    """A candidate's composition: the ensemble's weights, or the one member."""
    return dict(weights) if candidate.model_name == ENSEMBLE else {candidate.model_name: 1}


def selection_metric(settings: TrainingSettings, ts: TrainingSet) -> str:
    """The metric that judges ``ts``: the job-class metric for a set that carries its users' requests (a job class),
    else the selection metric."""
    return settings.job_class_metric if ts.carries_requests else settings.selection_metric


def _incumbent_result(
    settings: TrainingSettings,
    tracker: Tracker,
    session: Any,
    ts: TrainingSet,
    plan: FoldPlan,
    results: Mapping[str, CVResult],
    found: Mapping[str, Candidate],
    composition: Mapping[str, int],
    challenger_members: Mapping[str, int],
) -> tuple[Candidate, np.ndarray]:
    """The incumbent composition's candidate and out-of-fold predictions on this plan (an ensemble with its fixed weights)."""
    if len(composition) == 1:
        name = next(iter(composition))
        return found[name], results[name].predictions
    if dict(composition) == dict(challenger_members):
        return found[ENSEMBLE], results[ENSEMBLE].predictions
    fixed = fixed_ensemble(results, Counter(composition), ts, plan)
    candidate = _log_ensemble(settings, tracker, session, ts, plan, fixed, Counter(composition), role="incumbent")
    return candidate, fixed.predictions


def _log_ensemble(
    settings: TrainingSettings,
    tracker: Tracker,
    session: Any,
    ts: TrainingSet,
    plan: FoldPlan,
    result: CVResult,
    weights: Counter[str],
    role: str = "challenger",
) -> Candidate:
    """An ensemble's cross-validation logged as one more candidate (it fits nothing itself)."""
    names = list(weights)
    model = AveragedRegressor([(n, make_model(n, seed=settings.seed)) for n in names], [weights[n] for n in names])
    described = ", ".join(f"{n} x{weights[n]}" for n in names)
    return tracker.log_candidate(session, ts, plan, result, model, params={"ensemble.members": described, "role": role})


def _cross_validate_all(
    settings: TrainingSettings, pairs: Sequence[PairTraining], progress: Progress | None
) -> Iterator[tuple[int, str, CVResult | None]]:
    """Every fold fit of each pair's members (the ones that apply to it, as they are when the first is asked for), in parallel.

    Yields (pair's index, member, cross-validation) for each member as soon as its last fold is in, so
    tracking in this process overlaps the fits still running in the workers; the cross-validation
    is None when one of the member's fits raised (logged; the member is left out of that set).
    """
    fits = [
        fit
        for index, pair in enumerate(pairs)
        for name in pair.members
        for fit in (
            [Fit(index, name, EVERY_FOLD)]
            if one_pass(name, pair.plan)
            else [Fit(index, name, fold) for fold in range(pair.plan.n_folds)]
        )
    ]
    folds: dict[tuple[int, str], list[FoldFit]] = {}
    failed: set[tuple[int, str]] = set()
    for fit, result in _fits(settings, fits, pairs):
        key = (fit.set_index, fit.model_name)
        ts, plan = pairs[fit.set_index].ts, pairs[fit.set_index].plan
        if progress is not None:
            done = f"folds 1-{plan.n_folds}" if fit.fold == EVERY_FOLD else f"fold {(fit.fold or 0) + 1}"
            for _ in range(plan.n_folds if fit.fold == EVERY_FOLD else 1):
                progress(f"{ts.algorithm}/{ts.platform} {fit.model_name} {done}/{plan.n_folds}")
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
                "(all)" if fit.fold == EVERY_FOLD else (fit.fold or 0) + 1,
                result.error,
            )
            yield fit.set_index, fit.model_name, None
            continue
        found = folds.setdefault(key, [])
        found.extend(result if isinstance(result, list) else [result])  # type: ignore[list-item]
        if len(found) == plan.n_folds:
            served_by = pairs[fit.set_index].served_by(fit.model_name)
            yield fit.set_index, fit.model_name, collect(fit.model_name, ts, plan, folds.pop(key), served_by)


def _fits(
    settings: TrainingSettings, fits: Sequence[Fit], pairs: Sequence[PairTraining]
) -> Iterator[tuple[Fit, FitResult]]:
    """``fits`` of ``pairs`` made by the executor the settings choose (local processes or a Ray cluster), as they finish."""
    sets, plans = [pair.ts for pair in pairs], [pair.plan for pair in pairs]
    return run_fits(
        fits,
        sets,
        plans,
        seed=settings.seed,
        n_jobs=settings.n_jobs,
        executor=settings.executor,
        ray_address=settings.ray_address,
    )


def _register_all(
    settings: TrainingSettings,
    book: ChampionBook,
    pairs: Sequence[PairTraining],
    picks: Sequence[Pick],
    progress: Progress | None,
) -> dict[int, list[tuple[str, bool]]]:
    """Refit on every row, in parallel, each member of every composition the decisions register; register them in order.

    Returns the versions registered per set, each with whether it took the alias. An ensemble is
    assembled from its members' refits; a composition whose refit failed is not registered (logged).
    """
    wanted = {pick.set_index: pick.to_register() for pick in picks}
    needed = {index: sorted({m for _, members, _ in todo for m in members}) for index, todo in wanted.items()}
    fits = [Fit(index, name, None) for index, names in needed.items() for name in names]
    refits: dict[int, dict[str, Refit]] = {}
    registered: dict[int, list[tuple[str, bool]]] = {}
    for fit, result in _fits(settings, fits, pairs):
        done = refits.setdefault(fit.set_index, {})
        done[fit.model_name] = result  # type: ignore[assignment]
        if len(done) < len(needed[fit.set_index]):
            continue
        ts, pick = pairs[fit.set_index].ts, next(p for p in picks if p.set_index == fit.set_index)
        for candidate, members, alias in wanted[fit.set_index]:
            broken = {m: done[m].error for m in members if isinstance(done[m], Failed)}
            if broken:
                log.error(
                    "%s on %s: %s not registered, its refit failed: %s",
                    ts.algorithm,
                    ts.platform,
                    label(members),
                    broken,
                )
                continue
            model = _assembled(members, done, ts)
            seconds = sum(done[m].seconds for m in members)
            version = book.register(
                ts,
                candidate,
                model,
                refit_seconds=seconds,
                coverage=settings.interval_coverage,
                composition=members,
                decision=pick.decision,
                alias=alias,
            )
            registered.setdefault(fit.set_index, []).append((version, alias))
            if progress is not None:
                progress(f"{ts.algorithm}/{ts.platform} {label(members)} registered as version {version}")
    return registered


def _assembled(members: Mapping[str, int], refits: Mapping[str, Refit], ts: TrainingSet) -> RegressorMixin:
    """The served model of a composition: its single member's refit, or the weighted mean of its members' refits."""
    if len(members) == 1:
        return refits[next(iter(members))].model
    return AveragedRegressor.from_fitted([(n, refits[n].model) for n in members], list(members.values()), ts.X)


def _outcome(
    pick: Pick, ts: TrainingSet, incumbent: Incumbent | None, registered: list[tuple[str, bool]], dry_run: bool
) -> TrainingOutcome:
    """The outcome of one set: what serves after the decision (on a dry run: what would, without its version number)."""
    serve = pick.decision.serve
    aliased = next((version for version, alias in registered if alias), None)
    if serve is Serve.CHALLENGER and (dry_run or aliased):
        serving, version, run = pick.challenger.model_name, aliased, pick.challenger.run_id
    elif serve is Serve.INCUMBENT and (dry_run or aliased):
        serving, version = pick.incumbent.model_name if pick.incumbent else None, aliased
        run = pick.incumbent.run_id if pick.incumbent else None
    else:  # the alias stays (or the refit of what should take it failed): its candidate on this plan, if logged
        serving = label(incumbent.composition) if incumbent else None
        version = incumbent.version if incumbent else None
        run = pick.incumbent.run_id if incumbent and pick.incumbent else None
    return TrainingOutcome(
        algorithm=ts.algorithm,
        platform=ts.platform,
        challenger=pick.challenger.model_name,
        decision=pick.decision,
        serving=serving,
        version=version,
        registered=[v for v, _ in registered],
        metrics={c.model_name: c.metrics for c in pick.candidates},
        n_rows=len(ts),
        serving_run=run,
        target=ts.target,
    )


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


def decision_row(outcome: TrainingOutcome, trigger: str) -> dict[str, Any]:
    """The ``model_decisions`` row of an outcome (what ``predictor models history`` lists)."""
    d = outcome.decision
    return {
        "decided_at": datetime.now(UTC),
        "algorithm": outcome.algorithm,
        "platform": outcome.platform,
        "target": outcome.target.value,
        "decision": d.verdict.value,
        "trigger": trigger[:200],
        "challenger": d.challenger[:200],
        "incumbent": d.incumbent[:200] if d.incumbent else None,
        "version": ",".join(outcome.registered)[:64] or None,
        "serving_version": outcome.version,
        "n_rows": outcome.n_rows,
        "reason": d.reason,
        "details": dict(d.details),
    }


def _save_plan(settings: TrainingSettings, ts: TrainingSet) -> FoldPlan:
    """The set's forward plan (its runs in the order they ended, :meth:`FoldPlan.forward_chain`), written where peer
    tools find it."""
    plan = _plan(settings, ts)
    path = fold_plan_path(settings, ts.algorithm, ts.platform, ts.target)
    path.parent.mkdir(parents=True, exist_ok=True)
    plan.save(path)
    return plan


def _plan(settings: TrainingSettings, ts: TrainingSet) -> FoldPlan:
    """The set's forward plan: its runs in the order they ended, cut as the settings say."""
    return FoldPlan.forward_chain(
        ts.run_ids, ts.ended, settings.cv_folds, settings.forward_start, ts.submitted, finished=ts.finished
    )


def _members(chosen: Sequence[str], ts: TrainingSet) -> list[str]:
    """The chosen members that apply to ``ts`` (its features, its number of runs, its target), then the site's rules
    for its kind of set that apply and are not among them: a rule is always a candidate. A job class's run-time rules
    are the request and the last two runs, not the class's median: a batch site has the former, and one number for
    every user of a class is not a rule any site plans with (its peak memory keeps the median: no request is known)."""
    job_class = ts.carries_requests and ts.target is Target.TIME
    rules = [name for name in available_models() if is_rule(name, job_class=job_class)]
    names = [*chosen, *(name for name in rules if name not in chosen)]
    return [name for name in names if applicable(name, ts.feature_names, len(ts), ts.target)]


def default_members(ts: TrainingSet) -> tuple[str, ...]:
    """The members a set is trained with when none are named: :data:`JOB_CLASS_MODELS` for a job class (a set that
    carries its users' requests), else :data:`DEFAULT_MODELS`."""
    return JOB_CLASS_MODELS if ts.carries_requests else DEFAULT_MODELS


def _chosen(explicit: Sequence[str] | None, ts: TrainingSet) -> list[str]:
    """The members asked for ``ts``: those named, else its defaults."""
    return _models(explicit if explicit is not None else default_members(ts))


def _models(models: Sequence[str]) -> list[str]:
    """The requested zoo members (registered ones only), unknown names refused before any work."""
    known = available_models()
    chosen = list(models)
    unknown = [m for m in chosen if m not in known]
    if unknown or not chosen:
        raise ValueError(f"unknown or no models: {', '.join(unknown) or '(none)'}; known: {', '.join(known)}")
    return chosen
