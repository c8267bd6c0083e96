"""`predictor profile` and `sweep` where a program is not installed: one line naming the Debian package, nothing stored."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from cli.app import app
from predictor.store import MeasurementStore

MAFFT_JOB = {"algorithm": "mafft", "platforms": ["cpu1"], "files": {"input": "fam"}}
FAMILY = {"grid": {"n_sequences": [4], "length": [40], "mutation_rate": [0.2]}}

BLASTN_PLAN = {
    "inputs": {
        "db": {"generator": "blastdb", "alphabet": "dna", "grid": {"n_sequences": [4]}, "options": {"length": 60}},
        "q": {"generator": "sampled", "alphabet": "dna", "source": "db", "grid": {"n_sequences": [2]}},
    },
    "jobs": [{"algorithm": "blastn", "platforms": ["cpu1"], "files": {"query": "q", "db": "db"}}],
}


@pytest.fixture
def only_taskset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH of one folder holding taskset alone (the platforms' launcher): no bioinformatics program is installed."""
    taskset = shutil.which("taskset")
    if taskset is None:
        pytest.skip("taskset (util-linux) is not installed")
    folder = tmp_path / "bin"
    folder.mkdir()
    os.symlink(taskset, folder / "taskset")
    monkeypatch.setenv("PATH", str(folder))
    return folder


def stored(home: Path) -> int:
    """How many runs the home's store holds."""
    store = MeasurementStore(f"sqlite:///{home / 'store.db'}")
    store.migrate()
    try:
        return len(store.frame())
    finally:
        store.dispose()


def test_profile_of_a_program_not_installed_is_one_line_and_stores_no_run(
    runner: CliRunner, only_taskset: Path, tmp_path: Path
) -> None:
    result = runner.invoke(
        app,
        [
            "profile",
            "--algorithm",
            "mafft",
            "--platform",
            "cpu1",
            "--param",
            "input=data/samples/family-40x300.fa",
            "--",
            "mafft",
            "--quiet",
            "data/samples/family-40x300.fa",
        ],
    )
    assert result.exit_code == 2, result.output
    assert (
        result.stderr
        == "error: mafft: program not found on PATH; install the Debian package mafft (`make tools` installs every program the walkthroughs run)\n"
    )
    assert stored(tmp_path / "home") == 0


def test_a_sweep_without_blast_is_one_line_before_any_input_is_made(
    runner: CliRunner, only_taskset: Path, tmp_path: Path
) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump(BLASTN_PLAN))
    result = runner.invoke(app, ["sweep", "--plan", str(plan), "--workdir", str(tmp_path / "inputs")])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(
        "error: makeblastdb: program not found on PATH; install the Debian package ncbi-blast+"
    )
    assert result.stderr.count("\n") == 1 and not (tmp_path / "inputs").exists()


def test_algorithms_lists_parameters_with_types_defaults_choices_and_platforms(runner):
    result = runner.invoke(app, ["algorithms"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "blastn: Nucleotide query" in out and "mafft" in out and "hmmsearch" in out
    assert "word_size" in out and "4..64" in out and "megablast, dc-megablast, blastn, blastn-short" in out
    assert "platforms: cpu1, cpu2" in out


def test_algorithms_of_an_unknown_one_is_one_error_line(runner):
    result = runner.invoke(app, ["algorithms", "--algorithm", "blastx"])
    assert result.exit_code == 2
    assert (
        result.stderr.startswith("error: unknown algorithm 'blastx'; known: blastn") and result.stderr.count("\n") == 1
    )


@pytest.mark.parametrize(
    ("plan", "problem"),
    [
        ("[1, 2", "plan.yaml:1:6: cannot read plan: expected ',' or ']'"),
        (
            {"inputs": {"fam": FAMILY}, "jobs": [{**MAFFT_JOB, "algorithm": "blastx"}]},
            "jobs.blastx: unknown algorithm 'blastx'",
        ),
        (
            {"inputs": {"fam": FAMILY}, "jobs": [{**MAFFT_JOB, "platforms": ["gpu9"]}]},
            "jobs.mafft: unknown platform 'gpu9'",
        ),
        (
            {"inputs": {"fam": FAMILY}, "jobs": [{**MAFFT_JOB, "grid": {"colour": [1]}}]},
            "jobs.mafft: unknown parameter(s) colour",
        ),
        (
            {"inputs": {"fam": FAMILY}, "jobs": [{**MAFFT_JOB, "files": {}}]},
            "jobs.mafft: required parameter(s) input set neither",
        ),
        ({"inputs": {"fam": {**FAMILY, "options": {"bogus": 1}}}, "jobs": [MAFFT_JOB]}, "inputs.fam: cannot generate"),
    ],
    ids=["yaml", "algorithm", "platform", "parameter", "required", "generator"],
)
def test_a_bad_sweep_plan_is_one_error_line_and_runs_nothing(runner, tmp_path, plan, problem):
    path = tmp_path / "plan.yaml"
    path.write_text(plan if isinstance(plan, str) else yaml.safe_dump(plan))
    result = runner.invoke(app, ["sweep", "--plan", str(path)])
    assert result.exit_code == 2, result.output
    assert problem in result.stderr and result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)
