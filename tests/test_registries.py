"""Every registered policy and every zoo member runs on a small case: a registry entry that cannot is caught here.

The cases are drawn from the registries themselves (``scheduler.policies.POLICIES``, ``models.zoo.ZOO``), so a new
entry is run as soon as it is registered.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from models.zoo import NEEDS as MEMBER_NEEDS
from models.zoo import ZOO, learns_from_censored, make_model
from scheduler.gridinfo import GRID_ATTRIBUTES
from scheduler.policies import POLICIES
from scheduler.sites import SITES
from simulator.bounds import makespan_lower_bound
from simulator.estimates import truth
from simulator.metrics import compute
from simulator.simulate import simulate
from simulator.workload import Workload
from simulator.workloads import bag_of_tasks, walker_grid
from simulator.workloads.figures import FIGURES


def small_workload(needs: frozenset[str]) -> Workload:
    """A few jobs on a workload that provides what a policy ``needs``."""
    if needs <= frozenset():
        return FIGURES["fig14"]()
    if needs <= {SITES}:
        return bag_of_tasks.generate(
            seed=1, granularity=150, sites=2, grid_heterogeneity=2, app_heterogeneity=0.5, total_gb=1.0
        )
    if needs <= {GRID_ATTRIBUTES}:
        return walker_grid.generate(seed=1, net=1, jobs=3, min_tasks=2, max_tasks=4)
    raise AssertionError(f"no small workload provides {sorted(needs)}")


def test_importing_the_comparison_alone_fills_the_policy_registry() -> None:
    # The registry used to be filled by importing scheduler.policies from inside functions: simulator.compare alone saw none.
    code = "import sys, simulator.compare; print(len(sys.modules['scheduler.policies'].POLICIES))"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert int(shown) == len(POLICIES) >= 20


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_every_registered_policy_schedules_a_small_workload(name: str) -> None:
    entry = POLICIES[name]
    w = small_workload(entry.needs)
    assert w.jobs and entry.needs <= w.provides
    metrics = compute(simulate(w, entry.factory(), truth(w)))
    assert metrics.done == metrics.jobs == len(w.jobs)
    assert metrics.makespan >= makespan_lower_bound(w) - 1e-9


@pytest.fixture(scope="module")
def runs() -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """40 runs whose seconds grow with ``size``, with the columns the history members read; the slowest 5 censored."""
    rng = np.random.default_rng(5)
    size = 10 ** rng.uniform(1, 3, 40)
    seconds = 0.05 * size**1.2
    X = pd.DataFrame(
        {
            "size": size,
            "noise": rng.normal(0, 1, 40),
            "request.time": 2 * seconds,
            "request.procs": rng.integers(1, 9, 40),
            "history.last1": seconds * rng.uniform(0.8, 1.2, 40),
            "history.last2_mean": seconds * rng.uniform(0.8, 1.2, 40),
        }
    )
    return X, seconds, seconds >= np.sort(seconds)[-5]


@pytest.mark.parametrize("name", list(ZOO))
def test_every_zoo_member_fits_and_predicts_a_small_case(
    name: str, runs: tuple[pd.DataFrame, np.ndarray, np.ndarray]
) -> None:
    X, y, censored = runs
    assert MEMBER_NEEDS[name].features <= set(X.columns) and len(X) >= MEMBER_NEEDS[name].min_rows
    model = make_model(name, seed=0)
    fitted = model.fit(X, y, censored=censored) if learns_from_censored(name) else model.fit(X[~censored], y[~censored])
    predictions = fitted.predict(X)
    assert predictions.shape == y.shape and np.isfinite(predictions).all()
