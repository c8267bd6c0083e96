"""The job_submit.lua plugin shipped with the project, written out with a site's settings filled in."""

from __future__ import annotations

import os
from pathlib import Path

from predictor.atomic import write_text_atomically

TEMPLATE = Path(__file__).with_name("job_submit.lua")
DEFAULT_CONF = Path("/etc/slurm/slurm.conf")


def render_plugin(api_url: str, timeout_s: float, raise_missing_limit: bool, raise_missing_memory: bool = False) -> str:
    """The plugin's text for an API at ``api_url``, asked with ``timeout_s`` seconds to answer; a job without a time
    limit gets the served one when ``raise_missing_limit``, one without a memory request the served one when
    ``raise_missing_memory``."""
    if not api_url.startswith(("http://", "https://")) or any(c in api_url for c in '"\\\n'):
        raise ValueError(f"the API URL must be http(s)://host:port, got {api_url!r}")
    if not 0 < timeout_s <= 10:
        raise ValueError(f"the timeout must be above 0 and at most 10 s (slurmctld waits for it), got {timeout_s}")
    text = TEMPLATE.read_text()
    settings = {
        "@API@": api_url.rstrip("/"),
        "@TIMEOUT_S@": f"{timeout_s:g}",
        "@RAISE_MISSING_LIMIT@": str(raise_missing_limit).lower(),
        "@RAISE_MISSING_MEMORY@": str(raise_missing_memory).lower(),
    }
    for key, value in settings.items():
        text = text.replace(key, value)
    return text


def plugin_path(slurm_conf: str | None = None) -> Path:
    """Where slurmctld reads job_submit.lua: beside ``slurm.conf`` (``SLURM_CONF``, else /etc/slurm/slurm.conf)."""
    conf = Path(slurm_conf or os.environ.get("SLURM_CONF") or DEFAULT_CONF)
    return conf.parent / "job_submit.lua"


def install_plugin(destination: Path, text: str) -> None:
    """Write the plugin atomically (slurmctld may read it at any moment; it reloads a changed file by itself)."""
    write_text_atomically(destination, text, mode=0o644)
