"""Files written whole or not at all: a temporary file beside the target, then a rename over it.

A process killed while writing leaves the old file or the new one, never half of one: what state files (the
Slurm follower's cursor, the bridge's state), cached champions and the plugin slurmctld may read at any moment need.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def write_text_atomically(path: Path, text: str, mode: int | None = None) -> None:
    """Replace ``path`` with ``text`` in one step (its folder created; ``mode`` its permissions, if given)."""
    write_bytes_atomically(path, text.encode(), mode)


def write_bytes_atomically(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` in one step (its folder created; ``mode`` its permissions, if given)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_json_atomically(path: Path, content: Any) -> None:
    """:func:`write_text_atomically` of ``content`` as JSON."""
    write_text_atomically(path, json.dumps(content))


def read_state(path: Path, kind: Callable[..., T]) -> T:
    """The state saved in ``path`` as JSON fields of ``kind`` (a dataclass); a fresh ``kind()`` when the file is
    missing or unreadable (a state file not written yet)."""
    try:
        saved = json.loads(path.read_text())
        return kind(**saved) if isinstance(saved, dict) else kind()
    except (OSError, ValueError, TypeError):
        return kind()
