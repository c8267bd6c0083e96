"""FASTQ features (reads, bases, read length statistics, GC, mean quality) in constant memory.

Records are the usual four lines (``@id``, sequence, ``+``, quality); multi-line
FASTQ is rejected. The file (plain or gzip) is read in large chunks and each chunk's
complete records are checked and counted with numpy: line starts and ends from the
newline positions, per-line base and quality sums with ``np.add.reduceat``, so
nothing loops per read in Python. ``gc_fraction`` is (G+C)/(A+C+G+T), any case;
``mean_quality`` is the mean Phred score over all bases, read as Phred+33.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from features.base import CostClass
from features.textio import BadInput, Deadline, Stream, feature_errors, fill, is_binary, open_input, read_buffer

FEATURE_NAMES: tuple[str, ...] = (
    "bytes",
    "reads",
    "bases",
    "mean_length",
    "min_length",
    "max_length",
    "std_length",
    "gc_fraction",
    "mean_quality",
)
_CHUNK_BYTES = 1 << 23
_NL, _CR, _AT, _PLUS = ord("\n"), ord("\r"), ord("@"), ord("+")
_PHRED_OFFSET = 33


@dataclass
class _FastqTally:
    """Totals over the records scanned so far."""

    reads: int = 0
    bases: int = 0
    length_squares: int = 0
    min_length: int | None = None
    max_length: int = 0
    gc: int = 0
    acgt: int = 0
    quality: int = 0

    def add(self, data: bytes) -> int:
        """Check and count the complete four-line records at the start of ``data``; returns the bytes used."""
        a = np.frombuffer(data, np.uint8)
        newlines = np.flatnonzero(a == _NL)
        lines = newlines.size - newlines.size % 4
        if not lines:
            return 0
        newlines = newlines[:lines]
        end = int(newlines[-1]) + 1
        a = a[:end]
        starts = np.concatenate(([0], newlines[:-1] + 1))
        cr = (newlines > starts) & (a[newlines - 1] == _CR)
        lengths = newlines - starts - cr
        bad = _first_bad_record(a, starts, lengths)
        if bad is not None:
            raise BadInput(f"record {self.reads + bad[0] + 1}: {bad[1]}")
        lower = a | 0x20
        gc = np.add.reduceat((lower == ord("g")) | (lower == ord("c")), starts, dtype=np.int64)[1::4]
        at = np.add.reduceat((lower == ord("a")) | (lower == ord("t")), starts, dtype=np.int64)[1::4]
        quality_sums = np.add.reduceat(a, starts, dtype=np.int64)[3::4]  # each with its line end
        reads = lengths[1::4].astype(np.int64)
        line_ends = reads.size * _NL + int(cr[3::4].sum()) * _CR
        self.quality += int(quality_sums.sum()) - line_ends - int(reads.sum()) * _PHRED_OFFSET
        self.gc += int(gc.sum())
        self.acgt += int(gc.sum() + at.sum())
        self.reads += int(reads.size)
        self.bases += int(reads.sum())
        self.length_squares += int(np.dot(reads, reads))
        low = int(reads.min())
        self.min_length = low if self.min_length is None else min(self.min_length, low)
        self.max_length = max(self.max_length, int(reads.max()))
        return end


def _first_bad_record(a: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[int, str] | None:
    """(index, problem) of the first malformed record among the lines, or None when all are well formed."""
    nonempty = lengths > 0
    bad_header = ~(nonempty[0::4] & (a[starts[0::4]] == _AT))
    bad_plus = ~(nonempty[2::4] & (a[starts[2::4]] == _PLUS))
    bad_quality = lengths[1::4] != lengths[3::4]
    problems = (
        (bad_header, "expected a header line starting with '@'"),
        (bad_plus, "expected a separator line starting with '+' (multi-line FASTQ is not supported)"),
        (bad_quality, "sequence and quality lines differ in length"),
    )
    found = [(int(np.argmax(bad)), problem) for bad, problem in problems if bad.any()]
    return min(found) if found else None


class FastqExtractor:
    """Features of a FASTQ file (plain or gzip): read counts, length statistics, GC content and quality."""

    name: ClassVar[str] = "fastq"
    feature_names: ClassVar[tuple[str, ...]] = FEATURE_NAMES
    cost = CostClass.FULL_SCAN

    def __init__(self, time_budget_s: float | None = None) -> None:
        """``time_budget_s``: seconds the scan may take (None: no limit); over it the input is refused."""
        if time_budget_s is not None and time_budget_s < 0:
            raise ValueError(f"time_budget_s must be >= 0, got {time_budget_s}")
        self.time_budget_s = time_budget_s

    def extract(self, value: str | Path) -> dict[str, float]:
        """Features of the FASTQ file at ``value``; raises :class:`FeatureError` naming it on bad input."""
        path = Path(value)
        with feature_errors(path), open_input(path) as (stream, _, compressed):
            size = path.stat().st_size
            deadline = Deadline(self.time_budget_s)
            tally = _scan(stream, read_buffer(size, compressed, _CHUNK_BYTES), deadline)
        mean = tally.bases / tally.reads
        variance = max(0.0, tally.length_squares / tally.reads - mean * mean)
        return {
            "bytes": float(size),
            "reads": float(tally.reads),
            "bases": float(tally.bases),
            "mean_length": mean,
            "min_length": float(tally.min_length or 0),
            "max_length": float(tally.max_length),
            "std_length": math.sqrt(variance),
            "gc_fraction": tally.gc / tally.acgt if tally.acgt else 0.0,
            "mean_quality": tally.quality / tally.bases if tally.bases else 0.0,
        }


def _scan(stream: Stream, buf: bytearray, deadline: Deadline) -> _FastqTally:
    """Tally every record of the stream, chunk by chunk through ``buf``, carrying an incomplete record to the next chunk."""
    tally = _FastqTally()
    n = fill(stream, buf)
    _check_start(bytes(buf[: min(n, 1 << 16)]))
    carry = bytes(buf[:n]).lstrip()
    while n:
        if buf.find(0, 0, n) != -1:
            raise BadInput("binary data (NUL bytes), not FASTQ text")
        carry = carry[tally.add(carry) :]
        deadline.check()
        n = fill(stream, buf)
        carry += buf[:n]
    rest = bytes(carry).rstrip()
    if rest:
        rest += b"\n"
        rest = rest[tally.add(rest) :]
        if rest:
            lines = rest.count(b"\n")
            raise BadInput(f"truncated: the last record has {lines} of 4 lines")
    if not tally.reads:
        raise BadInput("no FASTQ records")
    return tally


def _check_start(head: bytes) -> None:
    """Check the input looks like FASTQ text starting with an '@' header."""
    if not head:
        raise BadInput("empty input: no data to read")
    if is_binary(head):
        raise BadInput("binary data, not FASTQ text")
    body = head.lstrip()
    if not body:
        raise BadInput("no FASTQ records: the file starts with blank space only")
    if body[0] != _AT:
        raise BadInput(f"not FASTQ: first non-blank character is {chr(body[0])!r}, expected '@'")
