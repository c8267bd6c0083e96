"""Kontothanassis & Goddeau 2004's profile-driven policies on hand-checked instances through the simulator: Affinity, Greedy-1/2/3."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cli.app import app
from scheduler.policies.affinity import Affinity
from scheduler.policies.greedy import greedy2
from scheduler.specs import make_policy, parse_warm_gain
from simulator.scenarios import parse_estimates
from simulator.simulate import SimResult, simulate
from simulator.workload import Cluster, JobSpec, MachineSpec, PlatformSpec, Workload

HALF = {("algo", "p"): 0.5}  # a warm cache halves every run of "algo" on platform p


def spec(name: str, submit: float, times: dict[str, float], data: str | None = None) -> JobSpec:
    return JobSpec(name, submit, "algo", times, params={"name": name}, data=data)


def cluster(*machines: tuple[str, str]) -> Cluster:
    return Cluster({p: PlatformSpec(p) for _, p in machines}, [MachineSpec(m, p) for m, p in machines])


def run(workload: Workload, policy) -> SimResult:
    return simulate(
        workload, make_policy(policy) if isinstance(policy, str) else policy, parse_estimates("oracle").oracle(workload)
    )


def placed(result: SimResult) -> dict[str, tuple[str, float, float]]:
    """job -> (machine, start, end) of its finished run."""
    return {s.job: (s.machine, s.start, s.end) for s in result.segments if s.outcome == "done"}


def test_greedy1_gives_the_contended_fast_machine_to_the_job_with_the_largest_benefit():
    # A loses 2 s without F (10 vs 12), B loses 20 (10 vs 30): B takes F although A came first.
    w = Workload(
        "benefit", [spec("A", 0, {"f": 10, "s": 12}), spec("B", 0, {"f": 10, "s": 30})], cluster(("F", "f"), ("S", "s"))
    )
    assert placed(run(w, "greedy1")) == {"B": ("F", 0, 10), "A": ("S", 0, 12)}  # mean completion 11
    assert placed(run(w, "fcfs")) == {"A": ("F", 0, 10), "B": ("S", 0, 30)}  # mean completion 20


def test_greedy2_prefers_the_machine_whose_cache_holds_the_data():
    # X warms P1 with "d" (0-10); Y at 20: Greedy-1 sees equal costs and takes P2, idle longest (10 s);
    # Greedy-2 costs P1 at 10 x 0.5 = 5 and takes it, and the simulator runs Y warm there (5 s).
    jobs = [spec("X", 0, {"p": 10}, data="d"), spec("Y", 20, {"p": 10}, data="d")]
    w = Workload("warm", jobs, cluster(("P1", "p"), ("P2", "p")), warm_gain=HALF)
    assert placed(run(w, "greedy1"))["Y"] == ("P2", 20, 30)
    assert placed(run(w, greedy2(warm_gain=w.warm_gain)))["Y"] == ("P1", 20, 25)
    assert placed(run(w, "greedy2:warm_gain=algo@p:0.5"))["Y"] == ("P1", 20, 25)


def test_greedy2_learns_the_warm_factor_from_a_cold_and_a_warm_run():
    # One machine: X runs cold (20 s, as estimated), Y right after on the warm cache (10 s): factor 10/20.
    jobs = [spec("X", 0, {"p": 20}, data="d"), spec("Y", 1, {"p": 20}, data="d")]
    w = Workload("learn", jobs + [spec("Z", 40, {"p": 20}, data="d")], cluster(("P", "p")), warm_gain=HALF)
    policy = make_policy("greedy2")
    assert placed(run(w, policy)) == {"X": ("P", 0, 20), "Y": ("P", 20, 30), "Z": ("P", 40, 50)}
    assert policy.profile.warm_factor("algo", "p") == pytest.approx(0.5)
    assert policy.profile.warm_factor("algo", "other") == 1.0


def test_greedy3_explores_an_unknown_machine_type_then_exploits_what_it_learned():
    # J1: nothing known, tie, F idle longest (10 s). J2 at 15: F costs 10, S is unknown (0): explored (20 s).
    # J3 at 40: F 10 < S 20: back to F. Greedy-1 with true times never tries S.
    jobs = [spec("J1", 0, {"f": 10, "s": 20}), spec("J2", 15, {"f": 10, "s": 20}), spec("J3", 40, {"f": 10, "s": 20})]
    w = Workload("explore", jobs, cluster(("F", "f"), ("S", "s")))
    policy = make_policy("greedy3")
    assert placed(run(w, policy)) == {"J1": ("F", 0, 10), "J2": ("S", 15, 35), "J3": ("F", 40, 50)}
    assert {key: mean.value for key, mean in policy.profile.walls.items()} == {
        ("algo", "f", False): 10,
        ("algo", "s", False): 20,
    }
    assert [machine for machine, _, _ in placed(run(w, "greedy1")).values()] == ["F", "F", "F"]


def test_greedy3_prices_a_combination_whose_first_run_is_still_going_at_its_time_so_far():
    # J1 probes S (tie, first machine) for 100 s; J2 at 1 probes F (10 s). At 20, S2 costs at least 20 (S1's run
    # has gone on that long) against F's 10: J3 takes F. Were S still "unknown" (0), J3 would take S2.
    jobs = [spec("J1", 0, {"s": 100, "f": 10}), spec("J2", 1, {"s": 100, "f": 10}), spec("J3", 20, {"s": 100, "f": 10})]
    w = Workload("probe", jobs, cluster(("S1", "s"), ("S2", "s"), ("F", "f")))
    assert placed(run(w, "greedy3")) == {"J1": ("S1", 0, 100), "J2": ("F", 1, 11), "J3": ("F", 20, 30)}


def test_affinity_waits_out_the_penalty_or_for_a_warm_machine_whichever_comes_first():
    # Every run: 20 s cold, 10 warm. X at 0: no warm machine; penalty on A = 0.5 x (20 - 10) + 0 = 5:
    # it waits and starts at 5 (a wake-up, no other event), cold, ends 25 and leaves A warm with "d".
    # Y at 22: B is free but cold (penalty 5, due at 27); A frees warm at 25 first: Y takes it, ends 35.
    jobs = [spec("X", 0, {"p": 20}, data="d"), spec("Y", 22, {"p": 20}, data="d")]
    w = Workload("affinity", jobs, cluster(("A", "p"), ("B", "p")), warm_gain=HALF)
    assert placed(run(w, Affinity(warm_gain=w.warm_gain))) == {"X": ("A", 5, 25), "Y": ("A", 25, 35)}
    # Believing in no gain, X has no penalty and starts at once; Y still takes the machine holding its data.
    assert placed(run(w, Affinity(warm_gain={}))) == {"X": ("A", 0, 20), "Y": ("A", 22, 32)}


@pytest.mark.parametrize(("data", "expected"), [("d", ("A", 30, 40)), ("e", ("A", 45, 65))])
def test_affinity_penalty_counts_the_cache_the_machine_would_lose(data, expected):
    # W (data "d", 20 s cold, 10 warm) waits out 0.5 x 10 = 5 and runs 5-25, leaving A warm with "d".
    # Z at 30 reading "d" hits the cache at once (10 s); reading "e" it waits 5 for itself plus 10 for
    # the 10 s that W's kind would lose with the cache: it starts at 45, cold.
    jobs = [spec("W", 0, {"p": 20}, data="d"), spec("Z", 30, {"p": 20}, data=data)]
    w = Workload("lose", jobs, cluster(("A", "p")), warm_gain=HALF)
    assert placed(run(w, Affinity(warm_gain=HALF))) == {"W": ("A", 5, 25), "Z": expected}


def test_bad_options_are_clear_errors():
    assert parse_warm_gain("blastn@type6:0.21; blastp@type2:0.125") == {
        ("blastn", "type6"): 0.21,
        ("blastp", "type2"): 0.125,
    }
    for text in ("blastn:0.2", "blastn@type6", "blastn@type6:x", "blastn@type6:1.5"):
        with pytest.raises(ValueError):
            parse_warm_gain(text)
    with pytest.raises(ValueError):
        make_policy("affinity:weight=-1")
    with pytest.raises(ValueError):
        make_policy("greedy3:unknown=-1")


@pytest.mark.parametrize("policy", ["affinity", "greedy1", "greedy2", "greedy3", "greedy2:warm_gain=blastn@type6:0.21"])
def test_cli_simulates_the_ncbi_workload_with_each_policy(policy, tmp_path, monkeypatch):
    monkeypatch.setenv("PREDICTOR_HOME", str(tmp_path / "home"))
    args = [
        "simulate",
        "--workload",
        "ncbi:hours=0.02,per_type=2",
        "--policy",
        policy,
        "--estimates",
        "oracle",
        "--json",
        "--no-chart",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.stdout)
    assert metrics["jobs"] == metrics["done"] > 0
