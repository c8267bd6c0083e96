"""The unit of work every fit executor runs (local processes, a Ray cluster): what to fit, how it ended, the fit itself.

A module of its own so that the executors (:mod:`training.fanout`, :mod:`training.rayfanout`) share it without
importing each other.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sklearn.base import RegressorMixin

from training.crossval import FoldFit, fit_every_fold, fit_fold, refit
from training.dataset import TrainingSet
from training.folds import FoldPlan

# a Fit's fold when one pass fits every fold (an online member on a forward plan)
EVERY_FOLD = -1


@dataclass(frozen=True)
class Fit:
    """One fit to make: ``model_name`` on training set ``set_index`` for ``fold``, for every fold in one pass
    (:data:`EVERY_FOLD`), or on every row (fold None)."""

    set_index: int
    model_name: str
    fold: int | None


@dataclass(frozen=True)
class Refit:
    """A model fitted on every row of its training set, and the fit's seconds."""

    model: RegressorMixin
    seconds: float


@dataclass(frozen=True)
class Failed:
    """A fit that raised: one member failing on one set must not stop the others (the pipeline leaves it out)."""

    error: str


# what one fit gives: a fold, every fold, a refit, or its failure
FitResult = FoldFit | list[FoldFit] | Refit | Failed


def run_one(fit: Fit, training_set: TrainingSet, plan: FoldPlan, seed: int) -> tuple[Fit, FitResult]:
    """Make one fit (in whichever process the executor chose); an exception comes back as :class:`Failed`."""
    try:
        if fit.fold == EVERY_FOLD:
            return fit, fit_every_fold(fit.model_name, training_set, plan, seed=seed)
        if fit.fold is not None:
            return fit, fit_fold(fit.model_name, training_set, plan, fit.fold, seed=seed)
        started = time.perf_counter()
        model = refit(fit.model_name, training_set, seed=seed)
        return fit, Refit(model, time.perf_counter() - started)
    except Exception as exc:  # noqa: BLE001 - any member's failure is reported, never fatal to the others
        return fit, Failed(f"{type(exc).__name__}: {exc}"[:500])
