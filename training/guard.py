"""The champion-challenger guard: a retrain reaches production only if it is not worse than what serves now.

Training picks a *challenger* per (algorithm, platform): the best of the members it was asked to
train. The *incumbent* is the version the ``champion`` alias points at: a *composition* (one zoo
member, or an ensemble's members with weights) fitted on the runs that existed then. The guard
compares them on the same rows:

- A challenger of another composition must beat the incumbent's composition cross-validated on
  the very same fold plan (both out of fold, same rows): the one-sided bootstrap bound of its lead
  on the selection metric (:mod:`training.significance`, resampling jobs) must lie beyond
  ``margin``. Otherwise it is registered as a ``challenger`` version and the alias stays.
- A challenger of the incumbent's own composition is the incumbent *refreshed* on more runs. On
  the runs the serving version never saw, its out-of-fold predictions must not be shown worse
  than the serving version's own by more than ``refresh_tolerance`` points (the same bootstrap,
  the other tail). The tolerance is there because the comparison leans against the refresh: its
  out-of-fold predictions come from fits on (k-1)/k of the runs. With no new runs there is
  nothing to refresh; with fewer than ``min_new_jobs`` new jobs (or a served version that cannot
  be scored on them) there is no comparison, and the served version stays until more arrive (its
  training runs unknown, every run counts as new). New runs a median ``max_disagreement`` times
  apart from what the served version answers for them *flag* the pair (the decision's reason and
  its ``flag_disagreement`` detail): nothing is refreshed on them, whatever their number, until
  someone looks (``--promote`` overrides). One input run 300 times at 3,600 s where 0.26 s was
  served no longer becomes the pair's estimate unchecked.
- When a challenger of another composition loses and new runs have arrived, the incumbent's
  composition is refreshed on them instead (same check): the loop keeps learning, the kind stays.

``force`` promotes the challenger whatever the comparison says, and says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from training.significance import paired_bootstrap

Composition = Mapping[str, int]  # zoo member -> weight (one member: weight 1)
BOOTSTRAP_METRIC = {"rae": "rae", "mae": "rae", "rrse": "rrse", "rmse": "rrse"}  # same sign as the metric's difference


class Verdict(str, Enum):
    PROMOTED = "promoted"  # the challenger takes the alias (it won, or nothing served before)
    REFRESHED = "refreshed"  # the incumbent's composition, refitted on more runs, takes the alias
    KEPT = "kept"  # the alias stays where it is
    FORCED = "forced"  # the challenger takes the alias because it was told to
    UNCHANGED = "unchanged"  # not trained: the same runs, members and settings were judged already


class Serve(str, Enum):
    CHALLENGER = "challenger"
    INCUMBENT = "incumbent"


@dataclass(frozen=True)
class Incumbent:
    """The serving version of a pair, as the guard needs it."""

    version: str
    composition: dict[str, int]
    trained_runs: frozenset[str] | None  # run ids it was fitted on (None: unknown)
    feature_names: list[str]
    predict: Callable[[np.ndarray], np.ndarray] | None = None  # the served model on rows in feature_names order
    n_rows: int | None = None  # runs it was trained on
    metrics: dict[str, float] = field(default_factory=dict)  # its cross-validated metrics
    judged: str | None = None  # fingerprint of the last training session that judged this pair (see training.pipeline)

    @property
    def label(self) -> str:
        return label(self.composition)


@dataclass(frozen=True)
class GuardSettings:
    """How sure the guard must be: a lead beyond ``margin`` % points at one-sided ``confidence``; a refresh is judged on at
    least ``min_new_jobs`` new jobs and refused only when worse than the served version by more than ``refresh_tolerance``;
    new runs a median ``max_disagreement`` times apart from what serves flag the pair instead."""

    metric: str = "rae"
    margin: float = 0.0
    confidence: float = 0.9
    min_new_jobs: int = 10
    refresh_tolerance: float = 5.0
    max_disagreement: float = 100.0
    n_resamples: int = 2000
    seed: int = 0


@dataclass(frozen=True)
class Decision:
    """What the guard decided for one pair, why, and what training must therefore register."""

    verdict: Verdict
    serve: Serve | None  # whose composition gets the alias (refitted on every row); None: the alias stays
    register_challenger: bool  # the challenger is registered (with or without the alias)
    challenger: str
    incumbent: str | None
    reason: str
    details: dict[str, float] = field(default_factory=dict)


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
    X: np.ndarray,
    challenger: Composition,
    challenger_predictions: np.ndarray,
    incumbent: Incumbent | None,
    incumbent_predictions: np.ndarray | None,
    settings: GuardSettings,
    force: bool = False,
) -> Decision:
    """Decide between ``challenger`` and ``incumbent`` on a pair's finished rows (see the module docstring).

    ``challenger_predictions`` and ``incumbent_predictions`` are out-of-fold on the same plan (the
    latter None when the incumbent's composition cannot be fitted on these rows); ``X`` holds the
    rows in ``incumbent.feature_names`` order, or is None when the rows lack one of them.
    """
    name = label(challenger)
    if incumbent is None:
        return Decision(Verdict.PROMOTED, Serve.CHALLENGER, True, name, None, "no champion served before")
    if force:
        return Decision(
            Verdict.FORCED, Serve.CHALLENGER, True, name, incumbent.label, "forced: the guard was overridden"
        )
    same = dict(challenger) == dict(incumbent.composition)
    if not same:
        if incumbent_predictions is None:
            reason = (
                f"the incumbent {incumbent.label} could not be scored on these runs (a member does not apply or "
                "failed): nothing takes the alias without a comparison (--promote overrides)"
            )
            return Decision(Verdict.KEPT, None, True, name, incumbent.label, reason)
        lead = _bound(y, priors, challenger_predictions, incumbent_predictions, jobs, settings)
        if lead.high < -settings.margin:
            reason = f"{name} beats {incumbent.label}: {_said(lead, settings)}"
            return Decision(Verdict.PROMOTED, Serve.CHALLENGER, True, name, incumbent.label, reason, _numbers(lead))
        lost = f"{name} does not beat {incumbent.label}: {_said(lead, settings)}"
        return _refresh(
            incumbent, y, priors, jobs, run_ids, X, incumbent_predictions, settings, name, lost, _numbers(lead)
        )
    return _refresh(incumbent, y, priors, jobs, run_ids, X, challenger_predictions, settings, name, "", {})


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
    lost: str,
    details: dict[str, float],
) -> Decision:
    """Refresh the incumbent's composition if runs arrived since it was trained, agree with what it serves, are of enough
    jobs to compare on, and it is not shown worse on them; otherwise the served version stays (see the module docstring)."""
    register = bool(lost)  # a losing challenger of another composition is kept as a registered challenger
    prefix = f"{lost}; " if lost else ""
    trained = incumbent.trained_runs
    new = np.array([r not in trained for r in run_ids]) if trained is not None else np.ones(len(run_ids), dtype=bool)
    if trained is not None and not new.any():
        reason = f"{prefix}no runs since version {incumbent.version} was trained: nothing to refresh"
        return Decision(Verdict.KEPT, None, register, challenger, incumbent.label, reason, details)
    if incumbent.predict is None or X is None:
        reason = (
            f"{prefix}a refresh of {incumbent.label} cannot be compared with version {incumbent.version}, which "
            "cannot be scored on these runs: kept (--promote overrides)"
        )
        return Decision(Verdict.KEPT, None, register, challenger, incumbent.label, reason, details)
    served = np.maximum(np.asarray(incumbent.predict(X[new]), dtype="float64"), 0.0)
    n_runs, n_jobs = int(new.sum()), len(np.unique(jobs[new]))
    apart = _disagreement(y[new], served)
    if apart > settings.max_disagreement:
        reason = (
            f"{prefix}flagged: the {n_runs} new run(s) of {n_jobs} job(s) took a median {apart:,.0f}x apart from what version "
            f"{incumbent.version} serves for them (over {settings.max_disagreement:g}x): not refreshed on them, "
            "check the runs (--promote overrides)"
        )
        return Decision(
            Verdict.KEPT, None, register, challenger, incumbent.label, reason, {**details, "flag_disagreement": apart}
        )
    if n_jobs < settings.min_new_jobs:
        reason = (
            f"{prefix}{n_jobs} new job(s) are too few to compare a refresh of {incumbent.label} with version "
            f"{incumbent.version} (at least {settings.min_new_jobs}): kept until more arrive"
        )
        return Decision(Verdict.KEPT, None, register, challenger, incumbent.label, reason, details)
    change = _bound(y[new], priors[new], refreshed[new], served, jobs[new], settings)
    said = f"refreshed minus served on {n_runs} new run(s): {_said(change, settings)}"
    numbers = {**details, **{f"refresh_{k}": v for k, v in _numbers(change).items()}}
    if change.low > settings.refresh_tolerance:
        return Decision(
            Verdict.KEPT, None, register, challenger, incumbent.label, f"{prefix}refresh is worse, {said}", numbers
        )
    return Decision(
        Verdict.REFRESHED, Serve.INCUMBENT, register, challenger, incumbent.label, f"{prefix}{said}", numbers
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
    """A minus B on the guard's metric (% points), with one-sided bounds at ``confidence`` on either side."""
    metric = BOOTSTRAP_METRIC.get(settings.metric, "rae")
    level = 2.0 * settings.confidence - 1.0
    difference = paired_bootstrap(
        y, priors, a, b, list(jobs), n_resamples=settings.n_resamples, level=level, seed=settings.seed
    )[metric]
    return _Bound(metric, difference.observed, difference.low, difference.high)


def _said(bound: _Bound, settings: GuardSettings) -> str:
    return (
        f"{bound.metric.upper()} {bound.observed:+.2f} points, one-sided {settings.confidence:.0%} bounds "
        f"[{bound.low:+.2f}, {bound.high:+.2f}], margin {settings.margin:g}"
    )


def _numbers(bound: _Bound) -> dict[str, float]:
    return {"difference": bound.observed, "low": bound.low, "high": bound.high}
