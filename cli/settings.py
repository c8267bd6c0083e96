"""Which process reads which settings: one settings class per component, and the commands that build each.

Every command reads the core's :class:`~predictor.settings.Settings` (the home, the store, the registry, the catalog);
each component keeps its knobs in a class beside it, read from the environment names they always had
(``PREDICTOR_API_PORT`` is :attr:`ApiSettings.port <serving.settings.ApiSettings.port>`). ``docs/site.md`` documents
them grouped the same way, checked by docs/hooks/settings_table.py, and tests/cli/test_settings.py fails when a settings
class of the project is missing here. ``cli.app`` does not import this module: each command imports the classes it
builds when it runs (``predictor --help`` stays fast).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic_settings import BaseSettings

from predictor.settings import Settings
from scheduler.settings import ProbeSettings, SchedulerSettings
from scheduler.slurm.settings import SlurmSettings
from serving.settings import ApiSettings


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
)
"""The settings groups in the order docs/site.md lists them."""


def env_names(settings: type[BaseSettings]) -> list[str]:
    """The environment variables ``settings`` reads, one per field, in declaration order."""
    prefix = settings.model_config.get("env_prefix", "")
    return [f"{prefix}{name}".upper() for name in settings.model_fields]


def reads(command: str) -> list[type[BaseSettings]]:
    """The settings classes ``command`` (``predictor serve``, ...) builds: the core's, then its components'."""
    return [g.settings for g in GROUPS if EVERY_COMMAND in g.commands or command in g.commands]
