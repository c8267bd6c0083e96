"""Fits of many (training set, model, fold) in local processes or on a Ray cluster, each result handed back as it finishes."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from joblib import Parallel, delayed
from sklearn.base import RegressorMixin

from training.crossval import FoldFit, fit_every_fold, fit_fold, refit
from training.dataset import TrainingSet
from training.folds import FoldPlan
from training.settings import Executor

EVERY_FOLD = -1  # a Fit's fold when one pass fits every fold (an online member on a forward plan)


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


def run_one(
    fit: Fit, training_set: TrainingSet, plan: FoldPlan, seed: int
) -> tuple[Fit, FoldFit | list[FoldFit] | Refit | Failed]:
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


def run_fits(
    fits: Sequence[Fit],
    training_sets: Sequence[TrainingSet],
    plans: Sequence[FoldPlan],
    *,
    seed: int,
    n_jobs: int,
    executor: Executor = "local",
    ray_address: str = "auto",
) -> Iterator[tuple[Fit, FoldFit | list[FoldFit] | Refit | Failed]]:
    """Make ``fits`` in ``n_jobs`` local processes (joblib's loky; -1 is one per core) or, with ``executor="ray"``, as
    tasks on the Ray cluster at ``ray_address`` (:mod:`training.rayfanout`), yielding results as they finish.

    With local processes and ``n_jobs=1`` everything runs in this process, in the order given.
    """
    if executor == "ray":
        from training.rayfanout import run_on_ray

        return run_on_ray(fits, training_sets, plans, seed=seed, address=ray_address)
    tasks = (delayed(run_one)(f, training_sets[f.set_index], plans[f.set_index], seed) for f in fits)
    return Parallel(n_jobs=n_jobs, return_as="generator_unordered")(tasks)
