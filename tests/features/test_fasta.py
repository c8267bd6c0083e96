"""The FASTA extractor: exact counts, gzip and CRLF, chunk boundaries, sampling, seqkit agreement, bad input."""

from __future__ import annotations

import gzip
import math
import subprocess
from pathlib import Path

import numpy as np
import pytest

from data.datagen import write_fasta
from features import fasta
from features.base import CostClass, FeatureError
from features.fasta import FastaExtractor
from tests.features.kit import assert_refused, without_size, write
from tests.required import required_tools

# Three records: s1 has 10 + 3 = 13 residues (A3 C3 G3 T2 N2), s2 one T, s3 GGCC.
HAND = b">s1 first record\nACGTNACGTN\nACG\n>s2 short\nT\n>s3\nGGCC\n"
HAND_FEATURES = {
    "sequences": 3.0,
    "residues": 18.0,
    "mean_length": 6.0,
    "min_length": 1.0,
    "max_length": 13.0,
    "std_length": math.sqrt(((13 - 6) ** 2 + (1 - 6) ** 2 + (4 - 6) ** 2) / 3),  # 5.099
    "gc_fraction": 10 / 16,  # G+C = 6 + 4, A+C+G+T = 11 + 1 + 4; N is ignored
    "is_nucleotide": 1.0,
    "estimated": 0.0,
}


def counts(features: dict[str, float]) -> tuple[float, ...]:
    return features["sequences"], features["residues"], features["min_length"], features["max_length"]


def reference(text: bytes) -> dict[str, float]:
    """A slow, obviously correct line-by-line parser to check the chunked scanner against."""
    lengths: list[int] = []
    gc = acgtu = 0
    for line in text.replace(b"\r", b"").split(b"\n"):
        if line.startswith(b">"):
            lengths.append(0)
        elif lengths:
            lengths[-1] += len(line)
            upper = line.upper()
            gc += upper.count(b"G") + upper.count(b"C")
            acgtu += sum(upper.count(bytes([base])) for base in b"ACGTU")
    mean = sum(lengths) / len(lengths)
    return {
        "sequences": float(len(lengths)),
        "residues": float(sum(lengths)),
        "mean_length": mean,
        "min_length": float(min(lengths)),
        "max_length": float(max(lengths)),
        "std_length": float(np.std(lengths)),
        "gc_fraction": gc / acgtu,
    }


def test_hand_written_file(tmp_path: Path):
    path = write(tmp_path / "hand.fa", HAND)
    features = FastaExtractor().extract(path)
    assert features == pytest.approx({"bytes": float(len(HAND)), **HAND_FEATURES})
    assert tuple(features) == FastaExtractor.feature_names


def test_protein_is_not_nucleotide_and_has_no_gc(tmp_path: Path):
    path = write(tmp_path / "prot.fa", b">p1\nMKWVTFISLL\n>p2\nLLFA\n")  # half the letters are not nucleotide codes
    features = FastaExtractor().extract(path)
    assert features["is_nucleotide"] == 0.0
    assert features["gc_fraction"] == 0.0
    assert counts(features) == (2, 14, 4, 10)
    assert all(math.isfinite(v) for v in features.values())


def test_lowercase_and_iupac_codes_are_nucleotide(tmp_path: Path):
    path = write(tmp_path / "iupac.fa", b">x\nacgtRYKMSWBDHVNacgt\n>y\nggccnnnn\n")
    features = FastaExtractor().extract(path)
    assert features["is_nucleotide"] == 1.0
    assert features["gc_fraction"] == pytest.approx(8 / 12)  # G+C: 4 in x (ambiguity codes ignored), 4 in y


def test_crlf_equals_lf(tmp_path: Path):
    lf = FastaExtractor().extract(write(tmp_path / "lf.fa", HAND))
    crlf = FastaExtractor().extract(write(tmp_path / "crlf.fa", HAND.replace(b"\n", b"\r\n")))
    assert without_size(crlf) == pytest.approx(without_size(lf))


def test_gzip_is_detected_by_content_and_equals_plain(tmp_path: Path):
    plain = write_fasta(tmp_path / "plain.gz", 300, 500, 200, seed=4)  # a plain file with a misleading name
    packed = write_fasta(tmp_path / "packed.fa", 300, 500, 200, seed=4, gzip_output=True)
    assert packed.read_bytes()[:2] == b"\x1f\x8b"
    plain_features, packed_features = FastaExtractor().extract(plain), FastaExtractor().extract(packed)
    assert packed_features["bytes"] == packed.stat().st_size < plain_features["bytes"]
    assert without_size(packed_features) == without_size(plain_features)


def test_leading_and_trailing_blank_lines(tmp_path: Path):
    features = FastaExtractor().extract(write(tmp_path / "x.fa", b"\n\n  \n>a\nACGT\n\n>b\nGG\n\n"))
    assert counts(features) == (2, 6, 2, 4)


TRICKY = (
    b">first header with > inside and a long description "
    + b"x" * 300
    + b"\r\n"
    + b"ACGTACGTAC\r\nGGCC\r\n\r\n"
    + b">short\nN\n"
    + b">"
    + b"h" * 50
    + b"\n"
    + b"A" * 1000
    + b"\n"
    + b"acgtn\n" * 40
    + b">last without newline\nTTTT"
)


@pytest.mark.parametrize("chunk", [5, 16, 61, 64, 333, 4096])
def test_chunk_boundaries_do_not_change_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int):
    data = TRICKY + b"\n" + write_fasta(tmp_path / "gen.fa", 40, 200, 150, seed=chunk, line_width=37).read_bytes()
    path = write(tmp_path / "tricky.fa", data)
    monkeypatch.setattr(fasta, "_CHUNK_BYTES", chunk)
    features = FastaExtractor().extract(path)
    assert {k: features[k] for k in reference(data)} == pytest.approx(reference(data))


@pytest.mark.tools
def test_agrees_with_seqkit(tmp_path: Path):
    required_tools("seqkit")
    path = write_fasta(tmp_path / "gen.fa", 2000, 800, 400, gc=0.42, seed=11)
    table = subprocess.run(["seqkit", "stats", "-a", "-T", str(path)], check=True, capture_output=True, text=True)
    header, row = (line.split("\t") for line in table.stdout.strip().splitlines())
    seqkit = dict(zip(header, row, strict=True))
    features = FastaExtractor().extract(path)
    assert features["sequences"] == int(seqkit["num_seqs"])
    assert features["residues"] == int(seqkit["sum_len"])
    assert features["min_length"] == int(seqkit["min_len"])
    assert features["max_length"] == int(seqkit["max_len"])
    assert features["mean_length"] == pytest.approx(float(seqkit["avg_len"]), abs=0.05)
    assert 100 * features["gc_fraction"] == pytest.approx(float(seqkit["GC(%)"]), abs=0.005)
    assert seqkit["type"] == "DNA" and features["is_nucleotide"] == 1.0


@pytest.fixture(scope="module")
def multi_mb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ~6 MB nucleotide file."""
    return write_fasta(tmp_path_factory.mktemp("mb") / "mb.fa", 6000, 1000, 400, gc=0.6, seed=3)


def assert_close_to_full(sampled: dict[str, float], full: dict[str, float]) -> None:
    assert sampled["estimated"] == 1.0 and full["estimated"] == 0.0
    assert sampled["bytes"] == full["bytes"]
    for key in ("sequences", "residues", "mean_length", "std_length"):
        assert sampled[key] == pytest.approx(full[key], rel=0.1), key
    assert full["min_length"] <= sampled["min_length"] <= sampled["max_length"] <= full["max_length"]
    assert sampled["gc_fraction"] == pytest.approx(full["gc_fraction"], abs=0.01)
    assert sampled["is_nucleotide"] == full["is_nucleotide"]


def test_sampled_is_close_to_full_and_marked_estimated(multi_mb: Path):
    full = FastaExtractor().extract(multi_mb)
    sampled = FastaExtractor(mode="sampled", sample_blocks=16, block_bytes=64 << 10).extract(multi_mb)
    assert_close_to_full(sampled, full)
    assert FastaExtractor(mode="sampled").cost is CostClass.SAMPLED
    assert FastaExtractor().cost is CostClass.FULL_SCAN


def test_sampled_gzip_reads_a_prefix_and_scales_it(tmp_path: Path, multi_mb: Path):
    packed = tmp_path / "mb.fa.gz"
    packed.write_bytes(gzip.compress(multi_mb.read_bytes(), compresslevel=1))
    full = FastaExtractor().extract(packed)
    sampled = FastaExtractor(mode="sampled", sample_blocks=8, block_bytes=128 << 10).extract(packed)
    assert_close_to_full(sampled, full)


@pytest.mark.parametrize("compressed", [False, True])
def test_sampled_covering_the_whole_file_is_exact(tmp_path: Path, compressed: bool):
    path = write_fasta(tmp_path / "small.fa", 50, 300, 100, seed=5, gzip_output=compressed)
    sampled = FastaExtractor(mode="sampled", sample_blocks=4, block_bytes=1 << 16).extract(path)
    assert sampled == FastaExtractor().extract(path)
    assert sampled["estimated"] == 0.0


@pytest.mark.parametrize(
    ("tail", "problem"), [(b">cut\nACGTAC", "cut mid-record"), (b">cut here", "header but no sequence")]
)
def test_sampled_blocks_read_the_end_and_see_a_cut_file(tmp_path: Path, multi_mb: Path, tail: bytes, problem: str):
    cut = write(tmp_path / "cut.fa", multi_mb.read_bytes() + tail)
    with pytest.raises(FeatureError, match=problem):
        FastaExtractor(mode="sampled", sample_blocks=4, block_bytes=4096).extract(cut)


def test_sampled_stops_at_its_time_budget_with_an_estimate(multi_mb: Path):
    sampled = FastaExtractor(mode="sampled", sample_blocks=64, block_bytes=4096, time_budget_s=0).extract(multi_mb)
    assert sampled["estimated"] == 1.0
    assert sampled["sequences"] > 0 and sampled["is_nucleotide"] == 1.0


def test_full_scan_over_its_time_budget_is_an_error(multi_mb: Path):
    with pytest.raises(FeatureError, match="exceeded its time budget of 0 s") as caught:
        FastaExtractor(time_budget_s=0).extract(multi_mb)
    assert caught.value.source == str(multi_mb)
    assert FastaExtractor(time_budget_s=60).extract(multi_mb)["sequences"] == 6000


def test_long_sequences_spanning_chunks_are_measured_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(fasta, "_CHUNK_BYTES", 1000)
    path = write_fasta(tmp_path / "long.fa", 3, 20_000, 0, seed=1)
    features = FastaExtractor().extract(path)
    assert (features["min_length"], features["max_length"], features["std_length"]) == (20_000, 20_000, 0)


def test_sampled_records_longer_than_blocks_fall_back_to_the_mean(tmp_path: Path):
    path = write_fasta(tmp_path / "huge.fa", 4, 200_000, 0, seed=2)
    sampled = FastaExtractor(mode="sampled", sample_blocks=4, block_bytes=4096).extract(path)
    assert sampled["estimated"] == 1.0
    assert sampled["min_length"] == sampled["max_length"] == sampled["mean_length"] > 0
    assert sampled["std_length"] == 0.0


def _truncated_gzip(path: Path) -> None:
    whole = gzip.compress(HAND * 200)
    path.write_bytes(whole[: len(whole) // 2])


def _corrupt_gzip(path: Path) -> None:
    whole = bytearray(gzip.compress(HAND * 200))
    whole[20:40] = b"\xff" * 20
    path.write_bytes(bytes(whole))


MALFORMED = {
    "missing": (lambda p: None, "no such file"),
    "directory": (lambda p: p.mkdir(), "is a directory"),
    "empty": (lambda p: p.write_bytes(b""), "empty"),
    "empty gzip": (lambda p: p.write_bytes(gzip.compress(b"")), "empty"),
    "blank only": (lambda p: p.write_bytes(b"\n  \n\t\n"), "blank space only"),
    "not fasta": (lambda p: p.write_bytes(b"@read1\nACGT\n+\nIIII\n"), "first non-blank character is '@'"),
    "binary with NULs": (lambda p: p.write_bytes(bytes(range(256)) * 10), "binary"),
    "binary without NULs": (lambda p: p.write_bytes(b">x\n" + bytes(range(128, 256)) * 10), "binary"),
    "NUL after the start": (lambda p: p.write_bytes(HAND * 10_000 + b"\0\0\0" + HAND), "NUL"),
    "truncated gzip": (_truncated_gzip, "truncated gzip"),
    "a header and no sequence": (
        lambda p: p.write_bytes(b">query 1\n"),
        "the last record has a header but no sequence",
    ),
    "a record without sequence": (
        lambda p: p.write_bytes(HAND.replace(b"T\n>s3", b">s3")),
        "record 2 has a header but no sequence",
    ),
    "cut in a sequence line": (lambda p: p.write_bytes(HAND + b">s4\nACG"), "cut mid-record"),
    "cut in a header": (lambda p: p.write_bytes(HAND + b">s4 descr"), "the last record has a header but no sequence"),
    "cut, gzip": (lambda p: p.write_bytes(gzip.compress(HAND + b">s4\nAC")), "cut mid-record"),
    "corrupt gzip": (_corrupt_gzip, "gzip"),
}


@pytest.mark.parametrize("mode", ["full", "sampled"])
@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_input_raises_feature_error_naming_the_file(tmp_path: Path, case: str, mode: str):
    assert_refused(FastaExtractor(mode=mode), tmp_path / "input.fa", *MALFORMED[case])


@pytest.mark.parametrize(
    "options",
    [{"mode": "fast"}, {"sample_blocks": 0}, {"block_bytes": 10}, {"time_budget_s": -1}],
)
def test_invalid_options_are_rejected(options: dict):
    with pytest.raises(ValueError):
        FastaExtractor(**options)
