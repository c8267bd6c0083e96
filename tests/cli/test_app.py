"""The ``predictor`` command itself: it starts without the heavy libraries, and a bad command line is one error line."""

from __future__ import annotations

import json
import subprocess
import sys

from typer.testing import CliRunner

from cli.app import app

HEAVY = ("torch", "lightgbm", "mlflow", "sklearn", "fastapi")


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
