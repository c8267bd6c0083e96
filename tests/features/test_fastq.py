"""The FASTQ extractor: exact counts against a naive parser and seqkit, gzip, CRLF, chunk boundaries, bad input."""

from __future__ import annotations

import gzip
import subprocess
from pathlib import Path

import numpy as np
import pytest

from data.datagen import write_fasta, write_fastq
from features import fastq, get_extractor
from features.base import CostClass
from features.fastq import FastqExtractor
from tests.features.kit import assert_refused, without_size, write
from tests.required import required_tools

# r1: 8 bases (G+C 4 of A+C+G+T 7, one N), qualities I=40 x8; r2: 4 bases GGCC, qualities '!'=0 x4.
HAND = b"@r1 first\nACGTNGCA\n+\nIIIIIIII\n@r2\nGGCC\n+r2\n!!!!\n"


def reference(text: bytes) -> dict[str, float]:
    """A slow, obviously correct parser to check the chunked scanner against."""
    lines = text.replace(b"\r", b"").split(b"\n")
    reads, quals = lines[1::4][: len(lines) // 4], lines[3::4][: len(lines) // 4]
    lengths = np.array([len(r) for r in reads])
    joined = b"".join(reads).upper()
    gc = joined.count(b"G") + joined.count(b"C")
    return {
        "reads": float(len(reads)),
        "bases": float(lengths.sum()),
        "mean_length": float(lengths.mean()),
        "min_length": float(lengths.min()),
        "max_length": float(lengths.max()),
        "std_length": float(lengths.std()),
        "gc_fraction": gc / (gc + joined.count(b"A") + joined.count(b"T")),
        "mean_quality": sum(sum(q) - 33 * len(q) for q in quals) / lengths.sum(),
    }


def test_hand_written_file(tmp_path: Path):
    path = write(tmp_path / "hand.fq", HAND)
    features = FastqExtractor().extract(path)
    assert tuple(features) == FastqExtractor.feature_names
    assert features == pytest.approx(
        {
            "bytes": float(len(HAND)),
            "reads": 2.0,
            "bases": 12.0,
            "mean_length": 6.0,
            "min_length": 4.0,
            "max_length": 8.0,
            "std_length": 2.0,
            "gc_fraction": 8 / 11,
            "mean_quality": 320 / 12,
        }
    )
    assert FastqExtractor.cost is CostClass.FULL_SCAN
    assert isinstance(get_extractor("fastq"), FastqExtractor), "registered by entry point"


def test_generated_reads_gzip_crlf_and_chunk_boundaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    reference_fa = write_fasta(tmp_path / "ref.fa", 5, 3000, seed=1, gc=0.4)
    path = write_fastq(tmp_path / "reads.fq", reference_fa, 3000, 75, error_rate=0.02, seed=2)
    text = path.read_bytes()
    expected = reference(text)
    assert without_size(FastqExtractor().extract(path)) == pytest.approx(expected)
    packed = write(tmp_path / "reads.fq.gz", gzip.compress(text))
    crlf = write(tmp_path / "crlf.fq", text.replace(b"\n", b"\r\n"))
    no_final_newline = write(tmp_path / "open.fq", text.rstrip(b"\n"))
    monkeypatch.setattr(fastq, "_CHUNK_BYTES", 4099)  # records cut everywhere across chunks
    for other in (path, packed, crlf, no_final_newline):
        assert without_size(FastqExtractor().extract(other)) == pytest.approx(expected), other.name


@pytest.mark.tools
def test_counts_agree_with_seqkit(tmp_path: Path):
    required_tools("seqkit")
    reference_fa = write_fasta(tmp_path / "ref.fa", 3, 5000, seed=3)
    path = write_fastq(tmp_path / "r.fq", reference_fa, 2000, 120, seed=4, gzip_output=True)
    out = subprocess.run(["seqkit", "stats", "-a", "-T", str(path)], capture_output=True, text=True, check=True).stdout
    row = dict(zip(*(line.split("\t") for line in out.splitlines())))
    features = FastqExtractor().extract(path)
    assert (features["reads"], features["bases"], features["min_length"], features["max_length"]) == (
        float(row["num_seqs"]),
        float(row["sum_len"]),
        float(row["min_len"]),
        float(row["max_len"]),
    )


def _truncated_gzip(path: Path) -> None:
    path.write_bytes(gzip.compress(HAND * 500)[:-30])


MALFORMED = {
    "missing": (lambda p: None, "no such file"),
    "empty": (lambda p: p.write_bytes(b""), "empty"),
    "blank only": (lambda p: p.write_bytes(b"\n \n"), "blank space only"),
    "binary junk": (lambda p: p.write_bytes(bytes(range(256)) * 10), "binary"),
    "NUL after the start": (lambda p: p.write_bytes(HAND * 5000 + b"\0" + HAND), "NUL"),
    "truncated gzip": (_truncated_gzip, "gzip"),
    "fasta, not fastq": (lambda p: p.write_bytes(b">s1\nACGT\n"), "first non-blank character is '>'"),
    "last record cut": (lambda p: p.write_bytes(HAND + b"@r3\nACGT\n"), "truncated: the last record has 2 of 4 lines"),
    "quality shorter": (
        lambda p: p.write_bytes(HAND + b"@r3\nACGT\n+\nII\n"),
        "record 3: sequence and quality lines differ",
    ),
    "no separator": (lambda p: p.write_bytes(HAND + b"@r3\nACGT\n-\nIIII\n"), "record 3: expected a separator"),
    "multi-line fastq": (lambda p: p.write_bytes(b"@r1\nACGT\nACGT\n+\nIIIIIIII\n"), "record 1: expected a separator"),
    "header without @": (lambda p: p.write_bytes(HAND + b"r3\nACGT\n+\nIIII\n"), "record 3: expected a header"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_input_raises_feature_error_naming_the_file(tmp_path: Path, case: str):
    assert_refused(FastqExtractor(), tmp_path / "input.fq", *MALFORMED[case])
