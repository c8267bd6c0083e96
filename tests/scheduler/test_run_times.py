"""What the scheduler is told: tables, noisy and blind oracles, fitted models equal to the service's runtime oracle."""

from __future__ import annotations

import math

import numpy as np
import pytest

from predictor.oracle import RuntimeOracle
from scheduler.run_times import NoisyOracle, TableOracle, job_key
from simulator.estimates import fit_champions, predicted
from simulator.scenarios import parse_estimates
from simulator.workload import Cluster, JobSpec, MachineSpec, PlatformSpec, Workload
from simulator.workloads import ncbi


def small_workload() -> Workload:
    cluster = Cluster({"a": PlatformSpec("a"), "b": PlatformSpec("b")}, [MachineSpec("A", "a"), MachineSpec("B", "b")])
    jobs = [
        JobSpec(
            f"j{i}",
            float(i),
            "algo",
            {"a": 10.0 + i, "b": 20.0 + i},
            params={"n": i, "requested_time": 3600 if i else -1},
        )
        for i in range(3)
    ]
    return Workload("small", jobs, cluster)


def test_truth_requested_and_blind():
    w = small_workload()
    truth = parse_estimates("oracle").oracle(w).estimate("algo", {"n": 1, "requested_time": 3600})
    assert {p: e.seconds for p, e in truth.items()} == {"a": 11.0, "b": 21.0}
    asked = parse_estimates("requested").oracle(w)
    assert {e.seconds for e in asked.estimate("algo", {"n": 1, "requested_time": 3600}).values()} == {3600.0}
    assert {e.seconds for e in asked.estimate("algo", {"n": 0, "requested_time": -1}).values()} == {None}
    blind = parse_estimates("none").oracle(w).estimate("algo", {"n": 2, "requested_time": 3600}, platforms=["b"])
    assert list(blind) == ["b"] and blind["b"].seconds is None


def test_noisy_oracle_is_deterministic_and_lognormal():
    table = TableOracle({job_key("x", {"i": i}): {"p": 100.0} for i in range(4000)}, "t")
    noisy = NoisyOracle(table, 0.5, seed=7)
    first = noisy.estimate("x", {"i": 3})["p"].seconds
    assert noisy.estimate("x", {"i": 3})["p"].seconds == first
    assert NoisyOracle(table, 0.5, seed=8).estimate("x", {"i": 3})["p"].seconds != first
    logs = np.log([noisy.estimate("x", {"i": i})["p"].seconds / 100.0 for i in range(4000)])
    assert abs(logs.mean()) < 0.03 and logs.std() == pytest.approx(0.5, rel=0.05)
    assert NoisyOracle(table, 0.0).estimate("x", {"i": 1})["p"].seconds == 100.0


def test_unknown_estimates_spec_is_refused():
    with pytest.raises(ValueError, match="unknown estimates"):
        parse_estimates("psychic").oracle(small_workload())
    with pytest.raises(ValueError, match="no history"):
        parse_estimates("model").oracle(small_workload())


def test_fitted_model_answers_like_the_service_runtime_oracle():
    w = ncbi.generate(hours=0.05, seed=3, per_type=1, history_runs=30)
    champions = fit_champions(w.history, "linear_log")
    table = predicted(w.jobs, champions, "model")
    service = RuntimeOracle(ncbi.catalog(), champions, coverage=0.8, limit_quantile=0.95)
    assert len(w.jobs) >= 20
    for spec in w.jobs[:20]:
        ours = table.estimate(spec.algorithm, spec.params)
        theirs = service.estimate(spec.algorithm, spec.params, features=spec.features)
        assert set(ours) == set(theirs) == set(ncbi.MACHINE_TYPES)
        for platform in ours:
            assert ours[platform].seconds == pytest.approx(theirs[platform].seconds, rel=1e-9)


def test_fitted_model_errs_like_the_hidden_complexity():
    w = ncbi.generate(hours=0.2, seed=4, per_type=1)
    model = parse_estimates("model").oracle(w)
    ratios = [
        math.log(e.seconds / spec.true_times[p])
        for spec in w.jobs
        for p, e in model.estimate(spec.algorithm, spec.params).items()
    ]
    assert abs(np.mean(ratios)) < 0.1 and 0.1 < np.std(ratios) < 0.5


def test_an_extrapolating_estimate_is_planned_with_its_limit() -> None:
    from predictor.domain import Estimate
    from scheduler.run_times import seconds

    inside = Estimate(platform="cpu", seconds=10.0, upper=12.0, limit=15.0)
    outside = Estimate(platform="gpu", seconds=10.0, upper=30.0, limit=40.0, extrapolating=True)
    assert seconds({"cpu": inside, "gpu": outside, "none": Estimate(platform="none")}) == {
        "cpu": 10.0,
        "gpu": 40.0,
        "none": None,
    }
