"""The champion-challenger guard: a retrain reaches production only if it is not worse than what serves now, nor than
the simple rule the site already has.

Training picks, per (algorithm, platform), the best of the *rules* that apply (a site's own simple answers, registered
``rule=True`` in the zoo: a catalog pair's measured median; a job class's user request and user's last two runs)
and the best *learned* composition (a zoo member, or an ensemble's members with weights). Every candidate is scored
by forward validation (:mod:`training.folds`): on the runs that came after the ones it trained on. The *incumbent* is
the version the ``champion`` alias points at: a composition fitted on the runs that existed then. The guard compares
them on the same rows:

- **Do no harm.** A learned composition serves only if it beats the best rule: the one-sided bootstrap bound of its
  lead on the selection metric (:mod:`training.significance`, resampling jobs) must lie beyond ``margin``, it must
  score better on most of the forward windows (a lead from one window alone is one stretch's accident), and it must
  not score worse than the rule on the runs that arrived since the serving version was trained, when there are at
  least ``recent_min_runs`` of them (the jobs nearest to the ones it will answer: a lead the older windows give can
  be gone, as wagap's class means showed, and the retrain that live drift triggers is judged on them). Otherwise the
  rule is the challenger, and a learned incumbent that does not beat the rule either gives way to it.
- A challenger of another composition must beat the incumbent's composition on the very same plan (same bound).
  Otherwise it is registered as a ``challenger`` version and the alias stays.
- A challenger of the incumbent's own composition is the incumbent *refreshed* on more runs. On the runs the serving
  version never saw, its out-of-fold predictions must not be shown worse than the serving version's own by more than
  ``refresh_tolerance`` points (the same bootstrap, the other tail). With no new runs there is nothing to refresh;
  with fewer than ``min_new_jobs`` new jobs (or a served version that cannot be scored on them) there is no
  comparison, and the served version stays until more arrive (its training runs unknown, every run counts as new).
  New runs a median ``max_disagreement`` times apart from what a learned served version answers for them *flag* the
  pair: nothing is refreshed on them until someone looks (``--promote`` overrides).
- **Known inputs that jump.** Before anything takes the alias, the new runs of each input the serving version was
  trained on are compared with that input's earlier runs: an input whose new runs took a median ``max_disagreement``
  times longer or shorter than before, or new runs that each lie that far from their input's earlier median making
  up more than :data:`JUMP_SHARE` of the new runs of known inputs, *flag* the pair and name the input. A crowd of new
  runs that agree with what serves cannot hide 300 runs of one input at 3,600 s where 0.26 s was measured.
- When a challenger of another composition loses and new runs have arrived, the incumbent's composition is refreshed
  on them instead (same check): the loop keeps learning, the kind stays.

``force`` promotes the challenger it is given (training gives the best of the members asked for) whatever the
comparisons say, and says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from models.zoo import is_rule
from training.metrics import compute_metrics
from training.significance import BOOTSTRAP_METRIC, paired_bootstrap

# zoo member -> weight (one member: weight 1)
Composition = Mapping[str, int]
# more new runs of known inputs than this share, each far from its input's past: a flag
JUMP_SHARE = 0.05
# new runs of one known input that can flag it on their own
MIN_JUMP_RUNS = 2


class Verdict(str, Enum):
    # the challenger takes the alias (it won, or nothing served before)
    PROMOTED = "promoted"
    # the incumbent's composition, refitted on more runs, takes the alias
    REFRESHED = "refreshed"
    KEPT = "kept"  # the alias stays where it is
    # the challenger takes the alias because it was told to
    FORCED = "forced"
    # not trained: the same runs, members and settings were judged already
    UNCHANGED = "unchanged"


class Serve(str, Enum):
    CHALLENGER = "challenger"
    INCUMBENT = "incumbent"


@dataclass(frozen=True)
class Incumbent:
    """The serving version of a pair, as the guard needs it."""

    version: str
    composition: dict[str, int]
    # run ids it was fitted on (None: unknown)
    trained_runs: frozenset[str] | None
    feature_names: list[str]
    # the served model on rows in feature_names order
    predict: Callable[[np.ndarray], np.ndarray] | None = None
    n_rows: int | None = None  # runs it was trained on
    metrics: dict[str, float] = field(default_factory=dict)  # its cross-validated metrics
    # fingerprint of the last training session that judged this pair (see training.pipeline)
    judged: str | None = None

    @property
    def label(self) -> str:
        return label(self.composition)

    def unseen(self, run_ids: list[str]) -> np.ndarray | None:
        """Per run, whether this version was not trained on it (None: its training runs are unknown)."""
        if self.trained_runs is None:
            return None
        return np.array([r not in self.trained_runs for r in run_ids], dtype=bool)

    @property
    def rule(self) -> bool:
        """Whether it serves one of a site's simple rules (every member is one)."""
        return all(is_rule(name) for name in self.composition)


@dataclass(frozen=True)
class RunsSeen:
    """Finished runs of a pair: their times, their jobs (equal for repeats of one input) and run ids, row by row."""

    y: np.ndarray
    jobs: np.ndarray
    run_ids: list[str]


@dataclass(frozen=True)
class GuardSettings:
    """How sure the guard must be: a lead beyond ``margin`` % points at one-sided ``confidence``; a refresh is judged on at
    least ``min_new_jobs`` new jobs and refused only when worse than the served version by more than ``refresh_tolerance``;
    new runs a median ``max_disagreement`` times apart from what serves flag the pair instead; a learned composition
    is held to the rule on the runs since the serving version was trained when there are ``recent_min_runs``."""

    metric: str = "rae"
    margin: float = 0.0
    confidence: float = 0.9
    min_new_jobs: int = 10
    refresh_tolerance: float = 5.0
    max_disagreement: float = 100.0
    recent_min_runs: int = 30
    n_resamples: int = 2000
    seed: int = 0


@dataclass(frozen=True)
class Decision:
    """What the guard decided for one pair, why, and what training must therefore register."""

    verdict: Verdict
    # whose composition gets the alias (refitted on every row); None: the alias stays
    serve: Serve | None
    # the challenger is registered (with or without the alias)
    register_challenger: bool
    challenger: str
    incumbent: str | None
    reason: str
    details: dict[str, float] = field(default_factory=dict)
    # the forward-validation metric it judged by: the served version is tagged with it (no default: every decision
    # says it, which a default of "rae" once kept every job class's version from doing)
    metric: str = field(kw_only=True)


def label(composition: Composition) -> str:
    """``member`` for one member, ``ensemble(a x2, b x1)`` for several."""
    if len(composition) == 1:
        return next(iter(composition))
    return "ensemble(" + ", ".join(f"{n} x{w}" for n, w in composition.items()) + ")"


def judge(
    *,
    y: np.ndarray,
    priors: np.ndarray,
    jobs: np.ndarray,
    run_ids: list[str],
    X: np.ndarray | None,
    challenger: Composition,
    challenger_predictions: np.ndarray,
    incumbent: Incumbent | None,
    incumbent_predictions: np.ndarray | None,
    settings: GuardSettings,
    force: bool = False,
    rule: Composition | None = None,
    rule_predictions: np.ndarray | None = None,
    every_run: RunsSeen | None = None,
    windows: np.ndarray | None = None,
) -> Decision:
    """Decide between ``challenger``, the best ``rule`` and ``incumbent`` on a pair's finished rows (module docstring).

    ``challenger`` is the best learned composition (or, with no learned candidate, the rule itself), ``rule`` the best
    rule (None: no rule applies, no gate). Predictions are out-of-fold on the same plan (``incumbent_predictions`` None
    when the incumbent's composition cannot be fitted on these rows); ``X`` holds the rows in
    ``incumbent.feature_names`` order, or is None when the rows lack one of them. ``every_run`` holds every finished
    run of the pair, scored or not, for the check of known inputs (None: the scored rows given). ``windows`` holds each
    row's forward window: a learned composition beats a rule only when it also does on most of them (None: no such
    test), as a planning configuration must (:mod:`simulator.plan_choice`).
    """
    if force and incumbent is not None:
        return Decision(
            Verdict.FORCED,
            Serve.CHALLENGER,
            True,
            label(challenger),
            incumbent.label,
            "forced: the guard was overridden",
            metric=settings.metric,
        )
    gate: dict[str, float] = {}
    said = ""
    recent = _recent_rows(incumbent, run_ids, settings)
    if not force and rule is not None and rule_predictions is not None and dict(challenger) != dict(rule):
        lead = _bound(y, priors, challenger_predictions, rule_predictions, jobs, settings)
        won = _windows_won(y, priors, challenger_predictions, rule_predictions, windows, settings.metric)
        late = _recent_scores(y, priors, challenger_predictions, rule_predictions, recent, settings.metric)
        gate = {f"rule_{k}": v for k, v in _numbers(lead).items()} | late.numbers("rule")
        if lead.high < -settings.margin and won.most and late.holds:
            said = f"{label(challenger)} beats the rule {label(rule)}: {_said(lead, settings)}{won}{late}"
        else:
            said = (
                f"{label(challenger)} does not beat the rule {label(rule)}, which serves: "
                f"{_said(lead, settings)}{won}{late}"
            )
            challenger, challenger_predictions = rule, rule_predictions
    name = label(challenger)
    if incumbent is None:
        reason = "; ".join(r for r in ("no champion served before", said) if r)
        return Decision(Verdict.PROMOTED, Serve.CHALLENGER, True, name, None, reason, gate, metric=settings.metric)
    prefix = f"{said}; " if said else ""
    seen = every_run or RunsSeen(y, jobs, run_ids)
    jump = _known_inputs_jump(seen.y, seen.jobs, seen.run_ids, incumbent, settings)
    if jump is not None:
        reason, numbers = jump
        return Decision(
            Verdict.KEPT,
            None,
            True,
            name,
            incumbent.label,
            prefix + reason,
            {**gate, **numbers},
            metric=settings.metric,
        )
    same = dict(challenger) == dict(incumbent.composition)
    learned_incumbent = not same and not incumbent.rule
    if learned_incumbent and incumbent_predictions is not None and rule is not None and rule_predictions is not None:
        held = _bound(y, priors, incumbent_predictions, rule_predictions, jobs, settings)
        kept = _windows_won(y, priors, incumbent_predictions, rule_predictions, windows, settings.metric)
        late = _recent_scores(y, priors, incumbent_predictions, rule_predictions, recent, settings.metric)
        if held.high >= -settings.margin or not kept.most or not late.holds:
            reason = (
                f"{prefix}the serving {incumbent.label} does not beat the rule: {_said(held, settings)}{kept}{late}"
            )
            numbers = {**gate, **{f"incumbent_rule_{k}": v for k, v in _numbers(held).items()}}
            numbers |= late.numbers("incumbent_rule")
            return Decision(
                Verdict.PROMOTED, Serve.CHALLENGER, True, name, incumbent.label, reason, numbers, metric=settings.metric
            )
    if not same:
        if incumbent_predictions is None:
            reason = (
                f"{prefix}the incumbent {incumbent.label} could not be scored on these runs (a member does not apply "
                "or failed): nothing takes the alias without a comparison (--promote overrides)"
            )
            return Decision(Verdict.KEPT, None, True, name, incumbent.label, reason, gate, metric=settings.metric)
        lead = _bound(y, priors, challenger_predictions, incumbent_predictions, jobs, settings)
        if lead.high < -settings.margin:
            reason = f"{prefix}{name} beats {incumbent.label}: {_said(lead, settings)}"
            return Decision(
                Verdict.PROMOTED,
                Serve.CHALLENGER,
                True,
                name,
                incumbent.label,
                reason,
                {**gate, **_numbers(lead)},
                metric=settings.metric,
            )
        lost = f"{prefix}{name} does not beat {incumbent.label}: {_said(lead, settings)}"
        return _refresh(
            incumbent,
            y,
            priors,
            jobs,
            run_ids,
            X,
            incumbent_predictions,
            settings,
            name,
            lost,
            {**gate, **_numbers(lead)},
            register=True,
        )
    return _refresh(
        incumbent, y, priors, jobs, run_ids, X, challenger_predictions, settings, name, said, gate, register=False
    )


def _known_inputs_jump(
    y: np.ndarray, jobs: np.ndarray, run_ids: list[str], incumbent: Incumbent, settings: GuardSettings
) -> tuple[str, dict[str, float]] | None:
    """Why the new runs of inputs the serving version was trained on flag the pair, or None (module docstring)."""
    new = incumbent.unseen(run_ids)
    if new is None or not new.any() or new.all():
        return None
    worst: tuple[float, int, int] | None = None  # (factor, new runs, job)
    far_runs = known_runs = 0
    for job in np.unique(jobs[new]):
        mine = jobs == job
        before, after = y[mine & ~new], y[mine & new]
        if len(before) == 0:
            continue
        past = max(float(np.median(before)), 1e-3)
        each = np.maximum(np.maximum(after, 1e-3) / past, past / np.maximum(after, 1e-3))
        far_runs += int((each > settings.max_disagreement).sum())
        known_runs += len(after)
        factor = float(np.median(each))
        if len(after) >= MIN_JUMP_RUNS and factor > settings.max_disagreement and (worst is None or factor > worst[0]):
            worst = (factor, len(after), int(job))
    share = far_runs / known_runs if known_runs else 0.0
    if worst is None and not (far_runs >= MIN_JUMP_RUNS and share > JUMP_SHARE):
        return None
    numbers = {"flag_jump_share": share, "flag_jump_runs": float(far_runs)}
    if worst is not None:
        factor, count, job = worst
        example = next(r for r, j, n in zip(run_ids, jobs, new, strict=True) if n and j == job)
        said = (
            f"{count} new run(s) of an input version {incumbent.version} was trained on (e.g. run {example}) took a "
            f"median {factor:,.0f}x apart from that input's earlier runs"
        )
        numbers["flag_jump"] = factor
    else:
        said = (
            f"{far_runs} of the {known_runs} new runs of inputs version {incumbent.version} was trained on "
            f"({share:.0%}) each took over {settings.max_disagreement:g}x apart from their input's earlier runs"
        )
    reason = (
        f"flagged: {said} (over {settings.max_disagreement:g}x): nothing takes the alias on them, check the runs "
        "(set them aside, or --promote overrides)"
    )
    return reason, numbers


def _refresh(
    incumbent: Incumbent,
    y: np.ndarray,
    priors: np.ndarray,
    jobs: np.ndarray,
    run_ids: list[str],
    X: np.ndarray | None,
    refreshed: np.ndarray,
    settings: GuardSettings,
    challenger: str,
    said: str,
    details: dict[str, float],
    *,
    register: bool,
) -> Decision:
    """Refresh the incumbent's composition if runs arrived since it was trained, agree with what it serves, are of enough
    jobs to compare on, and it is not shown worse on them; otherwise the served version stays (see the module docstring).

    ``said`` opens the reason (what was decided before); ``register``: the challenger, of another composition, lost and
    is kept as a registered challenger."""
    prefix = f"{said}; " if said else ""
    unseen = incumbent.unseen(run_ids)
    new = np.ones(len(run_ids), dtype=bool) if unseen is None else unseen
    if unseen is not None and not new.any():
        reason = f"{prefix}no runs since version {incumbent.version} was trained: nothing to refresh"
        return Decision(
            Verdict.KEPT, None, register, challenger, incumbent.label, reason, details, metric=settings.metric
        )
    if incumbent.predict is None or X is None:
        reason = (
            f"{prefix}a refresh of {incumbent.label} cannot be compared with version {incumbent.version}, which "
            "cannot be scored on these runs: kept (--promote overrides)"
        )
        return Decision(
            Verdict.KEPT, None, register, challenger, incumbent.label, reason, details, metric=settings.metric
        )
    served = np.maximum(np.asarray(incumbent.predict(X[new]), dtype="float64"), 0.0)
    n_runs, n_jobs = int(new.sum()), len(np.unique(jobs[new]))
    apart = _disagreement(y[new], served)
    # a rule is far from new inputs by nature
    if apart > settings.max_disagreement and not incumbent.rule:
        reason = (
            f"{prefix}flagged: the {n_runs} new run(s) of {n_jobs} job(s) took a median {apart:,.0f}x apart from what version "
            f"{incumbent.version} serves for them (over {settings.max_disagreement:g}x): not refreshed on them, "
            "check the runs (--promote overrides)"
        )
        return Decision(
            Verdict.KEPT,
            None,
            register,
            challenger,
            incumbent.label,
            reason,
            {**details, "flag_disagreement": apart},
            metric=settings.metric,
        )
    if n_jobs < settings.min_new_jobs:
        reason = (
            f"{prefix}{n_jobs} new job(s) are too few to compare a refresh of {incumbent.label} with version "
            f"{incumbent.version} (at least {settings.min_new_jobs}): kept until more arrive"
        )
        return Decision(
            Verdict.KEPT, None, register, challenger, incumbent.label, reason, details, metric=settings.metric
        )
    change = _bound(y[new], priors[new], refreshed[new], served, jobs[new], settings)
    said = f"refreshed minus served on {n_runs} new run(s): {_said(change, settings)}"
    numbers = {**details, **{f"refresh_{k}": v for k, v in _numbers(change).items()}}
    if change.low > settings.refresh_tolerance:
        return Decision(
            Verdict.KEPT,
            None,
            register,
            challenger,
            incumbent.label,
            f"{prefix}refresh is worse, {said}",
            numbers,
            metric=settings.metric,
        )
    return Decision(
        Verdict.REFRESHED,
        Serve.INCUMBENT,
        register,
        challenger,
        incumbent.label,
        f"{prefix}{said}",
        numbers,
        metric=settings.metric,
    )


def _disagreement(y: np.ndarray, served: np.ndarray) -> float:
    """The median factor (>= 1) between the runs' times and what was served for them, both floored at a millisecond."""
    times, estimates = np.maximum(y, 1e-3), np.maximum(served, 1e-3)
    return float(np.median(np.maximum(times / estimates, estimates / times)))


@dataclass(frozen=True)
class _Bound:
    metric: str
    observed: float
    low: float
    high: float


def _bound(
    y: np.ndarray, priors: np.ndarray, a: np.ndarray, b: np.ndarray, jobs: np.ndarray, settings: GuardSettings
) -> _Bound:
    """A minus B on the guard's metric (% points; MALE in hundredths of ln), with one-sided bounds at ``confidence``
    on either side."""
    metric = BOOTSTRAP_METRIC.get(settings.metric, "rae")
    level = 2.0 * settings.confidence - 1.0
    difference = paired_bootstrap(
        y, priors, a, b, list(jobs), n_resamples=settings.n_resamples, level=level, seed=settings.seed, metrics=[metric]
    )[metric]
    return _Bound(metric, difference.observed, difference.low, difference.high)


@dataclass(frozen=True)
class _Windows:
    """On how many forward windows one composition scored better than another, of how many both were scored on."""

    won: int = 0
    of: int = 0

    @property
    def most(self) -> bool:
        """Better on more than half of the windows (true when no windows were given)."""
        return self.of == 0 or 2 * self.won > self.of

    def __str__(self) -> str:
        return f"; better on {self.won} of {self.of} window(s)" if self.of else ""


def _windows_won(
    y: np.ndarray, priors: np.ndarray, a: np.ndarray, b: np.ndarray, windows: np.ndarray | None, metric: str
) -> _Windows:
    """How many of the forward ``windows`` ``a`` scores better than ``b`` on (lower ``metric``): a lead the overall
    bootstrap finds may come from one window alone, one stretch's accident that the next jobs need not repeat."""
    if windows is None:
        return _Windows()
    won = of = 0
    for window in np.unique(windows):
        rows = windows == window
        score_a = compute_metrics(y[rows], a[rows], priors[rows]).get(metric, np.nan)
        score_b = compute_metrics(y[rows], b[rows], priors[rows]).get(metric, np.nan)
        if np.isfinite(score_a) and np.isfinite(score_b):
            of += 1
            won += int(score_a < score_b)
    return _Windows(won, of)


def _recent_rows(incumbent: Incumbent | None, run_ids: list[str], settings: GuardSettings) -> np.ndarray | None:
    """The rows of runs the serving version was not trained on, when it says which it was and there are at least
    ``recent_min_runs`` of them (None: no such test)."""
    rows = None if incumbent is None else incumbent.unseen(run_ids)
    return rows if rows is not None and int(rows.sum()) >= settings.recent_min_runs else None


@dataclass(frozen=True)
class _Recent:
    """Two compositions' ``metric`` on the runs since the serving version was trained (``runs`` 0: not tested)."""

    metric: str = ""
    runs: int = 0
    score: float = float("nan")
    rule: float = float("nan")

    @property
    def holds(self) -> bool:
        """Not worse than the rule there (true when untested or when either score is undefined)."""
        return not (self.runs and np.isfinite(self.score) and np.isfinite(self.rule) and self.score > self.rule)

    def numbers(self, prefix: str) -> dict[str, float]:
        if not self.runs:
            return {}
        return {
            f"{prefix}_recent_runs": float(self.runs),
            f"{prefix}_recent": self.score,
            f"{prefix}_recent_rule": self.rule,
        }

    def __str__(self) -> str:
        if not self.runs:
            return ""
        return (
            f"; {self.metric.upper()} {self.score:.3g} against the rule's {self.rule:.3g} on the {self.runs} runs since"
        )


def _recent_scores(
    y: np.ndarray, priors: np.ndarray, a: np.ndarray, rule: np.ndarray, rows: np.ndarray | None, metric: str
) -> _Recent:
    """``a``'s and the rule's ``metric`` on the recent ``rows`` (out-of-fold predictions, so each was forward)."""
    if rows is None:
        return _Recent()
    score = compute_metrics(y[rows], a[rows], priors[rows]).get(metric, np.nan)
    against = compute_metrics(y[rows], rule[rows], priors[rows]).get(metric, np.nan)
    return _Recent(metric, int(rows.sum()), float(score), float(against))


def _said(bound: _Bound, settings: GuardSettings) -> str:
    return (
        f"{bound.metric.upper()} {bound.observed:+.2f} points, one-sided {settings.confidence:.0%} bounds "
        f"[{bound.low:+.2f}, {bound.high:+.2f}], margin {settings.margin:g}"
    )


def _numbers(bound: _Bound) -> dict[str, float]:
    return {"difference": bound.observed, "low": bound.low, "high": bound.high}
