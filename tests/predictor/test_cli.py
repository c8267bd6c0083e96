"""The command line a new user meets first: its version, its help, the catalog listing and one clear line per bad plan."""

from __future__ import annotations

import pytest
import yaml

from cli.app import app
from predictor import __version__

MAFFT_JOB = {"algorithm": "mafft", "platforms": ["cpu1"], "files": {"input": "fam"}}
FAMILY = {"grid": {"n_sequences": [4], "length": [40], "mutation_rate": [0.2]}}
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


def test_models_list_on_a_fresh_home_says_there_are_none(runner):
    result = runner.invoke(app, ["models", "list"])
    assert result.exit_code == 0, result.output
    assert "no champions registered" in result.stderr


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
