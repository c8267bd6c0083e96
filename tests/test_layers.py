"""The layers of docs/architecture.md are a checked fact: ``lint-imports`` keeps every contract of pyproject.toml on
the tree, and breaks the right one, by name, in a copy of the tree given one import that crosses a boundary."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
CONTRACTS = {c["id"]: c["name"] for c in CONFIG["contracts"]}
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint(tree: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on ``tree``'s packages and contracts (``tree`` first on the path, so its copies are the ones read)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", str(tree / "pyproject.toml")],
        cwd=tree, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip


def broken(output: str) -> str:
    """The part of ``lint-imports``' report that lists the broken contracts ('' when none is)."""
    return output.partition("Broken contracts")[2]


def test_the_tree_keeps_every_contract() -> None:
    assert len(CONTRACTS) >= 2
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(CONTRACTS)} kept, 0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("predictor/catalog.py", "import serving", "layers"),  # the core reaching up to the API
        ("training/pipeline.py", "import cli.common", "layers"),  # a library reaching up to the command line
        ("models/zoo.py", "import features", "layers"),  # the two bottom packages are independent
        ("models/zoo.py", "import mlflow", "plain-libraries"),
        ("scheduler/runner.py", "import typer", "edges"),
        ("serving/app.py", "import predictor.store.tables", "store-tables"),
        ("training/memory.py", "import predictor.store.scheduler_tables", "scheduler-tables"),
    ],
)
def test_one_crossing_import_breaks_its_contract(tmp_path: Path, module: str, line: str, contract: str) -> None:
    for package in CONFIG["root_packages"]:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    with (tmp_path / module).open("a") as source:
        source.write(f"\n{line}  # the violation under test\n")
    result = lint(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 broken" in result.stdout
    report = broken(result.stdout)
    assert CONTRACTS[contract] in " ".join(report.split()), report  # the report wraps long names
    assert module.removesuffix(".py").replace("/", ".") in report
