"""What a model learns of a run, in a module of its own: the CLI names it in its options without loading pydantic and
the rest of :mod:`predictor.domain` (``predictor --version`` starts faster for it)."""

from __future__ import annotations

from enum import Enum


class Target(str, Enum):
    """What a model learns of a run: its wall seconds, or its peak resident memory in bytes."""

    TIME = "time"
    MEMORY = "memory"
