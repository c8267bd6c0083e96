"""The input generators: seeded, well-formed, with the lengths, composition, relatedness and hits asked for."""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from data.datagen import (
    AMINO_ACID_FREQUENCIES,
    head_fasta,
    make_blast_db,
    write_family_fasta,
    write_fasta,
    write_fastq,
    write_profile,
    write_sampled_fasta,
)
from features.blastdb import BlastDbExtractor
from features.hmm import HmmExtractor
from tests.required import required_tools


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
    monkeypatch.setattr("data.datagen._BATCH_RESIDUES", 1000)
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


def test_head_fasta_copies_the_first_records(tmp_path: Path):
    pool = write_fasta(tmp_path / "pool.fa", 30, 100, 40, seed=10)
    head = head_fasta(pool, tmp_path / "head.fa", 7)
    assert records(head) == records(pool)[:7]
    assert head_fasta(pool, tmp_path / "all.fa", 30).read_bytes() == pool.read_bytes()
    with pytest.raises(ValueError, match="30 records"):
        head_fasta(pool, tmp_path / "x.fa", 31)


def test_sampled_sequences_are_pieces_of_the_source_or_random(tmp_path: Path):
    source = write_fasta(tmp_path / "src.fa", 20, 2000, seed=11)
    pool = sequences(source)
    exact = write_sampled_fasta(tmp_path / "q.fa", source, 200, 300, hit_fraction=0.5, mutation_rate=0.0, seed=12)
    found = sequences(exact)
    hits = [s for s in found if any(s in p for p in pool)]
    assert len(found) == 200 and all(len(s) == 300 for s in found)
    assert len(hits) / len(found) == pytest.approx(0.5, abs=0.1)
    again = write_sampled_fasta(tmp_path / "q2.fa", source, 200, 300, hit_fraction=0.5, mutation_rate=0.0, seed=12)
    assert again.read_bytes() == exact.read_bytes()
    mutated = sequences(write_sampled_fasta(tmp_path / "m.fa", source, 20, 300, 1.0, mutation_rate=0.1, seed=12))
    identities = [identity_to_source(s, pool) for s in mutated]
    assert len(identities) == 20 and all(0.8 < value < 0.97 for value in identities)


def identity_to_source(piece: bytes, pool: list[bytes]) -> float:
    """Identity of ``piece`` to the source window it was cut from, found through a shared 16-mer (by chance in 40 kb: about 1e-5)."""
    for k in range(len(piece) - 16):
        for seq in pool:
            at = seq.find(piece[k : k + 16])
            window = seq[at - k : at - k + len(piece)] if at >= k else b""
            if len(window) == len(piece):
                return float(np.mean(np.frombuffer(window, np.uint8) == np.frombuffer(piece, np.uint8)))
    return 0.0


def test_translated_samples_are_proteins_of_source_windows(tmp_path: Path):
    source = write_fasta(tmp_path / "src.fa", 5, 3000, seed=13)
    found = sequences(
        write_sampled_fasta(
            tmp_path / "t.fa", source, 40, 100, 1.0, mutation_rate=0.0, alphabet="protein", translate=True, seed=14
        )
    )
    assert len(found) == 40 and all(len(s) == 100 for s in found)
    assert set(b"".join(found)) <= set("".join(AMINO_ACID_FREQUENCIES).encode()) and len(set(b"".join(found))) > 15
    with pytest.raises(ValueError, match="translate"):
        write_sampled_fasta(tmp_path / "bad.fa", source, 1, 10, 1.0, translate=True)


def test_reads_come_from_both_strands_and_quality_marks_errors(tmp_path: Path):
    reference = write_fasta(tmp_path / "ref.fa", 3, 5000, seed=15)
    genome = b"".join(sequences(reference))
    reverse = genome[::-1].translate(bytes.maketrans(b"ACGT", b"TGCA"))
    exact = write_fastq(tmp_path / "r.fq", reference, 400, 80, error_rate=0.0, seed=16).read_bytes().split(b"\n")
    reads, quals = exact[1::4][:400], exact[3::4][:400]
    forward = sum(r in genome for r in reads)
    assert forward + sum(r in reverse for r in reads) == 400 and 120 < forward < 280
    assert min(min(q) for q in quals) >= 33 + 35
    noisy = write_fastq(tmp_path / "n.fq", reference, 400, 80, error_rate=0.05, seed=16).read_bytes().split(b"\n")
    low = sum(sum(c < 33 + 20 for c in q) for q in noisy[3::4][:400])
    assert low / (400 * 80) == pytest.approx(0.05, abs=0.01)
    assert (
        gzip.decompress(
            write_fastq(tmp_path / "r.fq.gz", reference, 400, 80, 0.0, seed=16, gzip_output=True).read_bytes()
        ).split(b"\n")
        == exact
    )


@pytest.mark.tools
def test_blast_database_and_profile_from_the_real_tools(tmp_path: Path):
    required_tools("makeblastdb", "mafft", "hmmbuild")
    fasta = write_fasta(tmp_path / "p.fa", 50, 200, alphabet="protein", seed=17)
    prefix = make_blast_db(fasta, tmp_path / "db" / "p", "protein")
    assert BlastDbExtractor().extract(prefix)["sequences"] == 50
    profile = write_profile(tmp_path / "f.hmm", tmp_path / "f.fa", 80, 6, 0.2, seed=18)
    assert HmmExtractor().extract(profile)["models"] == 1 and len(sequences(tmp_path / "f.fa")) == 6
    with pytest.raises(RuntimeError, match="makeblastdb failed"):
        make_blast_db(tmp_path / "missing.fa", tmp_path / "db" / "x", "dna")
