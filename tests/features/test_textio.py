"""The shared reading helpers: buffers sized to the input, plain and gzip input read the same."""

from __future__ import annotations

import gzip
from pathlib import Path

from features.fasta import FastaExtractor
from features.textio import read_buffer


def test_a_small_plain_input_gets_an_exact_buffer_and_a_larger_one_the_full_chunk() -> None:
    assert (
        len(read_buffer(1_847, compressed=False, most=1 << 23)) == 1_848
    )  # the whole file and one byte: EOF in one read
    assert len(read_buffer(100_000, compressed=False, most=1 << 23)) == 100_001
    assert len(read_buffer(200_000, compressed=False, most=1 << 23)) == 1 << 23
    assert len(read_buffer(1 << 30, compressed=False, most=1 << 23)) == 1 << 23
    assert len(read_buffer(1_847, compressed=True, most=1 << 23)) == 1 << 23  # a gzip's size says nothing of its text
    assert len(read_buffer(1_847, compressed=False, most=97)) == 97


def test_a_fasta_larger_than_the_smallest_buffer_reads_the_same_plain_and_gzipped(tmp_path: Path) -> None:
    records = "".join(
        f">s{i}\n{'ACGT' * (10 + i % 50)}\n" for i in range(2_000)
    )  # ~250 kB: read in one full chunk, the gzip too
    plain, packed = tmp_path / "a.fa", tmp_path / "a.fa.gz"
    plain.write_text(records)
    packed.write_bytes(gzip.compress(records.encode()))
    a, b = FastaExtractor().extract(plain), FastaExtractor().extract(packed)
    assert a["sequences"] == b["sequences"] == 2_000
    assert a["residues"] == b["residues"] == sum(4 * (10 + i % 50) for i in range(2_000))
