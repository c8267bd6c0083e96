"""Censored runs count: they raise the served limit of their pair, and the Tobit member learns from them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks.censored_runs import stopped_at_a_limit
from predictor.domain import Measurement
from predictor.intervals import scaled
from predictor.store import MeasurementStore
from tests.training.kit import served_champion
from training.crossval import cross_validate
from training.folds import FoldPlan
from training.pipeline import run_training
from training.settings import TrainingSettings


def _law(length: np.ndarray, count: np.ndarray) -> np.ndarray:
    return 0.002 * length * count


def test_censored_long_runs_raise_the_served_limit(tmp_path) -> None:
    """Two platforms with the same 40 finished runs; on ``kept`` ten more runs overran twice the law and were killed there."""
    rng = np.random.default_rng(11)
    length, count = rng.uniform(100, 5000, 50), rng.integers(2, 50, 50).astype(float)
    seconds = _law(length, count) * rng.lognormal(0, 0.2, 50)

    def run(platform: str, i: int, censored: bool = False) -> Measurement:
        wall = 2 * _law(length[i], count[i]) if censored else seconds[i]
        features = {"input.length": length[i], "input.sequences": count[i]}
        return Measurement(
            run_id=f"{platform}-{i:02d}",
            algorithm="align",
            platform=platform,
            features=features,
            wall_seconds=wall,
            exit_status=137 if censored else 0,
            censored=censored,
        )

    store = MeasurementStore(f"sqlite:///{tmp_path / 'store.db'}")
    store.migrate()
    store.add(
        [run(p, i) for p in ("kept", "dropped") for i in range(40)]
        + [run("kept", i, censored=True) for i in range(40, 50)]
    )
    assert store.count("align", "kept", informative_only=True) == 50 and len(store.measurements("align", "kept")) == 40
    settings = TrainingSettings(
        home=tmp_path,
        mlflow_tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}",
        mlflow_artifact_root=tmp_path / "artifacts",
        cv_folds=5,
        selection_metric="rae",
        n_jobs=1,
    )
    outcomes = run_training(settings, store, models=["linear_log"])
    assert [(o.platform, o.serving) for o in outcomes] == [("dropped", "linear_log"), ("kept", "linear_log")]
    kept, dropped = (served_champion(settings, "align", p) for p in ("kept", "dropped"))
    assert kept is not None and dropped is not None
    assert float(kept.tags["cv_censored_rows"]) == 10 and "cv_censored_rows" not in dropped.tags
    job = pd.DataFrame({"input.length": [2000.0], "input.sequences": [20.0]})
    # linear_log learns from the finished runs alone, so both serve the same time; the limit differs by the quantiles.
    assert kept.model.predict(job)[0] == pytest.approx(dropped.model.predict(job)[0])
    limit_kept = scaled(kept.model.predict(job)[0], kept.residual_quantiles, settings.limit_quantile)
    limit_dropped = scaled(dropped.model.predict(job)[0], dropped.residual_quantiles, settings.limit_quantile)
    assert limit_kept > 1.3 * limit_dropped
    assert limit_kept >= 2 * kept.model.predict(job)[0], "runs that overran twice the law lift the limit above that"
    store.dispose()


@pytest.mark.parametrize("seed", range(5))
def test_tobit_underestimates_the_killed_jobs_less_than_least_squares(seed: int) -> None:
    """The longest 30 % of runs killed at one limit: the Tobit member's estimates fall below their true times less often."""
    ts, truth = stopped_at_a_limit(seed)
    plan = FoldPlan.create(ts.run_ids, 10, seed=0)
    killed = ts.censored
    under = {
        name: float((cross_validate(name, ts, plan).predictions[killed] < truth[killed]).mean())
        for name in ("linear_log", "tobit_log")
    }
    assert under["tobit_log"] < under["linear_log"] - 0.04, under
