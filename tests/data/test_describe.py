"""The runtime-to-features report: rank correlations by hand, summaries from a store, plots, the CLI."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from cli.app import app
from data.describe import describe_pairs, plot_features, spearman, summarize
from predictor.domain import Measurement
from predictor.settings import BUNDLED_DATA
from predictor.store import MeasurementStore


@pytest.mark.parametrize(
    ("x", "y", "rho"),
    [
        ([1, 2, 3, 4], [10, 20, 30, 45], 1.0),
        ([1, 2, 3, 4], [9, 1, 0.5, 0.1], -1.0),
        ([1, 1, 2, 3], [1, 2, 3, 4], 4.5 / math.sqrt(4.5 * 5)),  # tied x share rank 1.5
        ([1, None, 2, 3, 5], [1, 100, 3, 2, 4], 0.8),  # the run without the feature is left out
        ([7, 7, 7, 7], [1, 2, 3, 4], None),  # constant feature
        ([1, 2], [1, 2], None),  # too few runs
    ],
)
def test_spearman_by_hand(x: list, y: list, rho: float | None) -> None:
    got = spearman(pd.Series(x, dtype="float64"), pd.Series(y, dtype="float64"))
    assert got == (None if rho is None else pytest.approx(rho))


def run(i: int, seconds: float, size: float, noise: float, status: int = 0, platform: str = "cpu-small") -> Measurement:
    return Measurement(
        run_id=f"r{i}",
        algorithm="mafft",
        platform=platform,
        wall_seconds=seconds,
        exit_status=status,
        features={"input.residues": size, "input.noise": noise, "input.flag": 1.0},
    )


def test_summary_counts_range_and_correlations_by_strength(store: MeasurementStore) -> None:
    store.add([run(0, 1, 10, 3), run(1, 4, 20, 1), run(2, 2, 15, 2), run(3, 8, 40, 4), run(4, 99, 1, 1, status=1)])
    store.add([run(9, 5, 5, 5, platform="gpu-a100")])
    described = list(describe_pairs(store, algorithm="mafft", platform="cpu-small"))
    assert len(described) == 1
    summary, frame = described[0]
    assert (summary.runs, summary.failed, summary.min_seconds, summary.median_seconds, summary.max_seconds) == (
        4,
        1,
        1,
        3,
        8,
    )
    assert [(c.feature, c.runs) for c in summary.correlations] == [
        ("input.residues", 4),
        ("input.noise", 4),
        ("input.flag", 4),
    ]
    # noise ranks 3,1,2,4 against runtime ranks 1,3,2,4: rho = 1 - 6 * 8 / (4 * 15) = 0.2; the flag is constant
    assert [c.rho for c in summary.correlations] == [pytest.approx(1.0), pytest.approx(0.2), None]
    assert summarize(frame, "mafft", "cpu-small", 1) == summary
    assert [s.platform for s, _ in describe_pairs(store)] == ["cpu-small", "gpu-a100"]


def test_plots_one_png_per_feature(store: MeasurementStore, tmp_path: Path) -> None:
    store.add([run(0, 0, 10, 3), run(1, 4, 20, 1), run(2, 2, 15, 2), run(3, 8, 4000, 4)])
    ((summary, frame),) = describe_pairs(store)
    written = plot_features(summary, frame, tmp_path / "plots")
    folder = tmp_path / "plots" / "mafft@cpu-small"
    assert sorted(written) == sorted(folder / f"input.{name}.png" for name in ("residues", "noise", "flag"))
    assert all(path.read_bytes().startswith(b"\x89PNG") for path in written)


def test_cli_describes_the_bundled_dataset(tmp_path: Path) -> None:
    env = {"PREDICTOR_HOME": str(tmp_path / "home")}
    runner = CliRunner()
    datasets = [str(p) for p in sorted((BUNDLED_DATA / "measurements").glob("*.csv"))]
    assert runner.invoke(app, ["ingest", *datasets], env=env).exit_code == 0
    result = runner.invoke(
        app, ["describe", "--algorithm", "mafft", "--platform", "cpu1", "--plots", str(tmp_path / "p")], env=env
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("mafft on cpu1: ") and "input.residues" in result.stdout
    assert (tmp_path / "p" / "mafft@cpu1" / "input.residues.png").exists()
    result = runner.invoke(app, ["describe", "--algorithm", "nothing"], env=env)
    assert result.exit_code == 2 and "no successful measurements stored for nothing" in result.stderr


def test_cli_describes_an_imported_swf_log(tmp_path: Path) -> None:
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(
        "platforms: {toy: {kind: cpu, cores: 1, clock_ghz: 1, memory_gb: 1, disk: hdd, power_watts: 1}}\n"
        "algorithms: {toy-all: {parameters: {}, implementations: {toy: {}}}}\n"
    )
    env = {"PREDICTOR_HOME": str(tmp_path / "home"), "PREDICTOR_CATALOG_PATH": str(catalog)}
    log = tmp_path / "toy.swf"
    log.write_text(
        "".join(f"{i} {i * 100} 0 {10 + i * i} 1 -1 -1 1 {60 + i} -1 1 1 1 -1 -1 -1 -1 -1\n" for i in range(6))
    )
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", str(log)], env=env).exit_code == 0
    result = runner.invoke(app, ["describe"], env=env)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("toy-all on toy: 6 runs (0 failed), runtime min 10 / median 16.5 / max 35 s")
    assert "request.time" in result.stdout and "+1.000" in result.stdout
