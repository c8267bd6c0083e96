"""``simulator.compare`` and ``predictor compare``: the policy x estimates x seed grid, its intervals, table and plot."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from cli.app import app
from predictor.catalog import load_catalog
from predictor.settings import Settings
from scheduler.policies import POLICIES, Registered, applicable_policies
from scheduler.policies.fcfs import FCFS
from scheduler.specs import parse_policy
from simulator import compare
from simulator.scenarios import parse_estimates, parse_workload

NCBI = "ncbi:hours=0.02,per_type=1"  # ~60 BLAST jobs on 6 machines, with history for the model


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(Settings().catalog_path)


def grid(workload: str, catalog, policies=(), estimates=(), seeds: int = 1):
    """``compare.run_grid`` on specs, as the CLI parses them."""
    return compare.run_grid(
        parse_workload(workload, catalog),
        seeds=seeds,
        policies={p: parse_policy(p) for p in policies},
        estimates={e: parse_estimates(e) for e in estimates},
    )


def test_one_row_per_policy_estimates_and_seed(catalog):
    runs = grid(NCBI, catalog, policies=["fcfs", "edf"], estimates=["oracle", "noisy:0.5"], seeds=2)
    assert len(runs) == 2 * 2 * 2
    assert set(zip(runs["policy"], runs["estimates"], runs["seed"])) == {
        (p, e, s) for p in ("fcfs", "edf") for e in ("oracle", "noisy:0.5") for s in (0, 1)
    }
    assert runs.groupby("seed")["workload"].first().tolist() == [
        "ncbi-0.02h-s0",
        "ncbi-0.02h-s1",
    ]  # seeds make new workloads
    assert (runs["makespan_ratio"] >= 1.0).all()  # no schedule beats the lower bound
    assert (runs["done"] == runs["jobs"]).all()


def test_fig11_makespans_against_the_lower_bound(catalog):
    # Five tasks of 2, 3, 3, 2, 4 s on three nodes at time 0: the bound is max(4, 14 / 3) = 14/3.
    # FCFS ends at 7 (ratio 1.5); EDF minimising makespan with the true times at 5 (ratio 15/14), as in
    # test_figures. Both seeds give the same runs.
    edf = "edf:objective=makespan"
    runs = grid("fig11", catalog, policies=["fcfs", edf], estimates=["oracle"], seeds=2)
    assert runs["lower_bound"].tolist() == pytest.approx([14 / 3] * 4)
    summary = compare.summarize(runs).set_index(["policy", "metric"])
    assert summary.loc[("fcfs", "makespan"), "mean"] == 7.0 and summary.loc[(edf, "makespan"), "mean"] == 5.0
    assert summary.loc[("fcfs", "makespan_ratio"), "mean"] == pytest.approx(1.5)
    assert summary.loc[(edf, "makespan_ratio"), "mean"] == pytest.approx(15 / 14)
    simulated = summary.drop("sim_seconds", level="metric")  # the one column that is wall-clock time
    assert (simulated["half_width"] == 0.0).all() and (simulated["runs"] == 2).all()  # identical runs: zero-width CI
    header, rows = compare.table(summary.reset_index(), ["makespan", "makespan_ratio"], "makespan")
    assert header == ["estimates", "policy", "makespan", "makespan_ratio"]
    assert rows == [
        ["oracle", edf, "5.000 ± 0.000", "1.071 ± 0.000"],
        ["oracle", "fcfs", "7.000 ± 0.000", "1.500 ± 0.000"],
    ]


def test_t_interval_by_hand():
    # Values 1, 2, 3: mean 2, sample sd 1, half-width t(0.975, 2) / sqrt(3) = 4.3027 / 1.7321 = 2.4841; one run: none.
    runs = pd.DataFrame(
        {
            "policy": ["a"] * 3 + ["b"],
            "estimates": ["oracle"] * 4,
            "seed": [0, 1, 2, 0],
            "makespan": [1.0, 2.0, 3.0, 5.0],
        }
    )
    summary = compare.summarize(runs).set_index("policy")
    assert summary.loc["a", "mean"] == 2.0 and summary.loc["a", "half_width"] == pytest.approx(2.4841, abs=1e-4)
    assert summary.loc["a", "low"] == pytest.approx(2.0 - 2.4841, abs=1e-4)
    assert summary.loc["b", "runs"] == 1 and math.isnan(summary.loc["b", "half_width"])
    assert compare.table(summary.reset_index(), ["makespan"], "makespan")[1][1] == ["oracle", "b", "5.000"]


def test_policies_and_estimates_resolution(catalog, monkeypatch):
    w = parse_workload("fig11", catalog).make()
    assert list(compare.resolve_policies(w)) == applicable_policies(frozenset())
    assert list(compare.resolve_estimates(w)) == ["oracle", "noisy:0.5"]  # fig11 has no history for a model
    assert list(compare.resolve_estimates(parse_workload(NCBI, catalog).make())) == ["oracle", "model", "noisy:0.5"]
    with pytest.raises(ValueError, match="unknown policy 'lottery'; known: .*fcfs"):
        grid("fig11", catalog, policies=["fcfs", "lottery"])
    monkeypatch.setitem(POLICIES, "sited", Registered(FCFS, frozenset({"sites"})))
    with pytest.raises(ValueError, match="policy 'sited' needs sites, which workload fig11 does not provide"):
        compare.resolve_policies(w, {"sited": parse_policy("sited")})
    with pytest.raises(ValueError, match="seeds must be at least 1"):
        grid("fig11", catalog, seeds=0)


def test_cli_writes_csvs_and_plot(runner, tmp_path):
    out = tmp_path / "cmp"
    result = runner.invoke(
        app,
        [
            "compare",
            "--workload",
            NCBI,
            "--policies",
            "fcfs,edf",
            "--seeds",
            "2",
            "--out",
            str(out),
            "--metric",
            "makespan_ratio",
            "--markdown",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "| estimates | policy | makespan | makespan_ratio | mean_completion |" in result.stdout
    runs = pd.read_csv(out / "ncbi_hours_0.02_per_type_1-runs.csv")
    assert len(runs) == 2 * 3 * 2 and set(runs["estimates"]) == {"oracle", "model", "noisy:0.5"}
    summary = pd.read_csv(out / "ncbi_hours_0.02_per_type_1-summary.csv")
    assert len(summary[summary["metric"] == "makespan_ratio"]) == 2 * 3
    assert (out / "ncbi_hours_0.02_per_type_1-makespan_ratio.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workload", "fig11", "--policies", "lottery"], "unknown policy 'lottery'"),
        (["--workload", "fig11", "--metric", "speed"], "unknown metric 'speed'"),
        (["--workload", "fig11", "--estimates", "model"], "no history"),
    ],
)
def test_cli_mistakes_are_reported(runner, args, message):
    result = runner.invoke(app, ["compare", *args, "--seeds", "1"])
    assert result.exit_code == 2 and message in result.output
