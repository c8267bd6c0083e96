"""Paired bootstrap of RAE and RRSE differences: exact where nothing varies, decisive where one model is plainly better."""

from __future__ import annotations

import numpy as np
import pytest

from training import significance
from training.metrics import compute_metrics
from training.significance import Difference, paired_bootstrap, resample_counts


def _jobs(n_jobs: int, repeats: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Measured seconds of ``repeats`` runs of each job, a prior per row, and each row's job."""
    rng = np.random.default_rng(seed)
    truth = np.repeat(rng.uniform(1.0, 100.0, n_jobs), repeats)
    y = truth * rng.lognormal(0.0, 0.05, len(truth))
    return y, np.full_like(y, y.mean()), list(np.repeat(np.arange(n_jobs), repeats))


def differences(*args, **kwargs) -> list[Difference]:
    """The bootstrap's differences, one per metric: RAE and RRSE (so a loop over them is never empty)."""
    found = paired_bootstrap(*args, **kwargs)
    assert set(found) == {"rae", "rrse", "male", "mdale"}
    return list(found.values())


def test_observed_differences_are_the_metrics_differences() -> None:
    y, prior, groups = _jobs(30, 3)
    rng = np.random.default_rng(1)
    a, b = y * rng.lognormal(0, 0.1, len(y)), y * rng.lognormal(0, 0.2, len(y))
    found = paired_bootstrap(y, prior, a, b, groups)
    ma, mb = compute_metrics(y, a, prior), compute_metrics(y, b, prior)
    assert found["rae"].observed == pytest.approx(ma["rae"] - mb["rae"])
    assert found["rrse"].observed == pytest.approx(ma["rrse"] - mb["rrse"])


def test_a_plainly_better_model_wins_every_resample() -> None:
    y, prior, groups = _jobs(40, 3)
    rng = np.random.default_rng(2)
    a, b = y * rng.lognormal(0, 0.02, len(y)), y * rng.lognormal(0, 0.5, len(y))
    for difference in differences(y, prior, a, b, groups):
        assert difference.low <= difference.observed <= difference.high < 0
        assert difference.share_a_better == 1.0


def test_equally_good_models_get_an_interval_around_zero() -> None:
    y, prior, groups = _jobs(40, 3)
    rng = np.random.default_rng(3)
    a, b = (y * rng.lognormal(0, 0.2, len(y)) for _ in range(2))
    for difference in differences(y, prior, a, b, groups):
        assert difference.low < 0 < difference.high
        assert 0.05 < difference.share_a_better < 0.95


def test_identical_predictions_differ_by_nothing() -> None:
    y, prior, groups = _jobs(10, 2)
    for difference in differences(y, prior, y * 1.1, y * 1.1, groups):
        assert difference.observed == difference.low == difference.high == 0.0
        assert difference.share_a_better == 0.0


def test_repeats_of_a_job_are_resampled_together() -> None:
    # One job only: every resample draws that job, so the interval collapses onto the observed value.
    y = np.array([1.0, 2.0, 3.0])
    for difference in differences(y, np.full(3, 2.5), y + 0.1, y + 0.3, ["job"] * 3, n_resamples=50):
        assert difference.low == pytest.approx(difference.observed)
        assert difference.high == pytest.approx(difference.observed)


def test_the_same_seed_gives_the_same_interval() -> None:
    y, prior, groups = _jobs(20, 3)
    a, b = y * 1.05, y * 0.9
    assert paired_bootstrap(y, prior, a, b, groups, seed=7) == paired_bootstrap(y, prior, a, b, groups, seed=7)


def test_kept_draws_are_the_seeds_own_draws() -> None:
    """The kept draw of 4,000 resamples serves 2,000 as the seed's own draw of 2,000; a kept draw cannot be changed."""
    fresh = np.random.default_rng(3).multinomial(300, np.full(300, 1.0 / 300), size=2000)
    resample_counts(3, 300, 4000)
    kept = resample_counts(3, 300, 2000)
    np.testing.assert_array_equal(kept, fresh)
    with pytest.raises(ValueError, match="read-only"):
        kept[0, 0] = 5
    for jobs in range(10, 20):
        resample_counts(3, jobs, 10)
    assert len(significance._draws) <= significance._KEPT_DRAWS


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"groups": [0, 1]}, "one group per row"),
        ({"pred_b": np.ones(2)}, "equally long"),
        ({"level": 1.0}, "level"),
        ({"n_resamples": 0}, "n_resamples"),
    ],
)
def test_bad_input_is_refused_clearly(kwargs: dict, message: str) -> None:
    args = {
        "y_true": np.ones(3),
        "y_prior": np.ones(3),
        "pred_a": np.ones(3),
        "pred_b": np.ones(3),
        "groups": [0, 1, 2],
    }
    with pytest.raises(ValueError, match=message):
        paired_bootstrap(**{**args, **kwargs})


def test_censored_rows_are_left_out() -> None:
    y, prior, groups = _jobs(30, 2)
    rng = np.random.default_rng(4)
    a, b = y * rng.lognormal(0, 0.1, len(y)), y * rng.lognormal(0, 0.3, len(y))
    # Two more rows, censored: B predicts them wildly; as bounds they must not sway the comparison.
    found = paired_bootstrap(
        [*y, 500.0, 600.0],
        [*prior, 1.0, 1.0],
        [*a, 1.0, 1.0],
        [*b, 5000.0, 6000.0],
        [*groups, 99, 99],
        censored=[False] * len(y) + [True, True],
    )
    expected = paired_bootstrap(y, prior, a, b, groups)
    assert found == expected


def test_the_median_log_error_difference_is_the_lower_medians_and_resamples_whole_jobs() -> None:
    rng = np.random.default_rng(3)
    y = rng.uniform(10, 100, 201)
    a, b = y * rng.lognormal(0, 0.2, 201), y * rng.lognormal(0, 0.6, 201)
    found = paired_bootstrap(y, np.full(201, y.mean()), a, b, list(range(201)), n_resamples=500, seed=1)["mdale"]
    prior = np.full(201, y.mean())
    expected = compute_metrics(y, a, prior)["mdale"] - compute_metrics(y, b, prior)["mdale"]
    assert found.observed == pytest.approx(100 * expected)  # in hundredths of ln
    assert found.low <= found.observed <= found.high < 0 and found.share_a_better == 1.0
