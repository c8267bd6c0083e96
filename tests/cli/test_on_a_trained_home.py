"""The CLI on a trained home and against the running service: estimates with walltimes, champions, reports, errors."""

from __future__ import annotations

import json

import httpx
import pytest
from typer.testing import CliRunner

from cli.app import app
from predictor.walltime import slurm_walltime
from tests.livesrv import free_port
from tests.trained import Home


@pytest.fixture
def invoke(trained: Home, monkeypatch: pytest.MonkeyPatch):
    """Run the CLI with the trained home as PREDICTOR_HOME."""
    monkeypatch.setenv("PREDICTOR_HOME", str(trained.settings.home))
    monkeypatch.setenv("COLUMNS", "200")
    runner = CliRunner()
    return lambda *args: runner.invoke(app, list(args))


def test_predict_table_shows_interval_limit_and_slurm_walltimes(invoke, trained: Home):
    job = ["predict", "--algorithm", "mafft", "--param", f"input={trained.inputs / 'f7.fa'}"]
    as_json = invoke(*job, "--json")
    assert as_json.exit_code == 0, as_json.output
    estimates = json.loads(as_json.stdout)
    assert set(estimates) == {"cpu1", "cpu2"}
    table = invoke(*job)
    assert table.exit_code == 0, table.output
    header = next(line for line in table.stdout.splitlines() if "platform" in line)
    assert [c.strip() for c in header.strip("┃ ").split("┃")] == [
        "platform",
        "seconds",
        "walltime",
        "lower",
        "upper",
        "limit",
        "limit walltime",
        "model",
        "memory",
        "memory limit",
        "memory model",
    ]
    for platform, e in estimates.items():
        assert e["walltime"] == slurm_walltime(e["seconds"]) and e["limit_walltime"] == slurm_walltime(e["limit"])
        row = next(line for line in table.stdout.splitlines() if line.startswith(f"│ {platform} "))
        cells = [c.strip() for c in row.strip("│ ").split("│")]
        assert cells[1:7] == [
            f"{e['seconds']:.3f}",
            e["walltime"],
            f"{e['lower']:.3f}",
            f"{e['upper']:.3f}",
            f"{e['limit']:.3f}",
            e["limit_walltime"],
        ]
        assert cells[8:] == ["-", "-", "-"] and e["memory"] is None, "no memory champion: no memory"


def test_predict_over_http_gives_the_walltimes_the_api_gives(invoke, base: str):
    remote = invoke("predict", "--algorithm", "mafft", "--param", "input=f7.fa", "--url", base, "--json")
    assert remote.exit_code == 0, remote.output
    api = httpx.post(f"{base}/v1/predict", json={"algorithm": "mafft", "params": {"input": "f7.fa"}}).json()[
        "estimates"
    ]
    assert len(api) == 2
    for e in api:
        shown = json.loads(remote.stdout)[e["platform"]]
        assert (shown["walltime"], shown["limit_walltime"]) == (e["walltime"], e["limit_walltime"])


@pytest.mark.parametrize(
    ("param", "answer"),
    [("input=missing.fa", "answered HTTP 4"), ("input=/etc/passwd", "answered HTTP 403")],
    ids=["missing-file", "outside-the-roots"],
)
def test_an_http_error_is_one_line_not_a_traceback(invoke, base: str, param: str, answer: str):
    result = invoke("predict", "--algorithm", "mafft", "--param", param, "--url", base)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {base} {answer}") and result.stderr.count("\n") == 1
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)


def test_a_service_that_is_not_there_is_one_line(invoke):
    url = f"http://127.0.0.1:{free_port()}"
    result = invoke("predict", "--algorithm", "mafft", "--param", "input=f7.fa", "--url", url)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: cannot reach {url}") and result.stderr.count("\n") == 1


def test_models_list_shows_each_champion_from_the_registry_and_from_the_service(invoke, base: str):
    for args in (["models", "list"], ["models", "list", "--url", base]):
        result = invoke(*args)
        assert result.exit_code == 0, result.output
        rows = [line for line in result.stdout.splitlines() if line.startswith("│ mafft ")]
        assert len(rows) == 2, result.stdout
        for row, platform in zip(rows, ("cpu1", "cpu2"), strict=True):
            cells = [c.strip() for c in row.strip("│ ").split("│")]
            assert cells[:2] == ["mafft", platform] and cells[2].isdigit() and cells[3] == "linear_log"
            assert float(cells[4]) > 0  # RAE%
        assert "RAE%" in result.stdout and "in x2" in result.stdout


def test_report_without_an_algorithm_covers_every_trained_one(invoke):
    result = invoke("report")
    assert result.exit_code == 0, result.output
    assert (
        "mafft: training session" in result.stdout
        and "mafft on cpu1" in result.stdout
        and "mafft on cpu2" in result.stdout
    )


@pytest.mark.parametrize(
    "args", [["--platform", "gpu9"], ["--algorithm", "mafft", "--platform", "gpu9"]], ids=["all", "mafft"]
)
def test_report_on_an_unknown_platform_fails_clearly(invoke, args: list[str]):
    result = invoke("report", *args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: unknown platform 'gpu9'") and "trained on: cpu1, cpu2" in result.stderr
    assert result.stdout == ""
