"""The job_submit.lua plugin shipped with the project, written out with a site's settings filled in."""

from __future__ import annotations

import os
import pwd
import re
from pathlib import Path

from predictor.atomic import write_text_atomically
from slurm.settings import PLUGIN_TOKEN

TEMPLATE = Path(__file__).with_name("job_submit.lua")
DEFAULT_CONF = Path("/etc/slurm/slurm.conf")


def render_plugin(
    api_url: str,
    timeout_s: float,
    raise_missing_limit: bool,
    raise_missing_memory: bool = False,
    token: str | None = None,
) -> str:
    """The plugin's text for an API at ``api_url``, asked with ``timeout_s`` seconds to answer; a job without a time
    limit gets the served one when ``raise_missing_limit``, one without a memory request the served one when
    ``raise_missing_memory``; ``token`` (``PREDICTOR_SLURM_PLUGIN_TOKEN``) sent with each job, the API answering from
    users' histories for it alone."""
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
        "@PLUGIN_TOKEN@": token or "",
    }
    if token is not None and not PLUGIN_TOKEN.fullmatch(token):
        raise ValueError("the plugin token must be 16 or more letters, digits, '-', '_', '.' or '~'")
    for key, value in settings.items():
        text = text.replace(key, value)
    return text


def conf_path(slurm_conf: str | None = None) -> Path:
    """The cluster's ``slurm.conf``: ``slurm_conf``, else ``SLURM_CONF``, else /etc/slurm/slurm.conf."""
    return Path(slurm_conf or os.environ.get("SLURM_CONF") or DEFAULT_CONF)


def plugin_path(slurm_conf: str | None = None) -> Path:
    """Where slurmctld reads job_submit.lua: beside ``slurm.conf``."""
    return conf_path(slurm_conf).parent / "job_submit.lua"


def install_plugin(destination: Path, text: str, owner: str | None = None) -> None:
    """Write the plugin atomically (slurmctld may read it at any moment; it reloads a changed file by itself); given an
    ``owner`` (the plugin holds a token), readable by that user alone, else by all. OSError, KeyError (no such user)."""
    if owner is None:
        write_text_atomically(destination, text, mode=0o644)
        return
    account = pwd.getpwnam(owner)
    staged = destination.with_name(f".{destination.name}.staged")
    write_text_atomically(staged, text, mode=0o600)
    os.chown(staged, account.pw_uid, account.pw_gid)
    os.replace(staged, destination)


def slurm_user(conf: Path) -> str:
    """The user slurmctld runs as: ``SlurmUser`` in ``conf`` (``root`` when it names none, as Slurm's default)."""
    found = re.search(r"^\s*SlurmUser\s*=\s*(\S+)", conf.read_text(), re.MULTILINE | re.IGNORECASE)
    return found.group(1) if found else "root"
