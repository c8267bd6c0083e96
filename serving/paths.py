"""Resolve client-given input paths only under the configured data roots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from predictor.catalog import Algorithm


class PathNotAllowed(ValueError):
    """A client named a file outside every data root (or through a symlink leading out)."""


def resolve_under_roots(value: Any, roots: list[Path]) -> Path:
    """Return the real path of ``value`` if it lies under one of ``roots``; relative paths are tried against each root."""
    if not isinstance(value, str) or not value or "\x00" in value:
        raise PathNotAllowed(f"input path must be a non-empty string, got {value!r}")
    for root in roots:
        real_root = root.resolve()
        real = (real_root / value).resolve()  # an absolute value replaces the root
        if real.is_relative_to(real_root) and real.is_file():
            return real
    raise PathNotAllowed(f"input path {value!r} is not a file under the service's data roots")


def resolve_file_params(algorithm: Algorithm, params: dict[str, Any], roots: list[Path]) -> dict[str, Any]:
    """Copy of ``params`` with every file parameter replaced by its resolved, allowed path."""
    resolved = dict(params)
    for name, spec in algorithm.parameters.items():
        if spec.type == "file" and name in params:
            resolved[name] = str(resolve_under_roots(params[name], roots))
    return resolved
