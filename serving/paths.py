"""Resolve client-given input paths only under the configured data roots."""

from __future__ import annotations

from glob import escape as glob_escape
from pathlib import Path
from typing import Any

from predictor.catalog import Algorithm


class PathNotAllowed(ValueError):
    """A client named a file outside every data root (or through a symlink leading out)."""


def resolve_under_roots(value: Any, roots: list[Path]) -> Path:
    """Return the real path of ``value`` if it lies under one of ``roots``; relative paths are tried against each root.

    A value may name a file, or a database by its prefix (``makeblastdb -out nt`` writes
    ``nt.nal``, ``nt.nin``, ...; ``bwa index`` writes ``ref.fa.bwt``, ...): then the files
    ``<prefix>.*`` must exist, as real files, in the same directory under the root.
    """
    if not isinstance(value, str) or not value or "\x00" in value:
        raise PathNotAllowed(f"input path must be a non-empty string, got {value!r}")
    for root in roots:
        real_root = root.resolve()
        real = (real_root / value).resolve()  # an absolute value replaces the root
        if real.is_relative_to(real_root) and (real.is_file() or _is_prefix(real, real_root)):
            return real
    raise PathNotAllowed(f"input path {value!r} is not a file under the service's data roots (nor a database prefix there)")


def _is_prefix(path: Path, root: Path) -> bool:
    """Whether ``path`` names files ``<path>.*``, each a file whose real path stays under ``root``."""
    members = list(path.parent.glob(f"{glob_escape(path.name)}.*")) if path.parent.is_dir() else []
    return bool(members) and all(m.is_file() and m.resolve().is_relative_to(root) for m in members)


def resolve_file_params(algorithm: Algorithm, params: dict[str, Any], roots: list[Path]) -> dict[str, Any]:
    """Copy of ``params`` with every file parameter replaced by its resolved, allowed path."""
    resolved = dict(params)
    for name, spec in algorithm.parameters.items():
        if spec.type == "file" and name in params:
            resolved[name] = str(resolve_under_roots(params[name], roots))
    return resolved
