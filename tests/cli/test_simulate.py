"""``predictor simulate``: metrics as a table or JSON, the Gantt chart, clear errors."""

from __future__ import annotations

import json

import pytest

from cli.app import app


def test_fig11_fcfs_json(runner):
    result = runner.invoke(app, ["simulate", "--workload", "fig11", "--policy", "fcfs", "--json", "--no-chart"])
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.stdout)
    assert metrics["makespan"] == 7 and metrics["mean_completion"] == 3.8


def test_fig14_table_and_chart(runner, tmp_path):
    chart = tmp_path / "fig14.png"
    result = runner.invoke(app, ["simulate", "--workload", "fig14", "--gantt", str(chart)])
    assert result.exit_code == 0, result.output
    assert "fig14 on 1 x r1, 1 x r2: edf, estimates oracle" in result.stdout and "wasted_seconds" in result.stdout
    assert chart.read_bytes()[:4] == b"\x89PNG"


def test_ncbi_with_noisy_estimates_and_a_cluster_file(runner, tmp_path):
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "platforms: {type2: {power_watts: 120}, type6: {power_watts: 200}}\nmachines: {type2: 2, type6: 2}\n"
    )
    result = runner.invoke(
        app,
        [
            "simulate",
            "--workload",
            "ncbi:hours=0.02,seed=3",
            "--cluster",
            str(cluster),
            "--estimates",
            "noisy:0.5",
            "--json",
            "--no-chart",
        ],
    )
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.stdout)
    assert metrics["jobs"] > 30 and metrics["done"] == metrics["jobs"] and metrics["energy_kwh"] > 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workload", "fig99"], "unknown workload"),
        (["--workload", "fig11", "--estimates", "psychic"], "unknown estimates"),
        (["--workload", "fig11", "--estimates", "model"], "no history"),
        (["--workload", "fig11", "--policy", "lottery"], "unknown policy"),
        (["--workload", "fig11", "--cluster", "moon"], "unknown cluster"),
        (["--workload", "/nowhere/log.swf"], "no such file"),
    ],
)
def test_mistakes_are_reported(runner, args, message):
    result = runner.invoke(app, ["simulate", *args, "--no-chart"])
    assert result.exit_code == 2 and message in result.output
