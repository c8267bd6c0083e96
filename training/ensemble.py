"""Greedy ensemble selection over the zoo's out-of-fold predictions, cross-validated like any member.

Caruana et al. (2004): start from nothing and repeatedly add (with replacement) the member whose
addition gives the mean prediction with the lowest selection metric, until no addition helps or
``max_size`` picks are made. No member is fitted again: the candidates are the members'
out-of-fold predictions, which is what the ensemble of those members would have predicted.

Choosing members on the very rows they are then scored on would flatter the ensemble, so its
cross-validated predictions are nested: each fold's rows are predicted by an ensemble chosen on
the other folds' rows only. The ensemble that is served is chosen on every row. Members are judged on
finished runs only: a censored run's time is a lower bound, not a time to get close to.

Even nested, the ensemble is one more candidate whose score is a draw: among many members, a blend
that edges out the best one by chance wins the selection and then loses on new runs (issue 30: six
programs of seven under nested selection). So it is a candidate only when it :func:`leads` the best
member on the same nested folds by more than chance (:func:`training.significance.paired_bootstrap`
over jobs, with the guard's confidence).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from models.ensemble import ENSEMBLE
from training.crossval import CVResult, FoldFit, collect
from training.dataset import TrainingSet
from training.folds import FoldPlan
from training.metrics import compute_metrics
from training.significance import BOOTSTRAP_METRIC, paired_bootstrap


def greedy_selection(
    predictions: Mapping[str, np.ndarray], y: np.ndarray, priors: np.ndarray, metric: str, *, max_size: int = 10
) -> Counter[str]:
    """How many times forward selection with replacement picks each member, judged by ``metric`` on these rows (each
    member once when no member gets a score there)."""
    chosen: Counter[str] = Counter()
    total = np.zeros_like(y)
    best = math.inf
    for size in range(1, max_size + 1):
        scores = {name: compute_metrics(y, (total + p) / size, priors)[metric] for name, p in predictions.items()}
        name = min(scores, key=lambda n: (math.isnan(scores[n]), scores[n]))
        if not scores[name] < best:
            break
        best = scores[name]
        chosen[name] += 1
        total += predictions[name]
    return chosen or Counter(dict.fromkeys(predictions, 1))  # no score to tell them apart: each once


def blend(predictions: Mapping[str, np.ndarray], weights: Counter[str]) -> np.ndarray:
    """The weighted mean of the chosen members' predictions."""
    return np.sum([w * predictions[name] for name, w in weights.items()], axis=0) / sum(weights.values())


def cross_validated_ensemble(
    results: Sequence[CVResult], training_set: TrainingSet, plan: FoldPlan, metric: str
) -> tuple[CVResult, Counter[str]]:
    """The ensemble's nested out-of-fold predictions and metrics, and the members (with weights) it serves.

    Each fold's rows are blended with the members chosen on the rows the fold trained on that some fold scored
    (under a forward plan, the earlier windows); a fold with none (a forward plan's first) blends every member
    equally: nothing yet says which to trust.
    """
    predictions = {r.model_name: r.predictions for r in results}
    y, priors, finished = training_set.y, results[0].priors, training_set.finished

    def selected(rows: np.ndarray) -> Counter[str]:
        return greedy_selection({n: p[rows] for n, p in predictions.items()}, y[rows], priors[rows], metric)

    fits = []
    for fold in range(plan.n_folds):
        test, known = plan.test_rows(fold), plan.train_rows(fold) & plan.scored & finished
        weights = selected(known) if known.any() else Counter(dict.fromkeys(predictions, 1))
        fits.append(FoldFit(fold, blend({n: p[test] for n, p in predictions.items()}, weights), 0.0))
    return collect(ENSEMBLE, training_set, plan, fits), selected(plan.scored & finished)


def fixed_ensemble(
    results: Mapping[str, CVResult], weights: Counter[str], training_set: TrainingSet, plan: FoldPlan
) -> CVResult:
    """Out-of-fold predictions and metrics of an ensemble whose members and weights are given (not selected here)."""
    predictions = {name: results[name].predictions for name in weights}
    fits = [
        FoldFit(f, blend({n: p[plan.test_rows(f)] for n, p in predictions.items()}, weights), 0.0)
        for f in range(plan.n_folds)
    ]
    return collect(ENSEMBLE, training_set, plan, fits)


def leads(
    ensemble: CVResult, members: Sequence[CVResult], training_set: TrainingSet, metric: str, confidence: float
) -> bool:
    """Whether ``ensemble``'s nested predictions beat the best of ``members`` by ``metric`` in at least ``confidence`` of
    paired bootstrap resamples of the jobs, on the rows the folds scored (by the bootstrap's difference that moves
    with ``metric``: :data:`~training.significance.BOOTSTRAP_METRIC`)."""
    best = min(members, key=lambda r: (math.isnan(r.metrics[metric]), r.metrics[metric]))
    ts, rows = training_set, ensemble.scored
    compared = BOOTSTRAP_METRIC.get(metric, "rae")
    difference = paired_bootstrap(
        ts.y[rows],
        best.priors[rows],
        ensemble.predictions[rows],
        best.predictions[rows],
        ts.jobs[rows],
        censored=ts.censored[rows],
        metrics=[compared],
    )
    return difference[compared].share_a_better >= confidence
