"""The BLAST database extractor: headers of real makeblastdb output (v4, v5, multi-volume), hand-made headers, bad input."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from data.datagen import write_fasta
from features import get_extractor
from features.base import CostClass, FeatureError
from features.blastdb import BlastDbExtractor
from features.fasta import FastaExtractor
from tests.features.kit import assert_refused
from tests.required import required_tools


def index_header(version: int, seqtype: int, sequences: int, residues: int, longest: int) -> bytes:
    """An index file header laid out as NCBI's CSeqDBIdxFile reads it."""
    strings = [b"title", b"vol.pdb", b"Nov 22, 2026  4:29 AM"] if version == 5 else [b"title", b"Nov 22, 2026\0\0\0\0"]
    head = struct.pack(">ii", version, seqtype) + (struct.pack(">i", 0) if version == 5 else b"")
    for text in strings:
        head += struct.pack(">i", len(text)) + text
    return head + struct.pack(">I", sequences) + struct.pack("<Q", residues) + struct.pack(">I", longest) + b"\0" * 64


@pytest.fixture
def makeblastdb() -> str:
    required_tools("makeblastdb")
    return shutil.which("makeblastdb")


def build(fasta: Path, out: Path, dbtype: str, *extra: str) -> Path:
    subprocess.run(
        ["makeblastdb", "-in", str(fasta), "-dbtype", dbtype, "-out", str(out), *extra], check=True, capture_output=True
    )
    return out


@pytest.mark.tools
@pytest.mark.parametrize("version", ["4", "5"])
@pytest.mark.parametrize(("alphabet", "dbtype"), [("dna", "nucl"), ("protein", "prot")])
def test_real_database_matches_its_fasta(tmp_path: Path, makeblastdb: str, version: str, alphabet: str, dbtype: str):
    fasta = write_fasta(tmp_path / "in.fa", 120, 400, 150, alphabet=alphabet, seed=1)
    prefix = build(fasta, tmp_path / "db", dbtype, "-blastdb_version", version)
    truth = FastaExtractor().extract(fasta)
    features = BlastDbExtractor().extract(prefix)
    assert tuple(features) == BlastDbExtractor.feature_names
    assert features == {
        "sequences": 120.0,
        "residues": truth["residues"],
        "mean_length": pytest.approx(truth["mean_length"]),
        "max_length": truth["max_length"],
        "volumes": 1.0,
        "is_nucleotide": float(alphabet == "dna"),
    }
    index = tmp_path / ("db.nin" if alphabet == "dna" else "db.pin")
    assert BlastDbExtractor().extract(index) == features, "naming the index file works like the prefix"


@pytest.mark.tools
def test_multi_volume_database_sums_its_volumes(tmp_path: Path, makeblastdb: str):
    fasta = write_fasta(tmp_path / "big.fa", 3000, 1000, 300, seed=2)
    prefix = build(fasta, tmp_path / "big", "nucl", "-max_file_sz", "300000")
    assert (tmp_path / "big.nal").exists() and (tmp_path / "big.01.nin").exists()
    truth = FastaExtractor().extract(fasta)
    features = BlastDbExtractor().extract(prefix)
    assert features["volumes"] >= 2
    assert (features["sequences"], features["residues"], features["max_length"]) == (
        3000.0,
        truth["residues"],
        truth["max_length"],
    )


def test_hand_made_headers_and_alias(tmp_path: Path):
    (tmp_path / "a.pin").write_bytes(index_header(5, 1, 10, 1000, 250))
    (tmp_path / "b.pin").write_bytes(index_header(4, 1, 30, 2000, 400))
    assert BlastDbExtractor().extract(tmp_path / "a") == {
        "sequences": 10.0,
        "residues": 1000.0,
        "mean_length": 100.0,
        "max_length": 250.0,
        "volumes": 1.0,
        "is_nucleotide": 0.0,
    }
    (tmp_path / "both.pal").write_text("# alias\nTITLE both\nDBLIST a b\n")
    both = BlastDbExtractor().extract(tmp_path / "both")
    assert (both["sequences"], both["residues"], both["max_length"], both["volumes"]) == (40, 3000, 400, 2)
    (tmp_path / "filtered.pal").write_text("DBLIST both\nNSEQ 5\nLENGTH 600\n")
    filtered = BlastDbExtractor().extract(tmp_path / "filtered")
    assert (filtered["sequences"], filtered["residues"], filtered["volumes"]) == (5, 600, 2)
    assert BlastDbExtractor.cost is CostClass.METADATA
    assert isinstance(get_extractor("blastdb"), BlastDbExtractor), "registered by entry point"


def _write(name: str, data: bytes):
    return lambda d: (d / name).write_bytes(data)


MALFORMED = {
    "missing": (lambda d: None, "not a BLAST database"),
    "empty index": (_write("db.nin", b""), "truncated index file header"),
    "binary junk": (_write("db.nin", bytes(range(256)) * 4), "unknown BLAST database format version"),
    "truncated header": (_write("db.nin", index_header(5, 0, 10, 1000, 250)[:40]), "truncated"),
    "version 3": (
        _write("db.nin", index_header(5, 0, 10, 1000, 250).replace(b"\0\0\0\x05", b"\0\0\0\x03", 1)),
        "version 3",
    ),
    "wrong sequence type": (_write("db.nin", index_header(5, 1, 10, 1000, 250)), "does not match"),
    "inconsistent counts": (_write("db.nin", index_header(5, 0, 10, 100, 250)), "inconsistent header"),
    "fasta, not a database": (_write("db.nin", b">s1\nACGT\n"), "BLAST database"),
    "alias without DBLIST": (_write("db.nal", b"TITLE x\n"), "without a DBLIST"),
    "alias to a missing volume": (_write("db.nal", b"DBLIST gone\n"), "volume gone has no"),
    "alias loop": (
        lambda d: [(d / "db.nal").write_text("DBLIST other\n"), (d / "other.nal").write_text("DBLIST db\n")],
        "nested more than",
    ),
    "binary alias": (_write("db.nal", b"\xff\xfe\x00" * 30), "binary data"),
    "both alphabets": (
        lambda d: [
            (d / "db.nin").write_bytes(index_header(5, 0, 1, 1, 1)),
            (d / "db.pin").write_bytes(index_header(5, 1, 1, 1, 1)),
        ],
        "share this prefix",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_database_raises_feature_error_naming_it(tmp_path: Path, case: str):
    make, problem = MALFORMED[case]
    assert_refused(BlastDbExtractor(), tmp_path / "db", lambda prefix: make(prefix.parent), problem)


def test_named_index_file_that_does_not_exist(tmp_path: Path):
    with pytest.raises(FeatureError, match="no such file db.pin"):
        BlastDbExtractor().extract(tmp_path / "db.pin")
