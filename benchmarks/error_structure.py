"""Why estimates with the same median error schedule differently: the structure of each source's errors.

Used by ``learning_loop.py ncbi``. Every source is reduced to what the scheduler planned with, a
matrix of seconds (jobs x platforms), beside the true times: where the error sits (per program,
per platform), whether it is shared by a job's platforms, whether it picks the right platform and
ranks jobs right, and, for the service, when it extrapolated. Counterfactual sources
(:func:`table_oracle` of a changed matrix) then show which part of the structure costs completion time.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from scheduler.run_times import Oracle, TableOracle, job_key, seconds
from simulator.learning import LearningOracle
from simulator.workload import Workload
from simulator.workloads import ncbi

EARLY_HOURS = 2.0  # the start of the day, before the service's first retrains have seen many of the day's jobs


def platforms(w: Workload) -> list[str]:
    """The workload's platforms, in the order of the matrices' columns."""
    return list(w.cluster.platforms)


def true_matrix(w: Workload) -> np.ndarray:
    """True seconds, jobs x platforms."""
    names = platforms(w)
    return np.array([[j.true_times[p] for p in names] for j in w.jobs])


def planned_matrix(w: Workload, oracle: Oracle, *, points: bool = False) -> np.ndarray:
    """What the scheduler planned each job with on each platform (NaN where unknown).

    A learning oracle gives what it served each job when the job arrived; ``points`` takes the served
    point even where the scheduler planned with the limit (an extrapolating answer).
    """
    names = platforms(w)
    out = np.full((len(w.jobs), len(names)), np.nan)
    for i, j in enumerate(w.jobs):
        key = job_key(j.algorithm, j.params)
        answers = (
            oracle.served.get(key, {}) if isinstance(oracle, LearningOracle) else oracle.estimate(j.algorithm, j.params)
        )
        plan = {p: e.seconds for p, e in answers.items()} if points else seconds(answers)
        for k, p in enumerate(names):
            if plan.get(p) is not None:
                out[i, k] = plan[p]
    return out


def answer_all(w: Workload, oracle: LearningOracle) -> LearningOracle:
    """``oracle`` after it has answered every job of ``w`` with its current champions (what it would serve now)."""
    for j in w.jobs:
        oracle.estimate(j.algorithm, j.params)
    return oracle


def table_oracle(w: Workload, matrix: np.ndarray, label: str) -> TableOracle:
    """A source answering ``matrix`` (jobs x platforms; NaN: unknown) for the workload's jobs."""
    names = platforms(w)
    table = {
        job_key(j.algorithm, j.params): {p: None if np.isnan(v) else float(v) for p, v in zip(names, row)}
        for j, row in zip(w.jobs, matrix)
    }
    return TableOracle(table, label)


def feature_bound(w: Workload) -> np.ndarray:
    """The NCBI cost law with each job's visible length and its hidden complexity at the median (1).

    The best any model of the visible features can do: it knows the law exactly and only misses
    what the features cannot show (the query's complexity and the run-to-run noise).
    """
    names = platforms(w)
    length = np.array([j.features["query.length"] for j in w.jobs])
    program = np.array([j.algorithm for j in w.jobs])
    out = np.empty((len(w.jobs), len(names)))
    for name in ncbi.PROGRAMS:
        rows = program == name
        for k, p in enumerate(names):
            out[rows, k] = ncbi.true_seconds(name, p, length[rows], np.ones(rows.sum()))
    return out


def common_noise(w: Workload, sigma: float, seed: int) -> np.ndarray:
    """True times x one lognormal factor per job, shared by all its platforms (noise correlated across platforms)."""
    z = np.random.default_rng([seed, 1]).standard_normal(len(w.jobs))
    return true_matrix(w) * np.exp(sigma * z)[:, None]


def structure(w: Workload, estimate: np.ndarray) -> dict[str, Any]:
    """Where ``estimate``'s errors sit and what they do to the two choices the scheduler makes.

    ``weighted_error``: absolute error in seconds over true seconds (long jobs weigh by their length,
    unlike the median). ``relative_error``: median absolute log error left once each job's mean error
    over its platforms is taken out (what misleads the choice between platforms).

    ``order_spearman``: rank correlation of each job's best estimated time with its best true time
    (EDF without deadlines runs the shortest first), and ``best_estimate_error`` the median absolute
    log error of that best estimate. ``best_platform_right``: share of jobs whose
    smallest estimate is on their fastest platform; ``platform_regret``: how much longer the jobs
    run on their estimated-best platforms than on their fastest. ``common_share``: share of the
    error variance that a job's platforms share (1/platforms for independent noise, 1 for a pure
    per-job error). On each job's estimated-best platform (its smallest estimate, as if every
    machine were free): ``chosen_underestimated``, the share of estimates below the true time, and
    ``chosen_overrun``, the seconds run past them over the seconds run there (choosing the smallest
    of independent errors picks the optimistic ones).
    """
    true = true_matrix(w)
    log_error = np.log(np.maximum(estimate, 1.0) / np.maximum(true, 1.0))
    known = ~np.isnan(log_error)
    program = np.array([j.algorithm for j in w.jobs])
    submit = np.array([j.submit for j in w.jobs])
    names = platforms(w)
    full = known.all(axis=1)
    e = log_error[full]
    centred = e - e.mean(axis=0)
    chosen = np.nanargmin(np.where(known, estimate, np.inf), axis=1)
    rows = np.arange(len(true))
    fastest = true.argmin(axis=1)
    on_chosen = true[rows, chosen]
    best_estimate = np.nanmin(np.where(known, estimate, np.nan), axis=1)
    early = submit < EARLY_HOURS * 3600.0
    spread = centred.var()
    return {
        "median_abs_log_error": _median_abs(log_error[known]),
        "underestimated": float(np.mean(log_error[known] < 0)),
        "by_program": {p: _median_abs(log_error[program == p][known[program == p]]) for p in ncbi.PROGRAMS},
        "bias_by_platform": {p: float(np.median(log_error[known[:, k], k])) for k, p in enumerate(names)},
        "common_share": float(centred.mean(axis=1).var() / spread) if spread > 0 else float("nan"),
        "weighted_error": float(np.abs(estimate - true)[known].sum() / true[known].sum()),
        "relative_error": _median_abs(e - e.mean(axis=1, keepdims=True)),
        "best_platform_right": float(np.mean(chosen == fastest)),
        "platform_regret": float(on_chosen.sum() / true.min(axis=1).sum() - 1.0),
        "chosen_underestimated": float(np.mean(estimate[rows, chosen] < on_chosen)),
        "chosen_overrun": float(np.maximum(on_chosen - estimate[rows, chosen], 0.0).sum() / on_chosen.sum()),
        "order_spearman": float(stats.spearmanr(best_estimate, true.min(axis=1), nan_policy="omit").statistic),
        "best_estimate_error": _median_abs(np.log(np.maximum(best_estimate, 1.0) / np.maximum(true.min(axis=1), 1.0))),
        "early_median_abs_log_error": _median_abs(log_error[early][known[early]]),
        "later_median_abs_log_error": _median_abs(log_error[~early][known[~early]]),
    }


def _median_abs(values: np.ndarray) -> float:
    return float(np.median(np.abs(values))) if values.size else float("nan")


def extrapolation(w: Workload, oracle: LearningOracle) -> dict[str, float]:
    """How often the service's answers extrapolated, and how much wider their limit was than their point."""
    answers = [e for j in w.jobs for e in oracle.served.get(job_key(j.algorithm, j.params), {}).values() if e.seconds]
    if not answers:
        raise ValueError("the service served no estimates")
    wide = [e.limit / e.seconds for e in answers if e.extrapolating and e.limit is not None]
    early = EARLY_HOURS * 3600.0
    first = [
        e for j in w.jobs if j.submit < early for e in oracle.served.get(job_key(j.algorithm, j.params), {}).values()
    ]
    return {
        "extrapolating": len(wide) / len(answers),
        "extrapolating_early": float(np.mean([e.extrapolating for e in first])) if first else float("nan"),
        "median_limit_over_point": float(np.median(wide)) if wide else float("nan"),
    }
