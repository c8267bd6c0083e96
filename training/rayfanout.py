"""Fold fits on a Ray cluster: the same unit of work (one fit) and the same results as the local processes.

Each training set and fold plan is put in Ray's object store once, each :class:`~training.fit_tasks.Fit` is one
Ray task running the very function the local processes run, and results come back in the order they finish.
Tracking and the registry stay in the calling process (the driver), as with local processes. Ray is an
optional extra (``pip install -e '.[ray]'``); every node needs this project installed at the same version.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

from training.dataset import TrainingSet
from training.fit_tasks import Fit, FitResult, run_one
from training.folds import FoldPlan

log = logging.getLogger(__name__)
# results taken per wait: a wait scans the pending list, so take many at a time
WAIT_BATCH = 64
WAIT_S = 0.5


def connect(address: str) -> Any:
    """Ray, connected to the cluster at ``address`` (``auto``: the one ``ray start`` runs on this node; ``ray://host:port``:
    through Ray Client); ImportError with the remedy when the extra is not installed."""
    try:
        import ray
    except ImportError:
        raise ImportError("PREDICTOR_EXECUTOR=ray needs Ray: pip install -e '.[ray]'") from None
    if not ray.is_initialized():
        ray.init(address=address, log_to_driver=False, configure_logging=False)
        log.info("connected to the Ray cluster at %s: %s CPUs", address, ray.cluster_resources().get("CPU", 0))
    return ray


def run_on_ray(
    fits: Sequence[Fit], training_sets: Sequence[TrainingSet], plans: Sequence[FoldPlan], *, seed: int, address: str
) -> Iterator[tuple[Fit, FitResult]]:
    """Make ``fits`` as Ray tasks (one CPU each) on the cluster at ``address``, yielding results as they finish."""
    if not fits:
        return
    ray = connect(address)
    task = ray.remote(num_cpus=1, max_retries=2)(run_one)  # a lost node's fits run again elsewhere
    sets = {i: ray.put(training_sets[i]) for i in {f.set_index for f in fits}}
    folds = {i: ray.put(plans[i]) for i in sets}
    pending = {task.remote(f, sets[f.set_index], folds[f.set_index], seed): f for f in fits}
    refs = list(pending)
    while refs:
        done, refs = ray.wait(refs, num_returns=min(len(refs), WAIT_BATCH), timeout=WAIT_S)
        yield from ray.get(done)
