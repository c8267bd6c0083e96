"""The FASTA generators: seeded, well-formed, with the lengths, composition and relatedness asked for."""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from predictor.datagen import AMINO_ACID_FREQUENCIES, write_family_fasta, write_fasta


def records(path: Path) -> list[tuple[str, list[bytes]]]:
    """(header, sequence lines) of every record, read naively."""
    out: list[tuple[str, list[bytes]]] = []
    for line in path.read_bytes().split(b"\n")[:-1]:
        if line.startswith(b">"):
            out.append((line[1:].decode(), []))
        else:
            out[-1][1].append(line)
    return out


def sequences(path: Path) -> list[bytes]:
    return [b"".join(lines) for _, lines in records(path)]


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path):
    a = write_fasta(tmp_path / "a.fa", 50, 300, 100, seed=7).read_bytes()
    assert write_fasta(tmp_path / "b.fa", 50, 300, 100, seed=7).read_bytes() == a
    assert write_fasta(tmp_path / "c.fa", 50, 300, 100, seed=8).read_bytes() != a


def test_well_formed_records_and_line_width(tmp_path: Path):
    path = write_fasta(tmp_path / "x.fa", 200, 150, 80, seed=1, line_width=25)
    found = records(path)
    assert [header for header, _ in found] == [f"seq{i}" for i in range(1, 201)]
    for _, lines in found:
        assert lines and all(len(line) == 25 for line in lines[:-1]) and 1 <= len(lines[-1]) <= 25
    assert set(b"".join(sequences(path))) <= set(b"ACGT")


def test_lengths_follow_mean_and_sd(tmp_path: Path):
    fixed = [len(s) for s in sequences(write_fasta(tmp_path / "f.fa", 100, 123, seed=2))]
    assert fixed == [123] * 100
    spread = np.array([len(s) for s in sequences(write_fasta(tmp_path / "s.fa", 5000, 500, 150, seed=2))])
    assert spread.min() >= 1
    assert spread.mean() == pytest.approx(500, rel=0.02)
    assert spread.std() == pytest.approx(150, rel=0.05)


def test_gc_content(tmp_path: Path):
    residues = b"".join(sequences(write_fasta(tmp_path / "gc.fa", 100, 2000, gc=0.3, seed=3)))
    counts = Counter(residues)
    assert (counts[ord("G")] + counts[ord("C")]) / len(residues) == pytest.approx(0.3, abs=0.01)


def test_protein_composition(tmp_path: Path):
    residues = b"".join(sequences(write_fasta(tmp_path / "p.fa", 100, 2000, alphabet="protein", seed=4)))
    counts = Counter(residues.decode())
    assert set(counts) == set(AMINO_ACID_FREQUENCIES)
    for letter in "LAW":
        expected = AMINO_ACID_FREQUENCIES[letter] / sum(AMINO_ACID_FREQUENCIES.values())
        assert counts[letter] / len(residues) == pytest.approx(expected, abs=0.005)


def test_gzip_output_holds_the_same_text(tmp_path: Path):
    plain = write_fasta(tmp_path / "p.fa", 40, 500, 50, seed=5)
    packed = write_fasta(tmp_path / "p.fa.gz", 40, 500, 50, seed=5, gzip_output=True)
    assert gzip.decompress(packed.read_bytes()) == plain.read_bytes()


def test_batches_join_seamlessly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    whole = write_fasta(tmp_path / "w.fa", 300, 400, 200, seed=6).read_bytes()
    monkeypatch.setattr("predictor.datagen._BATCH_RESIDUES", 1000)
    batched = write_fasta(tmp_path / "b.fa", 300, 400, 200, seed=6)
    assert [len(s) for s in sequences(batched)] == [len(s) for s in sequences(tmp_path / "w.fa")]
    assert len(batched.read_bytes()) == len(whole)


def test_family_members_differ_from_their_consensus_at_the_mutation_rate(tmp_path: Path):
    path = write_family_fasta(tmp_path / "fam.fa", 60, 400, 0.2, "protein", seed=9)
    members = np.array([np.frombuffer(s, np.uint8) for s in sequences(path)])
    assert members.shape == (60, 400)
    consensus = np.array([np.bincount(column).argmax() for column in members.T])
    assert (members != consensus).mean() == pytest.approx(0.2, abs=0.02)


def test_family_without_mutations_is_identical_dna(tmp_path: Path):
    found = set(sequences(write_family_fasta(tmp_path / "same.fa", 5, 90, 0.0, "dna", seed=1)))
    assert len(found) == 1 and set(found.pop()) <= set(b"ACGT")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_sequences": 0, "length_mean": 10},
        {"n_sequences": 1, "length_mean": 10, "length_sd": -1},
        {"n_sequences": 1, "length_mean": 10, "gc": 1.5},
        {"n_sequences": 1, "length_mean": 10, "alphabet": "rna"},
        {"n_sequences": 1, "length_mean": 10, "line_width": 0},
    ],
)
def test_invalid_arguments(tmp_path: Path, kwargs: dict):
    with pytest.raises(ValueError):
        write_fasta(tmp_path / "x.fa", **kwargs)
    assert not (tmp_path / "x.fa").exists()


def test_invalid_mutation_rate(tmp_path: Path):
    with pytest.raises(ValueError):
        write_family_fasta(tmp_path / "y.fa", 3, 10, 1.5)
