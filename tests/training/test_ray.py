"""Training on a real local Ray cluster gives what local processes give: the same champions and the same metrics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.raycluster import ray_cluster
from training.dataset import TrainingSet
from training.memory import MemoryChampions, MemoryTracker
from training.pipeline import train
from training.settings import TrainingSettings

MODELS = ["mean", "linear_log", "lightgbm_log", "quadratic_log"]


def sets() -> list[TrainingSet]:
    """Three (algorithm, platform) pairs of 60 runs each, a different cost law on each."""
    rng = np.random.default_rng(11)
    out = []
    for platform, power in (("p1", 1.0), ("p2", 1.5), ("p3", 0.5)):
        X = pd.DataFrame({"n": rng.uniform(1, 200, 60), "m": rng.uniform(1, 20, 60)})
        y = 0.1 * X["n"].to_numpy() ** power * X["m"].to_numpy() * rng.lognormal(0, 0.1, 60)
        out.append(TrainingSet("a", platform, X, y, ["m", "n"], [f"{platform}-r{i:02d}" for i in range(60)]))
    return out


def outcomes(settings: TrainingSettings) -> dict[tuple[str, str], tuple[str, str | None, dict[str, dict[str, float]]]]:
    """Each pair's challenger, what serves after the decision, and every candidate's metrics, under ``settings``."""
    done = train(settings, sets(), models=MODELS, tracker=MemoryTracker(0.9), champions=MemoryChampions())
    return {(o.algorithm, o.platform): (o.challenger, o.serving, o.metrics) for o in done}


@pytest.mark.e2e
def test_ray_cluster_gives_the_champions_and_metrics_of_local_processes(tmp_path):
    base = TrainingSettings(home=tmp_path / "home", cv_folds=5, seed=5)
    local = outcomes(base.model_copy(update={"n_jobs": 2}))
    with ray_cluster(workers=1) as address:
        on_ray = outcomes(base.model_copy(update={"executor": "ray", "ray_address": address}))
    assert local and set(on_ray) == set(local)
    for pair, (challenger, serving, metrics) in local.items():
        assert on_ray[pair][:2] == (challenger, serving), pair
        assert set(on_ray[pair][2]) == set(metrics) and metrics
        for candidate, values in metrics.items():
            assert on_ray[pair][2][candidate] == pytest.approx(values, rel=1e-9), (pair, candidate)
