"""Live error of served peak memory beside run time's (issue 42): the memory a run was served is stored with its served
time, on SQLite and PostgreSQL and in the simulator's in-memory store alike, and scored against the peak it measured."""

from __future__ import annotations

import math

import pytest

from predictor.domain import Estimate, Measurement, ServedEstimate, Target
from predictor.live import live_metrics, live_report, served_window
from predictor.store import MeasurementStore
from training.memory import MemoryMeasurements

MIB = 2**20
PAIR = ("blastn", "cpu-small")


def served(run_id: str, memory: float | None, version: str = "2", memory_version: str | None = "5") -> ServedEstimate:
    """An estimate of 10 s served for ``run_id``, with ``memory`` bytes (its interval 0.8x-1.25x, its limit 1.5x)."""
    estimate = Estimate(
        platform=PAIR[1],
        seconds=10.0,
        lower=8.0,
        upper=12.0,
        limit=15.0,
        model_name="runtime-blastn-cpu-small",
        model_version=version,
        memory=memory,
        memory_lower=None if memory is None else 0.8 * memory,
        memory_upper=None if memory is None else 1.25 * memory,
        memory_limit=None if memory is None else 1.5 * memory,
        memory_model_name=None if memory is None else "memory-blastn-cpu-small",
        memory_model_version=None if memory is None else memory_version,
    )
    record = ServedEstimate.of(run_id, PAIR[0], estimate, origin="service")
    assert record is not None
    return record


RUNS = [  # run id, seconds it took, peak MiB it measured (None: not measured), censored, MiB served (None: no memory)
    ("fine", 10.0, 100, False, 100.0),
    ("over", 11.0, 200, False, 100.0),  # twice the served peak: above its interval and its limit
    ("under", 9.0, 50, False, 100.0),
    ("killed", 30.0, 400, True, 100.0),  # censored: its peak is a lower bound, already past the limit
    ("unmeasured", 10.0, None, False, 100.0),  # no peak measured: says nothing of memory
    ("no-champion", 10.0, 100, False, None),  # no memory champion answered
    ("older", 10.0, 300, False, 100.0),  # served by another memory version
]


def record(store: MeasurementStore | MemoryMeasurements) -> None:
    measurements = [
        Measurement(
            run_id=run_id,
            algorithm=PAIR[0],
            platform=PAIR[1],
            wall_seconds=wall,
            max_rss_kb=None if peak is None else peak * 1024,
            censored=censored,
            exit_status=137 if censored else 0,
        )
        for run_id, wall, peak, censored, _ in RUNS
    ]
    estimates = [
        served(run_id, None if mib is None else mib * MIB, memory_version="4" if run_id == "older" else "5")
        for run_id, _, _, _, mib in RUNS
    ]
    store.add(measurements, estimates)


def test_the_served_memory_is_kept_beside_the_served_time_and_scored_against_the_measured_peak(
    store: MeasurementStore,
) -> None:
    record(store)
    check(store)


def test_the_simulators_in_memory_store_keeps_and_scores_served_memory_as_the_store_does() -> None:
    memory = MemoryMeasurements()
    record(memory)
    check(memory)


def check(recorded: MeasurementStore | MemoryMeasurements) -> None:
    """What the runs of :data:`RUNS` say of the memory and the time they were served."""
    window = recorded.live_window(*PAIR, 100)
    assert sorted(window["run_id"]) == sorted(r[0] for r in RUNS)
    by_run = window.set_index("run_id")
    assert by_run.loc["over", ["memory", "memory_lower", "memory_upper", "memory_limit"]].tolist() == [
        100 * MIB,
        80 * MIB,
        125 * MIB,
        150 * MIB,
    ]
    assert by_run.loc["over", "memory_model_version"] == "5" and math.isnan(by_run.loc["no-champion", "memory"])

    memory = live_metrics(window, Target.MEMORY)
    # judged: fine, over, under, killed, older (served memory and a measured peak); RAE over the finished four
    took, said = [100, 200, 50, 300], [100, 100, 100, 100]
    mean = sum(took) / 4
    rae = 100 * sum(abs(s - t) for s, t in zip(said, took, strict=True)) / sum(abs(t - mean) for t in took)
    assert memory == {
        "runs": 5.0,
        "rae": pytest.approx(rae),
        "within_25pct": 0.25,  # fine
        "underestimate_rate": 0.6,  # over, killed, older
        "limit_exceeded": 0.6,  # over, killed, older
        "interval_coverage": 0.25,  # fine
    }
    time = live_metrics(window)
    assert time["runs"] == 7.0 and time == live_metrics(window, Target.TIME)

    newest = served_window(recorded, *PAIR, 100, Target.MEMORY, version="5")
    assert sorted(newest["run_id"]) == ["fine", "killed", "over", "under"], "what the worker judges version 5 on"
    assert len(served_window(recorded, *PAIR, 100, Target.TIME, version="2")) == len(RUNS)
    report = live_report(recorded, 100)
    assert report[Target.MEMORY] == {PAIR: memory} and report[Target.TIME] == {PAIR: time}


def test_a_pair_never_served_memory_has_no_memory_live_error(store: MeasurementStore) -> None:
    store.add(
        [Measurement(run_id="r1", algorithm=PAIR[0], platform=PAIR[1], wall_seconds=9.0, max_rss_kb=1024)],
        [served("r1", None)],
    )
    report = live_report(store, 100)
    assert PAIR in report[Target.TIME] and report[Target.MEMORY] == {}


def test_a_memory_bound_that_is_no_finite_size_is_left_out_and_the_run_still_recorded() -> None:
    estimate = Estimate(platform=PAIR[1], seconds=1.0, memory=MIB, memory_lower=-5.0, memory_limit=math.inf)
    record = ServedEstimate.of("r1", PAIR[0], estimate, origin="service")
    assert record is not None and (record.memory, record.memory_lower, record.memory_limit) == (MIB, None, None)
