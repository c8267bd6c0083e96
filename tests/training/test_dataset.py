"""Training sets from the store's frame: successful runs, informative features, stable order."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from predictor.domain import Measurement
from predictor.store import MeasurementStore
from training.dataset import DatasetError, load_training_sets, training_set_from_frame


def _frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "run_id": ["r3", "r1", "r2", "r4", "r5"],
            "algorithm": ["a", "a", "a", "a", "b"],
            "platform": ["p", "p", "p", "p", "p"],
            "exit_status": [0, 0, 0, 1, 0],
            "wall_seconds": [30.0, 10.0, 20.0, 99.0, 5.0],
            "cpu_seconds": [29.0, 9.0, 19.0, 98.0, 4.0],
            "size": [3.0, 1.0, np.nan, 4.0, 5.0],
            "constant": [7.0, 7.0, 7.0, 1.0, 7.0],
            "missing": [np.nan, np.nan, np.nan, 1.0, 2.0],
            "params": [{}, {}, {}, {}, {}],
        }
    )


def test_repeats_of_a_job_get_one_job_number() -> None:
    frame = pd.DataFrame(
        {
            "run_id": [f"r{i}" for i in range(5)],
            "wall_seconds": [1.0, 2.0, 1.1, 3.0, 2.1],
            "size": [1.0, 2.0, 1.0, 3.0, 2.0],
            "threads": [4.0, 4.0, 4.0, 8.0, 4.0],
        }
    )
    assert training_set_from_frame(frame, "a", "p").jobs.tolist() == [0, 1, 0, 2, 1]


def test_training_set_from_frame() -> None:
    ts = training_set_from_frame(_frame(), "a", "p")
    assert ts.run_ids == ["r1", "r2", "r3"]
    assert ts.feature_names == ["size"]
    assert list(ts.X.columns) == ["size"]
    np.testing.assert_array_equal(ts.X["size"], [1.0, 0.0, 3.0])
    np.testing.assert_array_equal(ts.y, [10.0, 20.0, 30.0])
    assert len(ts) == 3


def test_unusable_pairs_are_refused() -> None:
    with pytest.raises(DatasetError, match="b on p: 1 successful run"):
        training_set_from_frame(_frame(), "b", "p")
    frame = _frame().assign(size=1.0)
    with pytest.raises(DatasetError, match="no feature varies"):
        training_set_from_frame(frame, "a", "p")


def test_load_training_sets_from_a_store(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = MeasurementStore(f"sqlite:///{tmp_path / 's.db'}")
    store.migrate()

    def run(run_id: str, algorithm: str, platform: str, n: float) -> Measurement:
        features = {"n": n, "gc": 0.5}
        return Measurement(run_id=run_id, algorithm=algorithm, platform=platform, features=features, wall_seconds=2 * n)

    store.add(
        [run(f"a{i}", "a", "p", float(i)) for i in range(1, 6)]
        + [run(f"b{i}", "b", "p", float(i)) for i in range(2)]
        + [run("c1", "c", "q", 1.0)]
    )
    with caplog.at_level(logging.WARNING, logger="training.dataset"):
        sets = load_training_sets(store)
    assert [(ts.algorithm, ts.platform) for ts in sets] == [("a", "p")]
    assert sets[0].feature_names == ["n"]
    assert "b on p: 2 successful run(s)" in caplog.text
    assert load_training_sets(store, algorithms=["c"]) == []
    assert load_training_sets(store, platforms=["q"]) == []
    store.dispose()


def test_censored_runs_join_the_set_with_a_mask_aligned_with_y() -> None:
    frame = _frame().assign(censored=False)
    frame.loc[frame["run_id"] == "r4", "censored"] = True  # exit 1 and censored: stopped, its time a bound
    extra = pd.DataFrame(
        {
            "run_id": ["r0"],
            "algorithm": ["a"],
            "platform": ["p"],
            "exit_status": [0],
            "censored": [True],
            "wall_seconds": [80.0],
            "size": [6.0],
            "params": [{}],
        }
    )
    ts = training_set_from_frame(pd.concat([frame, extra], ignore_index=True), "a", "p")
    assert ts.run_ids == ["r0", "r1", "r2", "r3", "r4"]
    np.testing.assert_array_equal(ts.y, [80.0, 10.0, 20.0, 30.0, 99.0])
    np.testing.assert_array_equal(ts.censored, [True, False, False, False, True])
    np.testing.assert_array_equal(ts.finished, ~ts.censored)
    assert "censored" not in ts.feature_names


def test_without_censored_runs_the_mask_is_all_false() -> None:
    assert training_set_from_frame(_frame(), "a", "p").censored.tolist() == [False, False, False]
    assert training_set_from_frame(_frame().assign(censored=False), "a", "p").censored.tolist() == [False, False, False]


def test_censored_runs_do_not_count_towards_the_minimum() -> None:
    frame = _frame().assign(
        censored=[False, False, True, True, False]
    )  # r2 finished but censored, r4 failed but censored
    frame = frame[frame["run_id"] != "r5"]
    with pytest.raises(DatasetError, match=r"a on p: 2 successful run\(s\) \(and 2 censored\), need at least 3"):
        training_set_from_frame(frame, "a", "p")


def test_load_training_sets_reads_censored_runs(tmp_path: Path) -> None:
    store = MeasurementStore(f"sqlite:///{tmp_path / 's.db'}")
    store.migrate()
    runs = [
        Measurement(run_id=f"a{i}", algorithm="a", platform="p", features={"n": float(i)}, wall_seconds=2.0 * i)
        for i in range(1, 4)
    ]
    runs.append(
        Measurement(
            run_id="a9",
            algorithm="a",
            platform="p",
            features={"n": 9.0},
            wall_seconds=5.0,
            exit_status=137,
            censored=True,
        )
    )
    runs.append(
        Measurement(run_id="a8", algorithm="a", platform="p", features={"n": 8.0}, wall_seconds=5.0, exit_status=1)
    )
    store.add(runs)
    (ts,) = load_training_sets(store)
    assert ts.run_ids == ["a1", "a2", "a3", "a9"] and ts.censored.tolist() == [False, False, False, True]
    store.dispose()


def test_a_class_whose_users_all_ask_the_same_limit_is_still_a_job_class() -> None:
    """Issue 39, wagap's `ops`: every run asked the same time, the constant column was dropped, and the class was
    trained and served as a catalog pair (an envelope, the median rule, no cap at the request)."""
    frame = _frame().assign(**{"request.time": [3600.0] * 5})
    ts = training_set_from_frame(frame, "a", "p")
    assert "request.time" in ts.feature_names and ts.carries_requests
    assert "constant" not in ts.feature_names  # any other constant still teaches nothing
