"""The API's bearer token when ``PREDICTOR_API_TOKEN`` is unset: generated once, kept under the home, owner-only.

``predictor serve`` creates it on its first start (so writes work out of the box) and prints it that
once; settings read it back on every later start, and ``PREDICTOR_API_TOKEN`` always wins over it.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

TOKEN_FILE = "api-token"


def token_path(home: Path) -> Path:
    """Where the generated token of the service homed at ``home`` is kept."""
    return home.expanduser() / TOKEN_FILE


def read_token(home: Path) -> str | None:
    """The token kept under ``home``, or None when none was generated yet."""
    try:
        token = token_path(home).read_text().strip()
    except FileNotFoundError:
        return None
    return token or None


def ensure_token(home: Path) -> tuple[str, bool]:
    """The token kept under ``home``, generated now (mode 0600) if there is none; and whether it was generated now."""
    path = token_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    try:
        # never readable by others, not even briefly
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        existing = read_token(home)
        if existing is None:
            raise ValueError(f"{path} is empty: delete it to generate a new token") from None
        return existing, False
    with os.fdopen(fd, "w") as out:
        out.write(token + "\n")
    return token, True
