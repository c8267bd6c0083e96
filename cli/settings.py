"""Which process reads which settings: one settings class per component, and the commands that build each.

Every command reads the core's :class:`~predictor.settings.Settings` (the home, the store, the registry, the catalog);
each component keeps its knobs in a class beside it, read from the environment names they always had
(``PREDICTOR_API_PORT`` is :attr:`ApiSettings.port <serving.settings.ApiSettings.port>`); training's classes extend the
core's, since its functions read both together. ``docs/site.md`` documents
them grouped the same way, checked by docs/hooks/settings_table.py, and tests/cli/test_settings.py fails when a settings
class of the project is missing here. ``cli.app`` does not import this module: each command imports the classes it
builds when it runs (``predictor --help`` stays fast).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic_settings import BaseSettings

from predictor.settings import Settings
from scheduler.settings import ProbeSettings, SchedulerSettings
from serving.settings import ApiSettings
from slurm.settings import SlurmSettings
from training.settings import TrainingSettings, WorkerSettings


@dataclass(frozen=True)
class Group:
    """One component's settings class, the title of its group in docs/site.md, and the commands that read it."""

    settings: type[BaseSettings]
    title: str
    commands: tuple[str, ...]


EVERY_COMMAND = "every command"

GROUPS: tuple[Group, ...] = (
    Group(Settings, "Core", (EVERY_COMMAND,)),
    Group(
        ApiSettings,
        "API",
        ("predictor serve", "predictor scheduler", "predictor slurm install-plugin"),
    ),
    Group(SchedulerSettings, "Scheduler", ("predictor serve", "predictor scheduler")),
    Group(
        ProbeSettings,
        "Idle-time probing",
        ("predictor serve", "predictor scheduler", "predictor probe plan", "predictor probe run"),
    ),
    Group(
        SlurmSettings,
        "Slurm",
        (
            "predictor serve",
            "predictor scheduler",
            "predictor slurm follow",
            "predictor slurm bridge",
            "predictor ingest",
        ),
    ),
    Group(
        TrainingSettings,
        "Training and the champion guard",
        ("predictor train", "predictor report", "predictor worker", "predictor simulate", "predictor compare"),
    ),
    Group(WorkerSettings, "Retrain worker", ("predictor worker", "predictor simulate", "predictor compare")),
)
"""The settings groups in the order docs/site.md lists them. Training's classes extend the core's (its functions read
both together), so a group holds the fields its class adds: :func:`env_names`."""


def env_names(settings: type[BaseSettings]) -> list[str]:
    """The environment variables of the fields ``settings`` declares itself (not those of a settings class it extends),
    in declaration order."""
    prefix = settings.model_config.get("env_prefix", "")
    inherited = {name for base in settings.__mro__[1:] if issubclass(base, BaseSettings) for name in base.model_fields}
    return [f"{prefix}{name}".upper() for name in settings.model_fields if name not in inherited]


def reads(command: str) -> list[type[BaseSettings]]:
    """The settings classes ``command`` (``predictor serve``, ...) builds: the core's, then its components'."""
    return [g.settings for g in GROUPS if EVERY_COMMAND in g.commands or command in g.commands]
