"""The acquisition rules: far from the measured runs ranks first, cheap before dear, users' sizes before others."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from data.acquisition import RULES, rank


def _jobs(sizes: list[float]) -> pd.DataFrame:
    sizes_ = np.asarray(sizes, dtype=float)
    return pd.DataFrame({"input.sequences": sizes_, "input.residues": sizes_ * 300.0})


MEASURED = _jobs([8, 10, 12, 14, 16, 20, 24, 28, 32, 40])
SECONDS = 0.01 * MEASURED["input.sequences"].to_numpy() ** 2


@pytest.mark.parametrize("rule", RULES)
def test_candidates_far_from_the_data_rank_above_those_next_to_it(rule):
    pool = _jobs([9, 11, 30, 400, 36, 1000])
    picks = rank(pool, MEASURED, SECONDS, rule=rule, n=len(pool), cost_weight=0.0)
    order = [int(pool["input.sequences"][p.index]) for p in picks]
    assert len(order) == len(pool) and sorted(order) == sorted(pool["input.sequences"].astype(int))
    assert set(order[:2]) == {400, 1000}, order
    assert order.index(400) < order.index(9) and order.index(1000) < order.index(11)
    assert picks[0].value > picks[-1].value >= 0


def test_a_batch_spreads_over_the_holes_instead_of_repeating_one():
    pool = _jobs([500, 510, 520, 1, 2])
    picks = rank(pool, MEASURED, SECONDS, rule="coverage", n=2, cost_weight=0.0)
    chosen = {int(pool["input.sequences"][p.index]) for p in picks}
    assert len(chosen & {500, 510, 520}) == 1 and len(chosen & {1, 2}) == 1, chosen


@pytest.mark.parametrize("rule", RULES)
def test_cost_weight_puts_cheap_runs_first(rule):
    pool = _jobs([4, 200])
    value_only = rank(pool, MEASURED, SECONDS, rule=rule, n=1, cost_weight=0.0)[0]
    per_second = rank(pool, MEASURED, SECONDS, rule=rule, n=2, cost_weight=1.0)
    assert int(pool["input.sequences"][value_only.index]) == 200
    assert int(pool["input.sequences"][per_second[0].index]) == 4
    assert per_second[0].cost_s < per_second[1].cost_s
    assert per_second[0].score == pytest.approx(per_second[0].value / per_second[0].cost_s)


def test_coverage_favours_the_sizes_users_submit():
    pool = _jobs([2, 300])  # both as far from the measured runs, in the scaled space, as can be made
    users = _jobs([280, 300, 320])
    alone = rank(pool, MEASURED, SECONDS, rule="coverage", n=2, cost_weight=0.0)
    wanted = rank(pool, MEASURED, SECONDS, rule="coverage", n=2, cost_weight=0.0, submitted=users)
    assert [p.index for p in wanted][0] == 1
    assert wanted[0].value > next(p.value for p in alone if p.index == 1)


def test_without_runs_or_with_few_the_rules_still_rank_everything():
    pool = _jobs([4, 40, 400])
    for rule in RULES:
        none = rank(pool, MEASURED.iloc[:0], np.empty(0), rule=rule, n=3)
        few = rank(pool, MEASURED.iloc[:2], SECONDS[:2], rule=rule, n=3)
        assert sorted(p.index for p in none) == sorted(p.index for p in few) == [0, 1, 2]
    with pytest.raises(ValueError, match="unknown acquisition rule"):
        rank(pool, MEASURED, SECONDS, rule="greed", n=1)  # type: ignore[arg-type]
