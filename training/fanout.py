"""Fits of many (training set, model, fold) in local processes or on a Ray cluster, each result handed back as it finishes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits

from training.dataset import TrainingSet
from training.fit_tasks import Fit, FitResult, run_one
from training.folds import FoldPlan
from training.settings import Executor


def run_fits(
    fits: Sequence[Fit],
    training_sets: Sequence[TrainingSet],
    plans: Sequence[FoldPlan],
    *,
    seed: int,
    n_jobs: int,
    executor: Executor = "local",
    ray_address: str = "auto",
) -> Iterator[tuple[Fit, FitResult]]:
    """Make ``fits`` in ``n_jobs`` local processes (joblib's loky; -1 is one per core) or, with ``executor="ray"``, as
    tasks on the Ray cluster at ``ray_address`` (:mod:`training.rayfanout`), yielding results as they finish.

    With local processes and ``n_jobs=1`` everything runs in this process, in the order given, with one BLAS and
    OpenMP thread (:func:`_here`); joblib's worker processes and Ray's tasks get one thread per process by themselves.
    """
    if executor == "ray":
        from training.rayfanout import run_on_ray

        return run_on_ray(fits, training_sets, plans, seed=seed, address=ray_address)
    if n_jobs == 1:
        return _here(fits, training_sets, plans, seed)
    tasks = (delayed(run_one)(f, training_sets[f.set_index], plans[f.set_index], seed) for f in fits)
    return Parallel(n_jobs=n_jobs, return_as="generator_unordered")(tasks)


def _here(
    fits: Sequence[Fit], training_sets: Sequence[TrainingSet], plans: Sequence[FoldPlan], seed: int
) -> Iterator[tuple[Fit, FitResult]]:
    """The fits one after the other in this process, while it uses one BLAS and OpenMP thread (until the last result
    is taken): the fits are the unit of parallelism, and a math library's second thread on small matrices only spins
    beside them. On the HPC2N live replay it cut the training's CPU by 31 % with the same answers to the digit
    (docs/results/live-accuracy.md)."""
    with threadpool_limits(limits=1):
        for fit in fits:
            yield run_one(fit, training_sets[fit.set_index], plans[fit.set_index], seed)
