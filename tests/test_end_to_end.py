"""The whole path through the real CLI in subprocesses: ingest -> train -> serve -> predict, and report, describe,
simulate and compare on what was trained, each checked against numbers computed here from the data and the registry."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx
import pandas as pd
import pytest

from predictor.registry import CHAMPION_ALIAS, registered_name, registry_client
from predictor.settings import BUNDLED_DATA, PROJECT_ROOT, Settings
from tests.livesrv import serve_cli

pytestmark = pytest.mark.e2e

DATASETS = sorted((BUNDLED_DATA / "measurements").glob("*.csv"))
SAMPLE = "samples/family-40x300.fa"
PLATFORMS = ("cpu1", "cpu2")
MODELS = ("linear_log", "lightgbm")


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "predictor", *args],
        env={**os.environ, "COLUMNS": "200", **env},
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )


@dataclass(frozen=True)
class Trained:
    """A home with the bundled runs ingested twice and MAFFT trained, through the CLI, and what each step printed."""

    env: dict[str, str]
    ingested: subprocess.CompletedProcess
    again: subprocess.CompletedProcess
    trained: subprocess.CompletedProcess

    @property
    def settings(self) -> Settings:
        return Settings(home=Path(self.env["PREDICTOR_HOME"]))


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Trained:
    assert DATASETS, "the bundled dataset is missing"
    env = {"PREDICTOR_HOME": str(tmp_path_factory.mktemp("e2e") / "home"), "PREDICTOR_CV_FOLDS": "5"}
    ingested = cli(env, "ingest", *map(str, DATASETS))
    again = cli(env, "ingest", *map(str, DATASETS))
    models = [option for model in MODELS for option in ("--model", model)]
    return Trained(env, ingested, again, cli(env, "train", "--algorithm", "mafft", *models))


def measured(algorithm: str, platform: str) -> pd.DataFrame:
    """The bundled runs of one pair, read here with pandas (not through the store)."""
    frame = pd.concat([pd.read_csv(path) for path in DATASETS], ignore_index=True)
    return frame[(frame["algorithm"] == algorithm) & (frame["platform"] == platform)]


def table(text: str, title: str | None = None) -> list[dict[str, str]]:
    """The rows of the rich table printed under ``title`` (the first table when None), by column name."""
    lines = text.splitlines()
    start = 0 if title is None else next(i for i, line in enumerate(lines) if line.strip() == title)
    header = next(i for i in range(start, len(lines)) if lines[i].startswith("┃"))
    names = [cell.strip() for cell in lines[header].strip("┃").split("┃")]
    rows = []
    for line in lines[header + 2 :]:
        if not line.startswith("│"):
            break
        rows.append(dict(zip(names, (cell.strip() for cell in line.strip("│").split("│")), strict=True)))
    return rows


def test_ingest_train_serve_predict(home: Trained):
    assert home.ingested.returncode == 0, home.ingested.stderr
    assert "rejected" in home.ingested.stdout and " 0 rejected" in home.ingested.stdout
    assert ", 0 stored" in home.again.stdout, "re-ingesting the bundled data must store nothing new"
    assert home.trained.returncode == 0, home.trained.stdout + home.trained.stderr
    assert "Champions" in home.trained.stdout

    with serve_cli(home.env, PROJECT_ROOT) as base:
        response = httpx.post(f"{base}/v1/predict", json={"algorithm": "mafft", "params": {"input": SAMPLE}})
        assert response.status_code == 200, response.text
        estimates = {e["platform"]: e for e in response.json()["estimates"]}
        assert set(estimates) == set(PLATFORMS)
        for e in estimates.values():
            assert e["seconds"] > 0
            assert e["model_name"] == f"runtime-mafft-{e['platform']}" and e["model_version"] == "1"
            assert e["features"]["input.sequences"] == 40

        # clustalo was not trained: the answer says so and falls back on the profile table
        fallback = httpx.post(f"{base}/v1/predict", json={"algorithm": "clustalo", "params": {"input": SAMPLE}}).json()
        assert [e["platform"] for e in fallback["estimates"]] == list(PLATFORMS)
        for e in fallback["estimates"]:
            assert e["fallback"] and "no champion" in e["reason"] and e["seconds"] > 0

        assert httpx.post(f"{base}/v1/predict", json={"algorithm": "nope", "params": {}}).status_code == 404
        outside = httpx.post(f"{base}/v1/predict", json={"algorithm": "mafft", "params": {"input": "../../etc/passwd"}})
        assert outside.status_code == 403

        predicted = cli(
            home.env,
            "predict",
            "--algorithm",
            "mafft",
            "--param",
            f"input={BUNDLED_DATA / SAMPLE}",
            "--url",
            base,
            "--json",
        )
        assert predicted.returncode == 0, predicted.stderr
        assert {p: e["seconds"] for p, e in json.loads(predicted.stdout).items()} == {
            p: e["seconds"] for p, e in estimates.items()
        }

    local = cli(home.env, "predict", "--algorithm", "mafft", "--param", f"input={BUNDLED_DATA / SAMPLE}")
    assert local.returncode == 0 and "runtime-mafft-cpu2" in local.stdout


def test_report_gives_each_candidates_cross_validation_and_stars_the_registered_champion(home: Trained):
    out = cli(home.env, "report", "--algorithm", "mafft")
    assert out.returncode == 0, out.stderr
    client = registry_client(home.settings.resolved_tracking_uri)
    for platform in PLATFORMS:
        rows = table(out.stdout, f"mafft on {platform}")
        # the site's rule (the measured median) is always a candidate
        assert sorted(r["model"].removeprefix("* ") for r in rows) == sorted([*MODELS, "median", "ensemble"])
        champion = client.get_model_version_by_alias(registered_name("mafft", platform), CHAMPION_ALIAS)
        starred = [r for r in rows if r["model"].startswith("* ")]
        assert [r["model"] for r in starred] == [f"* {champion.tags['model_kind']}"]
        rae = {r["model"].removeprefix("* "): float(r["RAE%"]) for r in rows}
        assert rae[champion.tags["model_kind"]] == pytest.approx(float(champion.tags["cv_rae"]), abs=0.01)
        assert rae[champion.tags["model_kind"]] == min(rae.values())  # chosen by RAE
    leads = re.findall(r"champion (\S+) minus runner-up (\S+), .*?over (\d+) jobs\): RAE ([+-][\d.]+)", out.stdout)
    assert len(leads) == len(PLATFORMS)
    for (winner, runner_up, jobs, gap), platform in zip(leads, PLATFORMS, strict=True):
        rae = {r["model"].removeprefix("* "): float(r["RAE%"]) for r in table(out.stdout, f"mafft on {platform}")}
        assert float(gap) == pytest.approx(rae[winner] - rae[runner_up], abs=0.011)
        assert 0 < int(jobs) <= len(measured("mafft", platform))


def test_describe_counts_the_runs_and_ranks_the_features_as_the_data_says(home: Trained):
    out = cli(home.env, "describe", "--algorithm", "mafft", "--platform", "cpu1")
    assert out.returncode == 0, out.stderr
    runs = measured("mafft", "cpu1")
    ok = runs[runs["exit_status"] == 0]
    seconds = ok["wall_seconds"]
    expected = (
        f"mafft on cpu1: {len(ok)} runs ({len(runs) - len(ok)} failed), runtime min {seconds.min():.3g} "
        f"/ median {seconds.median():.3g} / max {seconds.max():.3g} s"
    )
    assert expected in out.stdout and len(ok) > 100
    rows = {r["feature"]: r for r in table(out.stdout)}
    assert {"input.residues", "input.sequences"} <= set(rows)
    for name in ("input.residues", "input.sequences"):
        rho = ok[f"feature.{name}"].corr(seconds, method="spearman")
        assert rows[name]["Spearman rho"] == f"{rho:+.3f}" and rows[name]["runs"] == str(len(ok))


def test_simulate_replays_fig14_and_a_workload_of_the_measured_runs_on_the_trained_champions(
    home: Trained, tmp_path: Path
):
    chart = tmp_path / "fig14.png"
    out = cli(home.env, "simulate", "--workload", "fig14", "--gantt", str(chart))
    assert out.returncode == 0, out.stderr
    metrics = {r["metric"]: r["value"] for r in table(out.stdout, "fig14 on 1 x r1, 1 x r2: edf, estimates oracle")}
    # Fig. 14: T3 (high priority) cancels T2 on R2 at t=1; T2 restarts on R1 at 3 and ends at 6 (tests/simulator/test_figures.py)
    assert [metrics[k] for k in ("jobs", "done", "makespan", "wasted_seconds", "interrupted", "mean_completion")] == [
        "3",
        "3",
        "6.000",
        "1.000",
        "1",
        "4.000",
    ]
    assert chart.read_bytes()[:4] == b"\x89PNG"

    # the champions trained above, downloaded into an empty cache by this process, estimate the replayed runs
    cold = {**home.env, "PREDICTOR_MODEL_CACHE_DIR": str(tmp_path / "cache")}
    replay = cli(cold, "simulate", "--workload", "dataset", "--estimates", "champions", "--json", "--no-chart")
    assert replay.returncode == 0, replay.stderr
    replayed = json.loads(replay.stdout)
    assert replayed["jobs"] > 100 and replayed["done"] == replayed["jobs"] and replayed["makespan"] > 0
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [registered_name("mafft", p) for p in PLATFORMS]


def test_compare_runs_every_policy_and_seed_and_summarises_them(home: Trained, tmp_path: Path):
    out = cli(
        home.env,
        "compare",
        "--workload",
        "fig14",
        "--seeds",
        "2",
        "--policies",
        "edf,fcfs",
        "--estimates",
        "oracle",
        "--out",
        str(tmp_path),
        "--markdown",
    )
    assert out.returncode == 0, out.stderr
    with (tmp_path / "fig14-runs.csv").open() as handle:
        runs = list(csv.DictReader(handle))
    assert sorted((r["policy"], r["estimates"], r["seed"]) for r in runs) == [
        ("edf", "oracle", "0"),
        ("edf", "oracle", "1"),
        ("fcfs", "oracle", "0"),
        ("fcfs", "oracle", "1"),
    ]
    assert {(r["policy"], float(r["makespan"])) for r in runs} == {("edf", 6.0), ("fcfs", 7.0)}  # as `simulate` gives
    with (tmp_path / "fig14-summary.csv").open() as handle:
        summary = {(r["policy"], r["metric"]): r for r in csv.DictReader(handle) if r["estimates"] == "oracle"}
    assert (float(summary[("edf", "makespan")]["mean"]), float(summary[("edf", "makespan")]["half_width"])) == (
        6.0,
        0.0,
    )
    assert summary[("fcfs", "mean_completion")]["runs"] == "2"
    lines = [line for line in out.stdout.splitlines() if line.startswith("| oracle |")]
    assert [line.split(" | ")[1:3] for line in lines] == [["edf", "6.000 ± 0.000"], ["fcfs", "7.000 ± 0.000"]]
    assert (tmp_path / "fig14-mean_completion.png").read_bytes()[:4] == b"\x89PNG"
