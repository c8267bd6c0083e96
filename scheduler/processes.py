"""Process groups started in their own session: whether one still runs (a helper of whoever started it)."""

from __future__ import annotations

import os


def group_alive(pgid: int) -> bool:
    """Whether any process of the group ``pgid`` still runs (a group of another user's counts as running)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
