"""Extractor registry: built-ins and third-party extractors found through entry points.

Third-party packages add extractors by declaring an entry point in the group
``predictor.features`` whose value is an extractor class.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import entry_points
from typing import Any

from features.base import Extractor

ENTRY_POINT_GROUP = "predictor.features"


@cache
def _extractor_classes() -> dict[str, type]:
    found: dict[str, type] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found[ep.name] = ep.load()
    return found


def available_extractors() -> list[str]:
    """Names of every registered extractor, sorted."""
    return sorted(_extractor_classes())


def get_extractor(name: str, **options: Any) -> Extractor:
    """Build the extractor registered under ``name`` with keyword ``options``."""
    classes = _extractor_classes()
    if name not in classes:
        raise KeyError(f"unknown feature extractor {name!r}; known: {', '.join(sorted(classes)) or 'none'}")
    return classes[name](**options)
