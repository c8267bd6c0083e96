"""Fold plans: seeded, balanced, saved and loaded as CSV."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from training.folds import FoldPlan

RUNS = [f"run-{i:03d}" for i in range(23)]


def test_same_seed_same_plan_other_seed_other_plan() -> None:
    plan = FoldPlan.create(RUNS, 10, seed=1)
    np.testing.assert_array_equal(plan.folds, FoldPlan.create(RUNS, 10, seed=1).folds)
    assert not np.array_equal(plan.folds, FoldPlan.create(RUNS, 10, seed=2).folds)


def test_every_row_is_tested_once_in_balanced_folds() -> None:
    plan = FoldPlan.create(RUNS, 10, seed=1)
    assert plan.n_folds == 10
    assert sorted(np.bincount(plan.folds)) == [2] * 7 + [3] * 3
    tested = np.concatenate([test for _, test in plan.splits()])
    assert sorted(tested) == list(range(len(RUNS)))
    for train, test in plan.splits():
        assert not set(train) & set(test) and len(train) + len(test) == len(RUNS)


def test_fewer_rows_than_folds_gives_leave_one_out() -> None:
    plan = FoldPlan.create(RUNS[:4], 10, seed=1)
    assert plan.n_folds == 4
    assert sorted(plan.folds) == [0, 1, 2, 3]


def test_too_few_rows_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 3 runs, got 2"):
        FoldPlan.create(RUNS[:2], 10, seed=1)


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    plan = FoldPlan.create(RUNS, 5, seed=3)
    path = plan.save(tmp_path / "folds.csv")
    assert path.read_text().splitlines()[0] == "run_id,fold"
    loaded = FoldPlan.load(path)
    assert loaded.run_ids == plan.run_ids
    np.testing.assert_array_equal(loaded.folds, plan.folds)


def test_load_refuses_a_foreign_table(tmp_path: Path) -> None:
    path = tmp_path / "other.csv"
    path.write_text("run,fold\na,0\n")
    with pytest.raises(ValueError, match="run_id, fold"):
        FoldPlan.load(path)
    path.write_text("run_id,fold\na,0\nb,2\n")
    with pytest.raises(ValueError, match="0..k-1"):
        FoldPlan.load(path)


def test_repeats_of_one_job_share_a_fold() -> None:
    jobs = [i // 3 for i in range(30)]  # ten jobs, three repeats each
    plan = FoldPlan.create([f"r{i}" for i in range(30)], 5, seed=4, groups=jobs)
    assert plan.n_folds == 5
    for job in range(10):
        assert len({plan.folds[i] for i in range(30) if jobs[i] == job}) == 1
    assert sorted(np.bincount(plan.folds)) == [6] * 5


def test_groups_must_match_the_runs_and_be_two_or_more() -> None:
    with pytest.raises(ValueError, match="2 groups for 4 runs"):
        FoldPlan.create(RUNS[:4], 3, seed=1, groups=[1, 2])
    with pytest.raises(ValueError, match="at least 2 distinct jobs"):
        FoldPlan.create(RUNS[:4], 3, seed=1, groups=[7, 7, 7, 7])
