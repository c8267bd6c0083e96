"""Resolve input paths someone else gave (an API client, a Slurm job's words) only under the configured data roots, and
keep the roots' absolute paths out of answers.

Paths are relative to a data root (an absolute path is accepted when it lies under one), and name regular files only
(never a FIFO, a device or a folder, which would block or never end a read). A root is named in answers by its folder
name (``data``, ``inputs``), never by where it sits on the server.
"""

from __future__ import annotations

from glob import escape as glob_escape
from pathlib import Path
from typing import Any

from predictor.catalog import Algorithm

# of a client's path, echoed in an answer
SHOWN_CHARS = 120


class PathRefused(ValueError):
    """A client-named input the service will not read, with the HTTP status that earns and the detail."""

    status = 422

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class PathNotAllowed(PathRefused):
    """A path leading outside every data root (absolute, ``..`` or a symlink out): forbidden."""

    status = 403


class PathNotFound(PathRefused):
    """A path under a data root where there is no file (nor database prefix), or a name the file system refuses."""


def root_names(roots: list[Path]) -> dict[Path, str]:
    """Each root's real path -> the name answers use for it: its folder name (``#2``, ``#3`` ... for repeats)."""
    names: dict[Path, str] = {}
    for root in roots:
        real = root.resolve()
        base = real.name or "/"
        taken = sum(1 for name in names.values() if name.split("#")[0] == base)
        names.setdefault(real, base if not taken else f"{base}#{taken + 1}")
    return names


def without_roots(text: str, roots: list[Path]) -> str:
    """``text`` with every data root's absolute path replaced by the root's name (messages naming resolved files)."""
    for real, name in sorted(root_names(roots).items(), key=lambda item: -len(str(item[0]))):
        text = text.replace(str(real), name)
    return text


def resolve_under_roots(value: Any, roots: list[Path], max_bytes: int | None = None) -> Path:
    """Return the real path of ``value`` if it lies under one of ``roots``; relative paths are tried against each root.

    A value may name a file, or a database by its prefix (``makeblastdb -out nt`` writes
    ``nt.nal``, ``nt.nin``, ...; ``bwa index`` writes ``ref.fa.bwt``, ...): then the files
    ``<prefix>.*`` must exist, as real files, in the same directory under the root.
    PathRefused (422) for a value that is no path, or whose file (or a database's member) is over ``max_bytes``,
    PathNotFound (422) for nothing there under a root, PathNotAllowed (403) for a path leading outside every root.
    """
    if not isinstance(value, str) or not value or "\x00" in value:
        raise PathRefused(f"input path must be a non-empty text path relative to a data root, got {_shown(value)}")
    names = ", ".join(root_names(roots).values())
    inside = False
    for root in roots:
        real_root = root.resolve()
        real = (real_root / value).resolve()  # an absolute value replaces the root
        if not real.is_relative_to(real_root):
            continue
        inside = True
        try:
            members = _prefix_members(real)
            if any(not m.resolve().is_relative_to(real_root) for m in members):
                raise PathNotAllowed(
                    f"database prefix {_shown(value)} has files leading outside the data roots ({names})"
                )
            if real.is_file() or (members and all(m.is_file() for m in members)):
                if max_bytes is not None:
                    _check_size(value, [real] if real.is_file() else members, max_bytes)
                return real
        # e.g. a name over the file system's 255 bytes
        except OSError as exc:
            raise PathNotFound(
                f"input path {_shown(value)} cannot be looked up under the data roots: {exc.strerror}"
            ) from None
    if inside:
        raise PathNotFound(f"no file (nor database prefix) {_shown(value)} under the data roots ({names})")
    raise PathNotAllowed(
        f"input path {_shown(value)} leads outside the data roots ({names}); name files relative to a root"
    )


def _check_size(value: Any, files: list[Path], max_bytes: int) -> None:
    """PathRefused when one of ``files`` (what ``value`` names) is over ``max_bytes``."""
    for path in files:
        size = path.stat().st_size
        if size > max_bytes:
            raise PathRefused(
                f"input {_shown(value)} is {size:,} bytes, over the {max_bytes:,} bytes read of one input"
            )


def _shown(value: Any) -> str:
    """A client's value as echoed in an answer: repr, bounded."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}... ({len(text)} characters)"


def _prefix_members(path: Path) -> list[Path]:
    """The files ``<path>.*`` beside ``path``: the members of a database named by its prefix."""
    return list(path.parent.glob(f"{glob_escape(path.name)}.*")) if path.parent.is_dir() else []


def resolve_file_params(algorithm: Algorithm, params: dict[str, Any], roots: list[Path]) -> dict[str, Any]:
    """Copy of ``params`` with every file parameter replaced by its resolved, allowed path."""
    resolved = dict(params)
    for name, spec in algorithm.parameters.items():
        if spec.type == "file" and name in params:
            resolved[name] = str(resolve_under_roots(params[name], roots))
    return resolved
