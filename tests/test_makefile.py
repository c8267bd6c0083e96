"""What the README's two commands do, read from the Makefile as make would run it (``make -n``: nothing is run)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from predictor.settings import PROJECT_ROOT


def planned(target: str, venv: Path) -> list[str]:
    """The commands ``make TARGET`` would run in a checkout whose venv is ``venv`` (absent: a fresh clone)."""
    done = subprocess.run(
        ["make", "-n", "--no-print-directory", target, f"VENV={venv}"],
        cwd=PROJECT_ROOT,
        env={k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")},  # run by make test
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.splitlines()


def test_make_run_installs_what_serving_needs_and_serves_before_any_training(tmp_path: Path) -> None:
    """Issue 42: the first `make run` installed the test, docs and Ray extras, then trained 14 pairs twice before
    serving. Now it installs the package alone and serves at once, its worker training in the background."""
    venv = tmp_path / "venv"
    run = planned("run", venv)
    assert [line for line in run if "pip install" in line] == [
        f"{venv}/bin/pip install -q --upgrade pip",
        f"{venv}/bin/pip install -q -c constraints.txt -e .",
    ]
    assert not [line for line in run if "predictor train" in line]
    assert run[-1] == f"{venv}/bin/predictor serve --train"
    test = planned("test", venv)
    assert f"{venv}/bin/pip install -q -c constraints.txt -e '.[test,docs,ray]'" in test
    assert test.index(f"{venv}/bin/pip install -q -c constraints.txt -e .") < test.index(
        f"{venv}/bin/pip install -q -c constraints.txt -e '.[test,docs,ray]'"
    )  # one venv: the serving install, then the extras over it
