"""Fold plans: forward plans in the order runs ended, shuffled ones seeded and balanced; saved and loaded as CSV."""

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
    assert path.read_text().splitlines()[0] == "run_id,fold,scheme"
    loaded = FoldPlan.load(path)
    assert loaded.run_ids == plan.run_ids and loaded.scheme == "shuffled"
    np.testing.assert_array_equal(loaded.folds, plan.folds)
    forward = FoldPlan.forward_chain(RUNS, np.arange(len(RUNS), 0, -1), 4)
    again = FoldPlan.load(forward.save(tmp_path / "forward.csv"))
    assert again.scheme == "forward"
    np.testing.assert_array_equal(again.folds, forward.folds)
    path.write_text("run_id,fold\na,0\nb,1\n")  # a peer's plan without the scheme column: shuffled
    assert FoldPlan.load(path).scheme == "shuffled"


def test_load_refuses_a_foreign_table(tmp_path: Path) -> None:
    path = tmp_path / "other.csv"
    path.write_text("run,fold\na,0\n")
    with pytest.raises(ValueError, match="run_id, fold"):
        FoldPlan.load(path)
    path.write_text("run_id,fold\na,0\nb,2\n")
    with pytest.raises(ValueError, match="0..k-1"):
        FoldPlan.load(path)
    path.write_text("run_id,fold\na,-1\nb,0\n")  # only a forward plan leaves runs unscored
    with pytest.raises(ValueError, match="forward"):
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


def test_a_forward_fold_never_trains_on_a_run_that_ended_with_or_after_one_it_scores() -> None:
    rng = np.random.default_rng(5)
    ended = rng.integers(0, 40, 200).astype(float)  # many runs end at the same instant
    plan = FoldPlan.forward_chain([f"r{i}" for i in range(200)], ended, 10)
    assert plan.scheme == "forward" and 2 <= plan.n_folds <= 10
    first_scored = ended[plan.scored].min()
    assert (ended[~plan.scored] < first_scored).all()  # the trained-only stretch is the earliest
    assert (~plan.scored).sum() >= 100  # half the runs, at least, only train
    for train, test in plan.splits():
        assert len(test) and len(train)
        assert ended[train].max() < ended[test].min()
    scored = np.concatenate([test for _, test in plan.splits()])
    assert sorted(scored) == sorted(np.flatnonzero(plan.scored))  # each scored run once


def test_forward_windows_are_consecutive_and_of_about_equal_size() -> None:
    ended = np.arange(100.0)[::-1]  # row order is the reverse of time order
    plan = FoldPlan.forward_chain([f"r{i}" for i in range(100)], ended, 5, start=0.5)
    assert plan.n_folds == 5
    assert list(np.bincount(plan.folds[plan.scored])) == [10] * 5
    assert (plan.folds[:50] >= 0).all() and (plan.folds[50:] == -1).all()  # the last rows ended first
    assert plan.folds[0] == 4 and plan.folds[49] == 0


def test_a_tiny_forward_plan_still_trains_on_two_runs_and_scores_one() -> None:
    plan = FoldPlan.forward_chain(RUNS[:3], [3.0, 1.0, 2.0], 10)
    assert list(plan.folds) == [0, -1, -1]
    with pytest.raises(ValueError, match="at least 3 runs"):
        FoldPlan.forward_chain(RUNS[:2], [1.0, 2.0], 10)
    with pytest.raises(ValueError, match="one finite end"):
        FoldPlan.forward_chain(RUNS[:3], [1.0, float("nan"), 2.0], 10)


def test_runs_that_all_ended_at_one_instant_fall_back_to_row_order() -> None:
    plan = FoldPlan.forward_chain(RUNS[:10], [5.0] * 10, 3)
    assert plan.n_folds == 3 and (plan.folds[:5] == -1).all()


def test_a_forward_window_trains_only_on_runs_that_ended_before_its_jobs_were_submitted() -> None:
    """Jobs are estimated at their submission: a long run submitted early but ended inside a window is no training row
    of that window, and becomes one for the next."""
    rng = np.random.default_rng(8)
    submitted = np.sort(rng.uniform(0, 1000, 300))
    ended = submitted + rng.exponential(80, 300)
    plan = FoldPlan.forward_chain([f"r{i}" for i in range(300)], ended, 5, submitted=submitted)
    for fold in range(plan.n_folds):
        scored, train = plan.test_rows(fold), plan.train_rows(fold)
        assert ended[train].max() < submitted[scored].min()  # nothing that ended after a scored job was submitted
        assert not (train & scored).any()
    late = (plan.trains_from == plan.folds) & plan.scored  # no run trains the window it is scored in
    assert not late.any()
    still_running = ~plan.scored & (ended > submitted[plan.test_rows(0)].min())
    assert still_running.any() and (plan.trains_from[still_running] >= 1).all()  # ran into window 0: trains from 1 on


def test_runs_that_overlap_entirely_are_taken_as_submitted_when_they_ended() -> None:
    """Runs recorded together (an import without times): every submission precedes every end, and no window could
    open; their end order serves."""
    ended = np.linspace(1000.0, 1000.001, 20)
    plan = FoldPlan.forward_chain([f"r{i}" for i in range(20)], ended, 4, submitted=ended - 100.0)
    same = FoldPlan.forward_chain([f"r{i}" for i in range(20)], ended, 4)
    np.testing.assert_array_equal(plan.folds, same.folds)


def test_the_first_window_trains_on_finished_runs_not_on_censored_ones() -> None:
    """wagap's backfill class: its first runs were censored, the first window's fit had no run to learn from, and
    every member failed on it. Only finished runs count towards a window's training rows."""
    ended = np.arange(20.0)
    finished = np.ones(20, dtype=bool)
    finished[:12] = False  # the first twelve runs were stopped at their limit
    plan = FoldPlan.forward_chain([f"r{i}" for i in range(20)], ended, 4, finished=finished)
    assert (plan.train_rows(0) & finished).sum() >= 2
    blind = FoldPlan.forward_chain([f"r{i}" for i in range(20)], ended, 4)
    assert (blind.train_rows(0) & finished).sum() == 0  # counted censored runs, it opened with nothing to learn
    with pytest.raises(ValueError, match="finished runs"):
        FoldPlan.forward_chain([f"r{i}" for i in range(20)], ended, 4, finished=np.arange(20) == 19)
