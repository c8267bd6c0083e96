"""Seeded generators of realistic FASTA inputs, for tests, benchmarks and parameter sweeps.

Everything is vectorised with numpy and written in batches of about 16 M residues
(a longer record is made whole), so a 1 GB file takes seconds and little memory
beyond one length per sequence. The same arguments always give the same bytes.
"""

from __future__ import annotations

import gzip
import itertools
from pathlib import Path
from typing import BinaryIO, Literal

import numpy as np

Alphabet = Literal["dna", "protein"]

# UniProtKB/Swiss-Prot background amino-acid composition (percent).
AMINO_ACID_FREQUENCIES: dict[str, float] = {
    "A": 8.25, "R": 5.53, "N": 4.06, "D": 5.45, "C": 1.37, "Q": 3.93, "E": 6.75,
    "G": 7.07, "H": 2.27, "I": 5.96, "L": 9.66, "K": 5.84, "M": 2.42, "F": 3.86,
    "P": 4.70, "S": 6.56, "T": 5.34, "W": 1.08, "Y": 2.92, "V": 6.87,
}  # fmt: skip

_BATCH_RESIDUES = 1 << 24  # residues generated per batch: bounds memory whatever the file size
_LUT_BITS = 16  # residues are drawn through a 2**16-entry table, i.e. to 1/65536 precision


def _residue_table(alphabet: Alphabet, gc: float) -> np.ndarray:
    """Lookup table mapping uniform 16-bit draws to residue bytes with the wanted frequencies."""
    if alphabet == "dna":
        if not 0.0 <= gc <= 1.0:
            raise ValueError(f"gc must be within [0, 1], got {gc}")
        letters, weights = b"ACGT", np.array([1 - gc, gc, gc, 1 - gc]) / 2
    elif alphabet == "protein":
        letters = "".join(AMINO_ACID_FREQUENCIES).encode()
        weights = np.array(list(AMINO_ACID_FREQUENCIES.values()))
        weights = weights / weights.sum()
    else:
        raise ValueError(f"alphabet must be 'dna' or 'protein', got {alphabet!r}")
    size = 1 << _LUT_BITS
    bounds = np.rint(np.cumsum(weights) * size).astype(np.int64)
    return np.repeat(np.frombuffer(letters, np.uint8), np.diff(bounds, prepend=0))


def _draw(rng: np.random.Generator, table: np.ndarray, n: int) -> np.ndarray:
    """``n`` residue bytes drawn independently through ``table``."""
    return table[rng.integers(0, 1 << _LUT_BITS, size=n, dtype=np.uint16)]


def _lengths(rng: np.random.Generator, n: int, mean: float, sd: float) -> np.ndarray:
    """Sequence lengths: lognormal with the given mean and standard deviation, rounded, at least 1."""
    if n < 1 or mean < 1 or sd < 0:
        raise ValueError(f"need n_sequences >= 1, length_mean >= 1, length_sd >= 0; got {n}, {mean}, {sd}")
    if sd == 0:
        return np.full(n, max(1, round(mean)), dtype=np.int64)
    sigma2 = np.log1p((sd / mean) ** 2)
    raw = rng.lognormal(np.log(mean) - sigma2 / 2, np.sqrt(sigma2), size=n)
    return np.maximum(1, np.rint(raw)).astype(np.int64)


def _format_records(residues: np.ndarray, lengths: np.ndarray, first_id: int, line_width: int) -> np.ndarray:
    """FASTA text of consecutive records ``>seq<id>`` whose sequences are ``residues`` split by ``lengths``."""
    n = len(lengths)
    headers = b"".join(b">seq%d\n" % i for i in range(first_id, first_id + n))
    header_lengths = len(">seq\n") + np.char.str_len(np.arange(first_id, first_id + n).astype(str))
    n_lines = -(-lengths // line_width)
    record_sizes = header_lengths + lengths + n_lines
    record_starts = np.concatenate(([0], np.cumsum(record_sizes)[:-1]))
    out = np.empty(int(record_sizes.sum()), dtype=np.uint8)
    is_residue = np.ones(len(out), dtype=bool)
    # Header bytes: each header's characters at its record's start.
    header_pos = np.arange(int(header_lengths.sum())) + np.repeat(
        record_starts - np.concatenate(([0], np.cumsum(header_lengths)[:-1])), header_lengths
    )
    # Newlines: after every full line and at each record's end.
    line_record = np.repeat(np.arange(n), n_lines)
    line_index = np.arange(len(line_record)) - np.repeat(np.cumsum(n_lines) - n_lines, n_lines)
    newline_pos = np.minimum(
        record_starts[line_record] + header_lengths[line_record] + (line_index + 1) * (line_width + 1) - 1,
        record_starts[line_record] + record_sizes[line_record] - 1,
    )
    is_residue[header_pos] = False
    is_residue[newline_pos] = False
    out[header_pos] = np.frombuffer(headers, np.uint8)
    out[newline_pos] = ord("\n")
    out[is_residue] = residues
    return out


def _batches(lengths: np.ndarray) -> list[tuple[int, int]]:
    """Split record indices into consecutive ranges of about ``_BATCH_RESIDUES`` residues each."""
    ends = np.searchsorted(np.cumsum(lengths), np.arange(_BATCH_RESIDUES, int(lengths.sum()), _BATCH_RESIDUES))
    bounds = sorted({0, len(lengths), *(int(e) + 1 for e in ends)})
    return list(itertools.pairwise(bounds))


def _open_output(path: Path, gzip_output: bool) -> BinaryIO:
    """The output stream: plain, or gzip at level 1 (fast; the content is what matters)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return gzip.open(path, "wb", compresslevel=1) if gzip_output else open(path, "wb")  # type: ignore[return-value]


def write_fasta(
    path: str | Path,
    n_sequences: int,
    length_mean: float,
    length_sd: float = 0,
    alphabet: Alphabet = "dna",
    gc: float = 0.5,
    seed: int = 0,
    line_width: int = 60,
    gzip_output: bool = False,
) -> Path:
    """Write independent random sequences (lognormal lengths, i.i.d. residues) to ``path``; returns it.

    ``gc`` is the G+C fraction of DNA; protein residues follow Swiss-Prot's amino-acid composition.
    """
    if line_width < 1:
        raise ValueError(f"line_width must be >= 1, got {line_width}")
    path = Path(path)
    rng = np.random.default_rng(seed)
    table = _residue_table(alphabet, gc)
    lengths = _lengths(rng, n_sequences, length_mean, length_sd)
    with _open_output(path, gzip_output) as out:
        for lo, hi in _batches(lengths):
            residues = _draw(rng, table, int(lengths[lo:hi].sum()))
            out.write(_format_records(residues, lengths[lo:hi], lo + 1, line_width))
    return path


def write_family_fasta(
    path: str | Path,
    n_sequences: int,
    length: int,
    mutation_rate: float,
    alphabet: Alphabet = "protein",
    seed: int = 0,
    line_width: int = 60,
) -> Path:
    """Write a family of related sequences: one random ancestor, each member with point substitutions.

    Every position of every member is substituted with probability ``mutation_rate``
    by a different residue drawn from the background composition, so alignment tools
    see the realistic, related input they are built for.
    """
    if not 0.0 <= mutation_rate <= 1.0:
        raise ValueError(f"mutation_rate must be within [0, 1], got {mutation_rate}")
    path = Path(path)
    rng = np.random.default_rng(seed)
    table = _residue_table(alphabet, 0.5)
    lengths = _lengths(rng, n_sequences, length, 0)
    ancestor = _draw(rng, table, int(lengths[0]))
    members = np.tile(ancestor, n_sequences)
    mutated = np.flatnonzero(rng.random(members.size) < mutation_rate)
    replacement = _draw(rng, table, mutated.size)
    clash = replacement == members[mutated]
    while clash.any():  # redraw substitutions that kept the original residue
        replacement[clash] = _draw(rng, table, int(clash.sum()))
        clash = replacement == members[mutated]
    members[mutated] = replacement
    with _open_output(path, False) as out:
        out.write(_format_records(members, lengths, 1, line_width))
    return path
