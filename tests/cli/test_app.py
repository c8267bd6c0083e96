"""The ``predictor`` command itself: its version, a help for every command, no heavy library at start, and a bad command
line as one error line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from cli.app import app
from predictor import __version__

HEAVY = ("torch", "lightgbm", "mlflow", "sklearn", "fastapi")
COMMANDS = [
    ["ingest"],
    ["profile"],
    ["sweep"],
    ["train"],
    ["report"],
    ["serve"],
    ["predict"],
    ["export"],
    ["describe"],
    ["simulate"],
    ["compare"],
    ["algorithms"],
    ["models", "list"],
    ["probe", "plan"],
    ["probe", "run"],
]


def test_importing_the_cli_loads_no_heavy_library() -> None:
    """Not timed: which modules a fresh interpreter holds after ``import cli.app`` (lazy imports keep --help fast)."""
    probe = f"import json, sys; import cli.app; print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(done.stdout) == []


def test_probe_help_names_every_acquisition_rule() -> None:
    from data.acquisition import RULES

    text = CliRunner().invoke(app, ["probe", "plan", "--help"], env={"COLUMNS": "200"}).stdout
    assert f"Acquisition rule: {', '.join(RULES)}." in text


def test_a_bad_option_or_command_is_one_error_line(runner: CliRunner) -> None:
    for args, says in [
        (["train", "--bogus"], "error: No such option: --bogus (see `predictor train --help`)"),
        (["models", "history", "--limit", "x"], "error: Invalid value for '--limit'"),
        (["nope"], "error: No such command 'nope'."),
    ]:
        result = runner.invoke(app, args, prog_name="predictor")
        assert result.exit_code == 2 and result.stderr.startswith(says) and result.stderr.count("\n") == 1, (
            args,
            result.output,
        )
        assert "╭" not in result.output


def test_a_bad_setting_is_one_error_line_naming_its_variable(runner: CliRunner) -> None:
    for env, args, says in [
        ({"PREDICTOR_CV_FOLDS": "abc"}, ["train"], "error: PREDICTOR_CV_FOLDS: Input should be a valid integer"),
        (
            {"PREDICTOR_CV_FOLDS": "1"},
            ["report"],
            "error: PREDICTOR_CV_FOLDS: Input should be greater than or equal to 2",
        ),
        ({"PREDICTOR_SLURM_CLUSTER": "x", "PREDICTOR_PROBE_RULE": "nope"}, ["probe", "plan", "--help"], None),
        (
            {"PREDICTOR_API_MAX_BATCH": "x", "PREDICTOR_API_TOKEN": "s3cret"},
            ["serve"],
            "error: PREDICTOR_API_MAX_BATCH",
        ),
    ]:
        result = runner.invoke(app, args, prog_name="predictor", env=env)
        if says is None:  # help reads no settings: a bad value it never builds does not stop it
            assert result.exit_code == 0, result.output
            continue
        assert result.exit_code == 2 and result.stderr.startswith(says) and result.stderr.count("\n") == 1, (
            env,
            result.output,
        )
        assert "╭" not in result.output and "s3cret" not in result.output


def test_an_unreadable_store_url_is_one_error_line_without_its_password(runner: CliRunner) -> None:
    """Issue 42: SQLAlchemy's ArgumentError was a 74-line traceback from `predict`; now the setting is named, exit 2."""
    job = ["predict", "--algorithm", "mafft", "--param", "input=data/samples/family-40x300.fa"]
    for url, says in [
        ("postgresql://site:s3cret@db.example.org:fivefour/store", "not a database URL SQLAlchemy can read"),
        ("not a url s3cret", "not a database URL SQLAlchemy can read"),
        ("postgress://site:s3cret@db.example.org/store", "no database dialect 'postgress'"),
    ]:
        for args in (job, ["models", "history"]):
            result = runner.invoke(app, args, prog_name="predictor", env={"PREDICTOR_STORE_URL": url})
            assert result.exit_code == 2, (url, args, result.output)
            assert result.stderr.startswith(f"error: PREDICTOR_STORE_URL: {says}"), result.stderr
            assert result.stderr.count("\n") == 1 and "s3cret" not in result.output, result.output


def test_an_error_that_is_not_a_setting_keeps_its_traceback() -> None:
    from pydantic import BaseModel, ValidationError

    from cli.common import settings_error

    class Job(BaseModel):
        cores: int

    try:
        Job(cores="many")  # type: ignore[arg-type]
    except ValidationError as exc:
        assert settings_error(exc) is None
    assert settings_error(ValueError("PREDICTOR_CV_FOLDS")) is None


def test_version_is_the_package_version(runner):
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"predictor {__version__}"


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_help_names_values_not_python_types(runner, command):
    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.stdout and "<list[" not in result.stdout


def test_repeatable_options_show_what_to_give(runner):
    shown = {
        "ingest": ["FILE", "<file>...", "COLUMN=FIELD"],
        "profile": ["NAME=VALUE"],
        "train": ["ALGORITHM", "MODEL"],
        "predict": ["NAME=VALUE", "PLATFORM"],
    }
    for command, metavars in shown.items():
        text = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"}).stdout
        assert all(m in text for m in metavars), (command, text)
