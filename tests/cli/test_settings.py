"""The registry of which process reads which settings (cli/settings.py): every settings class of the project is in it,
its commands are real, and no environment variable is read by two classes."""

from __future__ import annotations

import ast
from pathlib import Path

import typer.main

from cli.app import app
from cli.settings import EVERY_COMMAND, GROUPS, env_names, reads
from predictor.settings import Settings
from serving.settings import ApiSettings

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("predictor", "features", "models", "data", "training", "scheduler", "slurm", "simulator", "serving", "cli")


def settings_classes(root: Path = ROOT) -> set[str]:
    """Every class of the project's packages that derives from pydantic-settings' ``BaseSettings``, directly or through
    another such class, as ``module.Class`` (read from the source: importing every module would load the project)."""
    classes = []  # (module.Class, its name, the names of its bases)
    for package in PACKAGES:
        for path in (root / package).rglob("*.py"):
            module = ".".join(path.relative_to(root).with_suffix("").parts)
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ClassDef):
                    bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
                    classes.append((f"{module}.{node.name}", node.name, bases))
    names, found = {"BaseSettings"}, set()
    while grown := [(full, name) for full, name, bases in classes if bases & names and full not in found]:
        found |= {full for full, _ in grown}
        names |= {name for _, name in grown}
    return found


def test_every_settings_class_of_the_project_is_in_the_registry() -> None:
    registered = {f"{g.settings.__module__}.{g.settings.__name__}" for g in GROUPS}
    assert settings_classes() == registered


def test_the_scan_finds_a_settings_class_left_out_of_the_registry(tmp_path: Path) -> None:
    """The check above bites: a new class deriving from BaseSettings is found and is not registered."""
    (tmp_path / "predictor").mkdir()
    (tmp_path / "predictor" / "extra.py").write_text(
        "from pydantic_settings import BaseSettings\n\nclass ExtraSettings(BaseSettings):\n    knob: int = 1\n"
    )
    assert settings_classes(tmp_path) == {"predictor.extra.ExtraSettings"}


def test_the_registry_names_real_commands() -> None:
    command = typer.main.get_command(app)
    for group in GROUPS:
        for name in group.commands:
            if name == EVERY_COMMAND:
                continue
            words = name.split()
            assert words[0] == "predictor", name
            found = command
            for word in words[1:]:
                found = found.commands.get(word) if hasattr(found, "commands") else None  # type: ignore[union-attr]
                assert found is not None, f"{name}: no such command"


def test_each_environment_variable_is_read_by_one_class_and_keeps_its_name() -> None:
    names = [n for g in GROUPS for n in env_names(g.settings)]
    assert len(names) == len(set(names))
    assert {"PREDICTOR_HOME", "PREDICTOR_API_PORT", "PREDICTOR_API_TOKEN", "PREDICTOR_SCHEDULER_PORT"} <= set(names)
    site_env = ROOT / "deploy" / "site.env"
    used = {line.split("=", 1)[0] for line in site_env.read_text().splitlines() if line.startswith("PREDICTOR_")}
    assert used <= set(names), used - set(names)


def test_a_command_reads_the_core_and_its_components() -> None:
    assert reads("predictor serve")[:2] == [Settings, ApiSettings]
    assert reads("predictor queue") == [Settings]
