"""Idle-time probes in the simulator: never delay a real job, keep to the budget and the cap, yield at once."""

from __future__ import annotations

from collections import defaultdict

import pytest

from scheduler.probing import HOUR, IdleProber, ProbeBudget, ProbeJob, RankedCandidates
from scheduler.specs import make_policy
from simulator.scenarios import parse_estimates
from simulator.simulate import simulate
from simulator.workload import Cluster, JobSpec, MachineSpec, PlatformSpec, Workload
from simulator.workloads import ncbi

ONE = Cluster({"a": PlatformSpec("a", 100.0)}, [MachineSpec("A", "a")])


def _prober(candidates: list[ProbeJob], budgets: dict[str, ProbeBudget], known=None) -> IdleProber:
    source = RankedCandidates(candidates, known or {})
    return IdleProber(source, budgets, duration=lambda probe, platform: probe.true_times[platform])


def _sparse(hours: float, seed: int, types: tuple[str, ...], every: int) -> Workload:
    """An NCBI-like workload on two machines per type, one job in ``every`` kept: busy spells and idle gaps."""
    full = ncbi.generate(hours=hours, seed=seed, per_type=2, types=types, history_runs=10)
    return Workload(f"sparse-{seed}", full.jobs[::every], full.cluster, history=full.history, warm_gain=full.warm_gain)


def _known(workload) -> dict:
    known: dict = defaultdict(list)
    for m in workload.history:
        known[(m.algorithm, m.platform)].append((dict(m.features), m.wall_seconds))
    return known


@pytest.mark.parametrize("policy", ["fcfs", "edf"])
def test_a_probe_never_delays_a_real_job(policy):
    types = ("type1", "type2", "type6")
    workload = _sparse(0.6, 3, types, every=12)
    oracle = parse_estimates("noisy:0.3").oracle(workload)
    plain = simulate(workload, make_policy(policy), oracle)
    budgets = {t: ProbeBudget(seconds_per_hour=1800.0, cap_s=120.0) for t in types}
    probed = simulate(
        workload,
        make_policy(policy),
        parse_estimates("noisy:0.3").oracle(workload),
        prober=_prober(ncbi.probe_candidates(types, lengths=12, longest=8000.0), budgets, _known(workload)),
    )
    assert probed.probes and {r.outcome for r in probed.probes} >= {"done", "cancelled"}, "probes ran, and some yielded"
    before = {j.id: j for j in plain.jobs}
    assert len(before) == len(probed.jobs) > 100
    for job in probed.jobs:
        assert job.status == before[job.id].status
        assert job.start is not None and job.start <= before[job.id].start, job.id
    assert [(j.id, j.start, j.end, j.platform) for j in probed.jobs] == [
        (j.id, j.start, j.end, j.platform) for j in plain.jobs
    ]


def test_probes_keep_to_the_budget_per_platform_hour_and_to_the_cap():
    types = ("type1", "type6")
    workload = _sparse(2.0, 1, types, every=40)
    budgets = {
        "type1": ProbeBudget(seconds_per_hour=900.0, cap_s=200.0),
        "type6": ProbeBudget(seconds_per_hour=400.0, cap_s=60.0),
    }
    prober = _prober(ncbi.probe_candidates(types, lengths=12, longest=8000.0), budgets, _known(workload))
    result = simulate(workload, make_policy("edf"), parse_estimates("oracle").oracle(workload), prober=prober)
    assert result.probes
    spent: dict = defaultdict(float)
    for record in result.probes:
        cap = budgets[record.platform].cap_s
        assert 0 <= record.end - record.start <= cap + 1e-9
        assert (record.outcome == "capped") == (
            record.end - record.start == pytest.approx(cap) and record.outcome != "cancelled"
        )
        spent[(record.platform, int(record.start // HOUR))] += record.end - record.start
    for (platform, _), seconds in spent.items():
        assert seconds <= budgets[platform].seconds_per_hour + 1e-6
    assert any(r.outcome == "capped" for r in result.probes), "type6 runs the long programs past a 60 s cap"
    censored = [m for m in prober.source.measurements if m.censored]
    assert censored and all(
        m.source.value == "probe" and m.wall_seconds == pytest.approx(budgets[m.platform].cap_s) for m in censored
    )


def test_no_candidate_runs_on_two_machines_of_a_platform_at_once():
    types = ("type1", "type6")
    workload = _sparse(1.0, 2, types, every=30)
    budgets = {t: ProbeBudget(seconds_per_hour=3600.0, cap_s=300.0) for t in types}
    prober = _prober(ncbi.probe_candidates(types, lengths=12, longest=8000.0), budgets, _known(workload))
    result = simulate(workload, make_policy("edf"), parse_estimates("oracle").oracle(workload), prober=prober)
    spans: dict = defaultdict(list)
    for record in result.probes:
        spans[(record.probe, record.platform)].append((record.start, record.end))
    assert len(result.probes) > len(spans) > 10, "probes ran, and some candidates more than once (after a cancel)"
    overlapping = [
        key for key, runs in spans.items() if any(b[0] < a[1] for a, b in zip(sorted(runs), sorted(runs)[1:]))
    ]
    assert overlapping == []
    measured = [(m.run_id.rsplit("-", 1)[0]) for m in prober.source.measurements]
    assert len(measured) == len(set(measured)), "each candidate measured at most once per platform"


def test_an_arriving_job_cancels_the_probe_at_once_and_it_is_not_retried_there():
    jobs = [JobSpec("first", 0.0, "algo", {"a": 2.0}), JobSpec("second", 100.0, "algo", {"a": 5.0})]
    workload = Workload("gap", jobs, ONE)
    long_probe = ProbeJob("long", "algo", {"size": 50.0}, {"a": 1000.0})
    short_probe = ProbeJob("short", "algo", {"size": 5.0}, {"a": 10.0})
    prober = _prober(
        [long_probe, short_probe],
        {"a": ProbeBudget(seconds_per_hour=3600.0, cap_s=500.0)},
        {("algo", "a"): [({"size": 1.0}, 1.0), ({"size": 2.0}, 2.0)]},
    )
    prober.source.cost_weight = 0.0  # rank by the hole alone: the far, long probe first
    result = simulate(workload, make_policy("fcfs"), parse_estimates("oracle").oracle(workload), prober=prober)
    starts = {j.id: j.start for j in result.jobs}
    assert starts == {"first": 0.0, "second": 100.0}
    records = [(r.probe, r.start, r.end, r.outcome) for r in result.probes]
    assert records[0] == ("long", 2.0, 100.0, "cancelled"), records
    assert ("long", 105.0) not in [(p, s) for p, s, _, _ in records], "a cancelled probe is not retried on its machine"
    assert prober.refused == {"A": {"long"}}
    assert all(r.probe == "short" for r in result.probes[1:])
    assert [m.algorithm for m in prober.source.measurements] == ["algo"] * sum(
        r.outcome != "cancelled" for r in result.probes
    )


def test_a_platform_without_budget_never_probes_and_a_bad_budget_is_refused():
    workload = Workload("gap", [JobSpec("x", 0.0, "algo", {"a": 2.0}), JobSpec("y", 50.0, "algo", {"a": 2.0})], ONE)
    prober = _prober([ProbeJob("p", "algo", {"size": 5.0}, {"a": 1.0})], {})
    assert (
        simulate(workload, make_policy("fcfs"), parse_estimates("oracle").oracle(workload), prober=prober).probes == []
    )
    with pytest.raises(ValueError, match="probe budget"):
        ProbeBudget(seconds_per_hour=10.0, cap_s=0.0)
