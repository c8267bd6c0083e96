"""BLAST database features (sequences, residues, longest sequence) read from the database's own headers.

A database is named the way BLAST names it: by its prefix (``dbs/nt`` for
``dbs/nt.nin``, ``dbs/nt.nsq``, ...); a path to one of its index or alias files
is accepted too. Only headers are read, never the sequences:

- an index file (``.nin`` nucleotide, ``.pin`` protein) starts with big-endian
  int32 format version (4 or 5) and sequence type (0 nucleotide, 1 protein);
  version 5 adds an int32 volume number; then length-prefixed strings (title,
  the LMDB file name in version 5 only, date), the number of sequences (int32),
  the total residues (uint64, little-endian: NCBI's one exception) and the longest
  sequence (int32), as ``CSeqDBIdxFile`` in NCBI's ``seqdbfile.cpp`` reads them;
- an alias file (``.nal``/``.pal``, written by ``makeblastdb`` for multi-volume
  databases and by ``blastdb_aliastool``) lists volumes in ``DBLIST``, relative to
  the alias file; the features sum over them, and its ``NSEQ``/``LENGTH`` lines,
  when present (filtered aliases), replace the sums.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from features.base import CostClass, FeatureError

FEATURE_NAMES: tuple[str, ...] = ("sequences", "residues", "mean_length", "max_length", "volumes", "is_nucleotide")
_SUFFIXES = {".nal": True, ".nin": True, ".pal": False, ".pin": False}  # alias or index file -> is nucleotide
# aliases may name aliases; deeper is a loop
_MAX_ALIAS_DEPTH = 8
# of an alias file read (a real one lists volumes in a few hundred bytes)
_MAX_ALIAS_BYTES = 1 << 20


class _BadDb(Exception):
    """A problem with the database; :meth:`BlastDbExtractor.extract` names the database in a FeatureError."""


@dataclass(frozen=True)
class _Volumes:
    """Totals over one or more volumes of a database."""

    sequences: int
    residues: int
    max_length: int
    volumes: int
    nucleotide: bool


class BlastDbExtractor:
    """Features of a BLAST database (version 4 or 5, single or multi-volume) from its index and alias headers."""

    name: ClassVar[str] = "blastdb"
    feature_names: ClassVar[tuple[str, ...]] = FEATURE_NAMES
    cost = CostClass.METADATA

    def __init__(self, time_budget_s: float | None = None) -> None:
        """``time_budget_s`` is taken as every extractor takes it, and needs no check: a few kB of each regular file are
        read (an index's header, an alias file's first :data:`_MAX_ALIAS_BYTES`), whatever the database's size."""
        self.time_budget_s = time_budget_s

    def extract(self, value: str | Path) -> dict[str, float]:
        """Features of the database named by ``value`` (its prefix, or one of its .nin/.pin/.nal/.pal files)."""
        path = Path(value)
        try:
            db = _read(_header_file(path), depth=0)
        except _BadDb as exc:
            raise FeatureError(path, str(exc)) from None
        except OSError as exc:
            raise FeatureError(path, f"cannot read the database: {exc.strerror or exc}") from exc
        return {
            "sequences": float(db.sequences),
            "residues": float(db.residues),
            "mean_length": db.residues / db.sequences if db.sequences else 0.0,
            "max_length": float(db.max_length),
            "volumes": float(db.volumes),
            "is_nucleotide": float(db.nucleotide),
        }


def _header_file(path: Path) -> Path:
    """The alias or index file of the database ``path`` names; an alias file wins over an index."""
    if path.suffix in _SUFFIXES:
        if not path.is_file():
            raise _BadDb(f"no such file {path.name}")
        return path
    found = [f for f in (path.with_name(path.name + suffix) for suffix in _SUFFIXES) if f.is_file()]
    if not found:
        raise _BadDb("not a BLAST database: no .nal, .nin, .pal or .pin file with this prefix")
    if len({_SUFFIXES[f.suffix] for f in found}) > 1:
        raise _BadDb("a nucleotide and a protein database share this prefix; name its .nin or .pin file")
    return found[0]


def _read(path: Path, depth: int) -> _Volumes:
    """Totals of the database whose alias or index file is ``path``."""
    if path.suffix in (".nal", ".pal"):
        return _read_alias(path, depth)
    return _read_index(path)


def _read_index(path: Path) -> _Volumes:
    """Counts from one volume's index file header."""
    with path.open("rb") as fh:
        # the header is a few hundred bytes; the offset arrays follow
        data = fh.read(4096)
    try:
        version, seqtype = struct.unpack_from(">ii", data, 0)
        if version not in (4, 5):
            raise _BadDb(f"{path.name}: unknown BLAST database format version {version} (expected 4 or 5)")
        if seqtype not in (0, 1):
            raise _BadDb(f"{path.name}: unknown sequence type {seqtype} (expected 0 or 1)")
        # version 5 stores the volume number here
        offset = 12 if version == 5 else 8
        for _ in range(3 if version == 5 else 2):  # title, [LMDB file name,] date
            (length,) = struct.unpack_from(">i", data, offset)
            if not 0 <= length <= len(data):
                raise _BadDb(f"{path.name}: corrupt header (string of length {length})")
            offset += 4 + length
        (sequences,) = struct.unpack_from(">I", data, offset)
        (residues,) = struct.unpack_from("<Q", data, offset + 4)
        (max_length,) = struct.unpack_from(">I", data, offset + 12)
    except struct.error:
        raise _BadDb(f"{path.name}: truncated index file header") from None
    if seqtype != (path.suffix == ".pin"):
        raise _BadDb(f"{path.name}: sequence type {seqtype} does not match the file's suffix")
    if max_length > residues or (sequences == 0) != (residues == 0):
        raise _BadDb(
            f"{path.name}: inconsistent header ({sequences} sequences, {residues} residues, longest {max_length})"
        )
    return _Volumes(sequences, residues, max_length, 1, seqtype == 0)


def _read_alias(path: Path, depth: int) -> _Volumes:
    """Totals over the volumes an alias file lists, or its own NSEQ/LENGTH when it gives them."""
    if depth >= _MAX_ALIAS_DEPTH:
        raise _BadDb(f"{path.name}: aliases nested more than {_MAX_ALIAS_DEPTH} deep (a loop?)")
    try:
        with path.open("rb") as fh:
            lines = fh.read(_MAX_ALIAS_BYTES).decode().splitlines()
    except UnicodeDecodeError:
        raise _BadDb(f"{path.name}: binary data, not an alias file") from None
    keys = {parts[0]: parts[1:] for parts in (line.split() for line in lines) if parts and not parts[0].startswith("#")}
    if not keys.get("DBLIST"):
        raise _BadDb(f"{path.name}: alias file without a DBLIST line")
    ext = path.suffix[:2] + "in"
    parts = []
    for name in keys["DBLIST"]:
        volume = path.parent / name.strip('"')
        alias = volume.with_name(volume.name + path.suffix)
        index = volume.with_name(volume.name + ext)
        if alias.is_file() and alias != path:
            parts.append(_read(alias, depth + 1))
        elif index.is_file():
            parts.append(_read_index(index))
        else:
            raise _BadDb(f"{path.name}: volume {name} has no {path.suffix} or {ext} file")
    sequences, residues = sum(p.sequences for p in parts), sum(p.residues for p in parts)
    try:
        sequences = int(keys.get("NSEQ", [sequences])[0])
        residues = int(keys.get("LENGTH", [residues])[0])
    except ValueError:
        raise _BadDb(f"{path.name}: NSEQ and LENGTH must be integers") from None
    return _Volumes(
        sequences, residues, max(p.max_length for p in parts), sum(p.volumes for p in parts), parts[0].nucleotide
    )
