"""FASTA features (sequence count, residues, length statistics, composition) in constant memory.

The scan never loops per character or per line in Python: it reads large chunks
and works on them with numpy (newline and header positions, per-record residue
counts from them, base counts), carrying only a few integers of state from one
chunk to the next. ``gc_fraction`` is (G+C)/(A+C+G+T+U), any case, and 0 for
protein. The alphabet is judged on the first 512 KiB of every chunk (a large,
cheap sample): nucleotide when IUPAC nucleotide codes make up at least 90% of
the letters there.

Modes:

- ``full`` reads every byte and returns exact values.
- ``sampled`` reads at most ``sample_blocks`` blocks of ``block_bytes``, so it takes
  about the same time whatever the file size. For a plain file the blocks are spread
  evenly over the file; counts are scaled by file size over bytes read and length
  statistics come from the records wholly inside a block. A gzip file cannot be
  read at an offset, so it reads the first blocks of the decompressed stream and
  scales by the fraction of the compressed file they used. ``mean_length`` is always
  residues over sequences; when no record fits in any block, min and max fall back to
  that mean and ``std_length`` to 0. An input the sample covers whole is scanned
  fully and reported exact (``estimated`` 0).

A record with a header but no sequence, and input that ends inside a line (a file
cut mid-record: complete FASTA ends with a newline), are errors wherever the read
sees them; a gzip file read only in part is not checked for its ending.
"""

from __future__ import annotations

import gzip
import math
import time
from dataclasses import dataclass
from io import FileIO
from pathlib import Path
from typing import ClassVar

import numpy as np

from features.base import CostClass
from features.textio import BadInput, Stream, feature_errors, fill, is_binary, open_input, read_buffer

# full-scan read size: amortises per-chunk calls; memory stays a few times this
_CHUNK_BYTES = 1 << 23
# prefix checked for binary content and the leading '>'
_SNIFF_BYTES = 1 << 16
# fraction of letters from the nucleotide alphabet that makes input nucleotide
_MIN_NUCLEOTIDE = 0.9
# the alphabet is judged on this prefix of every chunk: a large sample, a small cost
_CLASSIFY_BYTES = 1 << 19

_NL, _CR, _GT = ord("\n"), ord("\r"), ord(">")
_IUPAC = b"ACGTUNRYKMSWBDHV"
_LETTERS = bytes(range(ord("A"), ord("Z") + 1)) + bytes(range(ord("a"), ord("z") + 1))
_NON_LETTERS = bytes(b for b in range(256) if b not in _LETTERS)
# deleting these leaves non-nucleotide letters
_NOT_NON_NUCLEOTIDE = _NON_LETTERS + _IUPAC + _IUPAC.lower()


FEATURE_NAMES: tuple[str, ...] = (
    "bytes",
    "sequences",
    "residues",
    "mean_length",
    "min_length",
    "max_length",
    "std_length",
    "gc_fraction",
    "is_nucleotide",
    "estimated",
)


@dataclass
class _FastaTally:
    """Totals over scanned text: counts, composition, and length moments of complete records."""

    scanned: int = 0
    sequences: int = 0
    residues: int = 0
    letters: int = 0  # in the classified prefixes only
    non_nucleotide_letters: int = 0  # in the classified prefixes only
    gc: int = 0
    acgtu: int = 0
    complete: int = 0
    length_sum: int = 0
    length_squares: int = 0
    min_length: int | None = None
    max_length: int | None = None
    # the position, among complete records, of the first without sequence
    first_empty: int | None = None

    def add_lengths(self, lengths: np.ndarray) -> None:
        """Account for complete records of the given lengths (each within one chunk, so squares fit int64)."""
        if lengths.size == 0:
            return
        lengths = lengths.astype(np.int64, copy=False)
        if self.first_empty is None and (empty := np.flatnonzero(lengths == 0)).size:
            self.first_empty = self.complete + int(empty[0]) + 1
        self.complete += int(lengths.size)
        self.length_sum += int(lengths.sum())
        self.length_squares += int(np.dot(lengths, lengths))
        low, high = int(lengths.min()), int(lengths.max())
        self.min_length = low if self.min_length is None else min(self.min_length, low)
        self.max_length = high if self.max_length is None else max(self.max_length, high)

    def add_length(self, length: int) -> None:
        """Account for one complete record of any length (Python ints, so exact)."""
        if self.first_empty is None and length == 0:
            self.first_empty = self.complete + 1
        self.complete += 1
        self.length_sum += length
        self.length_squares += length * length
        self.min_length = length if self.min_length is None else min(self.min_length, length)
        self.max_length = length if self.max_length is None else max(self.max_length, length)


class _Scanner:
    """Feeds consecutive chunks of FASTA text into a :class:`_FastaTally`, carrying line and record state."""

    def __init__(self, tally: _FastaTally) -> None:
        self.tally = tally
        self._lower = np.empty(0, dtype=np.uint8)  # scratch space reused by every chunk
        self._hits = np.empty(0, dtype=bool)
        self.restart(at_line_start=True)

    def restart(self, at_line_start: bool) -> None:
        """Forget the open record: the next chunk does not follow the previous one."""
        self.at_line_start = at_line_start
        self.in_header = False
        # residues of the open record; None before its header
        self.open_length: int | None = None
        # the text so far ends inside a sequence line
        self.in_sequence_line = False

    def finish(self) -> None:
        """End of input: the open record is complete."""
        if self.open_length is not None:
            self.tally.add_length(self.open_length)
            self.open_length = None

    def feed(self, buf: bytearray, n: int) -> None:
        """Scan ``buf[:n]``; header bytes in ``buf`` are overwritten (with newlines) as a side effect."""
        if n == 0:
            return
        if buf.find(0, 0, n) != -1:
            raise BadInput("binary data (NUL bytes), not FASTA text")
        a = np.frombuffer(buf, np.uint8, n)
        newlines = np.flatnonzero(a == _NL)
        # before header bytes are blanked with newlines
        ends_line = bool(a[-1] == _NL)
        start = 0
        # a header line continued from the previous chunk
        if self.in_header:
            if newlines.size == 0:
                self.tally.scanned += n
                self.at_line_start = False
                return
            self.in_sequence_line = False
            start = int(newlines[0])
            a[:start] = _NL
            self.in_header = False
        line_starts = newlines + 1
        if line_starts.size and line_starts[-1] == n:
            line_starts = line_starts[:-1]
        if self.at_line_start:
            line_starts = np.concatenate(([0], line_starts))
        heads = line_starts[a[line_starts] == _GT]
        ends_at = np.searchsorted(newlines, heads)
        ends = np.append(newlines, n)[ends_at]
        self._blank_headers(a, heads, ends)

        region_starts = np.concatenate(([start], ends))
        region_ends = np.append(heads, n)
        sizes = region_ends - region_starts
        sizes -= np.searchsorted(newlines, region_ends) - np.searchsorted(newlines, region_starts)
        if buf.find(_CR, 0, n) != -1:
            returns = np.flatnonzero(a == _CR)
            sizes -= np.searchsorted(returns, region_ends) - np.searchsorted(returns, region_starts)

        self._count_composition(buf, a, n)
        tally = self.tally
        tally.scanned += n
        tally.sequences += int(heads.size)
        tally.residues += int(sizes.sum())
        if heads.size == 0:
            if self.open_length is not None:
                self.open_length += int(sizes[0])
        else:
            if self.open_length is not None:
                tally.add_length(self.open_length + int(sizes[0]))
            tally.add_lengths(sizes[1:-1])
            self.open_length = int(sizes[-1])
            self.in_header = bool(ends_at[-1] == newlines.size)
        self.at_line_start = ends_line
        self._note_last_line(buf, n)

    def _note_last_line(self, buf: bytearray, n: int) -> None:
        """Whether the text ends inside a sequence line (headers are blanked by now, so only residues count)."""
        last = buf.rfind(_NL, 0, n)
        if buf[last + 1 : n].strip():
            self.in_sequence_line = True
        elif last >= 0:
            self.in_sequence_line = False

    def check_ending(self) -> None:
        """At the end of the input: the last record has a sequence and its last line is complete."""
        if self.open_length == 0:
            raise BadInput("the last record has a header but no sequence (is the file cut short?)")
        if self.in_sequence_line:
            raise BadInput("the file ends inside a line, with no newline at its end: it looks cut mid-record")

    @staticmethod
    def _blank_headers(a: np.ndarray, heads: np.ndarray, ends: np.ndarray) -> None:
        """Overwrite header lines with newlines so composition counts see residues only."""
        widths = ends - heads
        total = int(widths.sum())
        if total:
            offsets = np.repeat(heads - (np.cumsum(widths) - widths), widths)
            a[offsets + np.arange(total)] = _NL

    def _count_composition(self, buf: bytearray, a: np.ndarray, n: int) -> None:
        """Count G+C and A+C+G+T+U in residues (headers blanked); classify letters on a prefix of the chunk."""
        if self._lower.size < n:
            self._lower, self._hits = np.empty(n, dtype=np.uint8), np.empty(n, dtype=bool)
        lower, hits = self._lower[:n], self._hits[:n]
        np.bitwise_or(a, 0x20, out=lower)
        counts = {}
        for base in b"acgtu":
            np.equal(lower, base, out=hits)
            counts[base] = int(np.count_nonzero(hits))
        tally = self.tally
        tally.gc += counts[ord("g")] + counts[ord("c")]
        tally.acgtu += sum(counts.values())
        prefix = bytes(buf[: min(n, _CLASSIFY_BYTES)])
        tally.letters += len(prefix.translate(None, _NON_LETTERS))
        tally.non_nucleotide_letters += len(prefix.translate(None, _NOT_NON_NUCLEOTIDE))


def _check_records(tally: _FastaTally, *, in_order: bool) -> None:
    """Every complete record has a sequence; ``in_order``: the records were read from the start, so say which."""
    if tally.first_empty is not None:
        which = f"record {tally.first_empty}" if in_order else "a record"
        raise BadInput(f"{which} has a header but no sequence")


def _features(size: int, tally: _FastaTally, scale: float | None) -> dict[str, float]:
    """Feature values from a tally; ``scale`` (total over scanned) marks an estimate from a sample."""
    factor = 1.0 if scale is None else scale
    sequences = tally.sequences * factor
    residues = tally.residues * factor
    mean = residues / sequences if sequences else 0.0
    if tally.min_length is not None and tally.max_length is not None:  # set with the first complete record
        c, s = tally.complete, tally.length_sum
        variance = max(0, c * tally.length_squares - s * s) / (c * c)
        low, high, std = float(tally.min_length), float(tally.max_length), math.sqrt(variance)
    else:
        low, high, std = mean, mean, 0.0
    nucleotide = tally.letters > 0 and tally.non_nucleotide_letters <= (1 - _MIN_NUCLEOTIDE) * tally.letters
    return {
        "bytes": float(size),
        "sequences": float(sequences),
        "residues": float(residues),
        "mean_length": mean,
        "min_length": low,
        "max_length": high,
        "std_length": std,
        "gc_fraction": tally.gc / tally.acgtu if nucleotide and tally.acgtu else 0.0,
        "is_nucleotide": 1.0 if nucleotide else 0.0,
        "estimated": 0.0 if scale is None else 1.0,
    }


def _check_start(buf: bytearray, n: int) -> int:
    """Check the input looks like FASTA text; returns the offset of its first '>'."""
    head = bytes(buf[: min(n, _SNIFF_BYTES)])
    if not head:
        raise BadInput("empty input: no data to read")
    if is_binary(head):
        raise BadInput("binary data, not FASTA text")
    body = head.lstrip()
    if not body:
        raise BadInput("no FASTA records: the file starts with blank space only")
    if body[0] != _GT:
        raise BadInput(f"not FASTA: first non-blank character is {chr(body[0])!r}, expected '>'")
    return len(head) - len(body)


def _read_start(stream: Stream, buf: bytearray) -> int:
    """Fill ``buf`` from the start of the input, check it is FASTA and blank the space before the first '>'."""
    n = fill(stream, buf)
    first = _check_start(buf, n)
    buf[:first] = b"\n" * first
    return n


class FastaExtractor:
    """Features of a FASTA file (plain or gzip): counts, length statistics, alphabet and GC content."""

    name: ClassVar[str] = "fasta"
    feature_names: ClassVar[tuple[str, ...]] = FEATURE_NAMES

    def __init__(
        self,
        mode: str = "full",
        sample_blocks: int = 64,
        block_bytes: int = 1 << 20,
        time_budget_s: float | None = None,
    ) -> None:
        if mode not in ("full", "sampled"):
            raise ValueError(f"mode must be 'full' or 'sampled', got {mode!r}")
        if sample_blocks < 1 or block_bytes < 4096:
            raise ValueError(f"need sample_blocks >= 1 and block_bytes >= 4096, got {sample_blocks}, {block_bytes}")
        if time_budget_s is not None and time_budget_s < 0:
            raise ValueError(f"time_budget_s must be >= 0, got {time_budget_s}")
        self.mode = mode
        self.sample_blocks = sample_blocks
        self.block_bytes = block_bytes
        self.time_budget_s = time_budget_s
        self.cost = CostClass.FULL_SCAN if mode == "full" else CostClass.SAMPLED

    def extract(self, value: str | Path) -> dict[str, float]:
        """Features of the FASTA file at ``value``; raises :class:`FeatureError` naming it on bad input."""
        path = Path(value)
        with feature_errors(path), open_input(path) as (stream, raw, compressed):
            size = path.stat().st_size
            if self.mode == "full":
                return self._full(stream, size, compressed, budgeted=True)
            if isinstance(stream, gzip.GzipFile):  # compressed
                return self._sampled_prefix(stream, raw, size)
            if size <= self.sample_blocks * self.block_bytes:
                return self._full(stream, size, compressed, budgeted=False)
            return self._sampled_blocks(stream, size)

    def _out_of_time(self, started: float) -> bool:
        return self.time_budget_s is not None and time.monotonic() - started > self.time_budget_s

    def _full(self, stream: Stream, size: int, compressed: bool, budgeted: bool) -> dict[str, float]:
        """Exact features from every byte of ``stream``; over the time budget (if ``budgeted``) is an error."""
        started = time.monotonic()
        tally = _FastaTally()
        scanner = _Scanner(tally)
        buf = read_buffer(size, compressed, _CHUNK_BYTES)
        n = _read_start(stream, buf)
        while n:
            scanner.feed(buf, n)
            if budgeted and self._out_of_time(started):
                raise BadInput(f"feature extraction exceeded its time budget of {self.time_budget_s} s")
            n = fill(stream, buf)
        scanner.check_ending()
        scanner.finish()
        _check_records(tally, in_order=True)
        return _features(size, tally, None)

    def _sampled_blocks(self, stream: Stream, size: int) -> dict[str, float]:
        """Estimated features from ``sample_blocks`` blocks spread evenly over a plain file."""
        started = time.monotonic()
        tally = _FastaTally()
        scanner = _Scanner(tally)
        buf = bytearray(self.block_bytes)
        last = size - self.block_bytes
        for rank, index in enumerate(_spread_order(self.sample_blocks)):
            if rank and self._out_of_time(started):
                break
            offset = round(index * last / max(1, self.sample_blocks - 1))
            stream.seek(offset)
            if offset == 0:
                n = _read_start(stream, buf)
                scanner.restart(at_line_start=True)
                scanner.feed(buf, n)
            # from the first line start on, so a cut header is not taken for residues
            else:
                n = fill(stream, buf)
                skip = buf.find(_NL, 0, n) + 1
                block = buf[skip:n]
                scanner.restart(at_line_start=skip > 0)
                scanner.feed(block, len(block))
            if offset == last:
                scanner.check_ending()
        _check_records(tally, in_order=False)
        return _features(size, tally, size / tally.scanned)

    def _sampled_prefix(self, stream: gzip.GzipFile, raw: FileIO, size: int) -> dict[str, float]:
        """Features from the first blocks of a gzip stream, scaled by the compressed bytes they used."""
        started = time.monotonic()
        tally = _FastaTally()
        scanner = _Scanner(tally)
        buf = bytearray(self.block_bytes)
        n = _read_start(stream, buf)
        blocks = 0
        while True:
            scanner.feed(buf, n)
            blocks += 1
            if n < len(buf) or not stream.peek(1):
                scanner.check_ending()
                scanner.finish()
                _check_records(tally, in_order=True)
                return _features(size, tally, None)
            if blocks == self.sample_blocks or self._out_of_time(started):
                _check_records(tally, in_order=True)
                return _features(size, tally, size / raw.tell())
            n = fill(stream, buf)


def _spread_order(n: int) -> list[int]:
    """Indices ``0..n-1`` in bit-reversed order, so any prefix of the order spans the whole range."""
    bits = max(1, (n - 1).bit_length())
    order = (int(format(i, f"0{bits}b")[::-1], 2) for i in range(1 << bits))
    return [i for i in order if i < n]
