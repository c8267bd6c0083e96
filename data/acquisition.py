"""Where the holes are: the expected value of measuring each candidate job of one (algorithm, platform).

Two acquisition rules rank candidates (after Duplyakin et al., "Active Learning in Performance
Analysis", IEEE Cluster 2016, who pick the next experiment where a model is least sure):

- ``uncertainty``: how much a committee of fast zoo members disagrees about the candidate (the
  spread of their log-seconds answers). Members that read the data differently (a line, a
  quadratic, boosted trees) agree where runs were measured and part ways in the holes;
- ``coverage``: the distance from the candidate to the nearest measured job, in the scaled feature
  space the training envelope uses (signed log, then standardised), times how often users submit
  jobs like it (a kernel density over the pair's production runs; 1 where there are none).

Each value is divided by the candidate's estimated cost to the power ``cost_weight`` (the
committee's answer, else the envelope's power law, else one second): cheap informative runs first.
A batch is picked greedily: a picked candidate counts as measured for coverage, and damps the
uncertainty of its neighbours, so one batch does not spend ten runs on one hole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from models.transforms import log_seconds, signed_log1p
from models.zoo import make_model
from predictor.envelope import TrainingEnvelope

Rule = Literal["uncertainty", "coverage"]
RULES: tuple[Rule, ...] = ("uncertainty", "coverage")
# Fast members of different shapes (milliseconds to fit a few hundred rows): their disagreement is the uncertainty.
COMMITTEE = ("linear_log", "quadratic_log", "lightgbm_log")
# fewer finished runs than this: the uncertainty rule falls back to coverage
MIN_COMMITTEE_ROWS = 8
# a candidate no user submits anything like keeps this weight; the most submitted gets twice it
DEMAND_FLOOR = 1.0


@dataclass(frozen=True)
class AcquisitionPick:
    """One ranked candidate: its row in the pool, the value of measuring it, its estimated seconds and the score."""

    index: int
    value: float
    cost_s: float
    score: float


class FeatureSpace:
    """Signed-log, standardised coordinates of jobs over the features that vary among the candidates (all, if none varies)."""

    def __init__(self, pool: pd.DataFrame) -> None:
        logged = signed_log1p(pool.to_numpy(dtype="float64"))
        spread = logged.std(axis=0)
        # one candidate left: keep every feature
        keep = spread > 0 if np.any(spread > 0) else np.ones(len(spread), dtype=bool)
        self.columns = [c for c, k in zip(pool.columns, keep, strict=True) if k]
        self.center = logged[:, keep].mean(axis=0)
        self.scale = np.where(spread[keep] > 0, spread[keep], 1.0)

    def __call__(self, frame: pd.DataFrame) -> np.ndarray:
        values = frame.reindex(columns=self.columns).to_numpy(dtype="float64")
        return (signed_log1p(np.nan_to_num(values)) - self.center) / self.scale


def nearest(points: np.ndarray, to: np.ndarray) -> np.ndarray:
    """Distance from each of ``points`` to the nearest of ``to`` (infinite when ``to`` is empty)."""
    if len(to) == 0:
        return np.full(len(points), np.inf)
    distance, _ = cKDTree(to).query(points, k=1)
    return np.asarray(distance, dtype="float64")


def typical_spacing(points: np.ndarray) -> float:
    """The median distance from a point to its nearest other (distinct) point; 1 when there is none."""
    if len(points) < 2:
        return 1.0
    gaps, _ = cKDTree(points).query(points, k=2)
    positive = gaps[:, 1][gaps[:, 1] > 0]
    return float(np.median(positive)) if len(positive) else 1.0


def committee_log_answers(
    measured: pd.DataFrame, seconds: np.ndarray, pool: pd.DataFrame, *, seed: int = 0
) -> np.ndarray | None:
    """Log seconds each :data:`COMMITTEE` member answers for the pool (members x candidates); None when too few runs."""
    if len(measured) < MIN_COMMITTEE_ROWS:
        return None
    answers = []
    for name in COMMITTEE:
        model = make_model(name, seed=seed).fit(measured, seconds)
        answers.append(log_seconds(np.asarray(model.predict(pool), dtype="float64")))
    return np.array(answers)


def demand_weight(
    space: FeatureSpace, pool: np.ndarray, submitted: pd.DataFrame | None, bandwidth: float
) -> np.ndarray:
    """From 1 to 2: how densely users' own jobs (``submitted``) lie around each candidate."""
    if submitted is None or len(submitted) == 0:
        return np.full(len(pool), DEMAND_FLOOR)
    users = space(submitted)
    squared = ((pool[:, None, :] - users[None, :, :]) ** 2).sum(axis=2)
    density = np.exp(-squared / (2 * bandwidth**2)).sum(axis=1)
    top = density.max()
    return DEMAND_FLOOR * (1.0 + (density / top if top > 0 else np.zeros_like(density)))


def estimated_cost(
    measured: pd.DataFrame, seconds: np.ndarray, pool: pd.DataFrame, answers: np.ndarray | None
) -> np.ndarray:
    """Seconds each candidate should take: the committee's mean answer, else the envelope's power law, else 1."""
    if answers is not None:
        return np.exp(answers.mean(axis=0))
    if len(measured) >= 2:
        return TrainingEnvelope.fit(measured, seconds).law(pool.to_numpy(dtype="float64"))
    return np.ones(len(pool))


def rank(
    pool: pd.DataFrame,
    measured: pd.DataFrame,
    seconds: np.ndarray,
    *,
    rule: Rule,
    n: int,
    cost_weight: float = 1.0,
    submitted: pd.DataFrame | None = None,
    seed: int = 0,
) -> list[AcquisitionPick]:
    """The ``n`` candidates of ``pool`` (feature rows) most worth measuring, best first, given the finished runs
    ``measured`` (feature rows, the pool's columns) that took ``seconds``; ``submitted``: the users' own jobs."""
    if rule not in RULES:
        raise ValueError(f"unknown acquisition rule {rule!r}; known: {', '.join(RULES)}")
    if len(pool) == 0 or n <= 0:
        return []
    measured = measured.reindex(columns=pool.columns).fillna(0.0)
    space = FeatureSpace(pool)
    points, known = space(pool), space(measured)
    radius = typical_spacing(points)
    answers = committee_log_answers(measured, seconds, pool, seed=seed) if rule == "uncertainty" else None
    cost = np.maximum(estimated_cost(measured, seconds, pool, answers), 1e-3)
    penalty = cost**cost_weight
    demand = demand_weight(space, points, submitted, radius)
    # farther than any real distance: "nothing measured yet"
    far = float(np.abs(points).sum(axis=1).max()) + 1.0
    covered = np.minimum(nearest(points, known), far)
    spread = answers.std(axis=0) if answers is not None else None
    picked_near = np.full(len(points), np.inf)
    free = np.ones(len(points), dtype=bool)
    picks: list[AcquisitionPick] = []
    for _ in range(min(n, len(points))):
        if spread is None:
            value = covered * demand
        else:
            value = spread * (1.0 - np.exp(-((picked_near / radius) ** 2)))
        score = np.where(free, value / penalty, -np.inf)
        best = int(np.argmax(score))
        picks.append(AcquisitionPick(best, float(value[best]), float(cost[best]), float(score[best])))
        free[best] = False
        step = np.sqrt(((points - points[best]) ** 2).sum(axis=1))
        covered = np.minimum(covered, step)
        picked_near = np.minimum(picked_near, step)
    return picks
