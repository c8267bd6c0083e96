"""Helpers of the extractor tests: writing an input, features apart from the file size, refusing a bad input."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from features.base import Extractor, FeatureError


def write(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` and return the path."""
    path.write_bytes(data)
    return path


def without_size(features: dict[str, float]) -> dict[str, float]:
    """The features apart from ``bytes`` (what compressing or re-encoding the same content changes)."""
    return {k: v for k, v in features.items() if k != "bytes"}


def assert_refused(extractor: Extractor, path: Path, make: Callable[[Path], object], problem: str) -> None:
    """``make`` puts a bad input at ``path``: extracting it raises a FeatureError matching ``problem`` that names ``path``."""
    make(path)
    with pytest.raises(FeatureError, match=problem) as caught:
        extractor.extract(path)
    assert caught.value.source == str(path) and str(path) in str(caught.value)
