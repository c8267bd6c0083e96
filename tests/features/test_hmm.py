"""The HMM profile extractor: hand-made and hmmbuild profiles, several models, gzip, chunk boundaries, bad input."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from data.datagen import build_hmm, write_family_fasta
from features import get_extractor, hmm
from features.base import CostClass
from features.hmm import HmmExtractor
from tests.features.kit import assert_refused, without_size, write
from tests.required import required_tools


def model(name: str, length: int, alphabet: str = "amino", compo: bool = True) -> bytes:
    """A structurally complete HMMER3/f model (numbers are placeholders; only the layout matters here)."""
    width = 20 if alphabet == "amino" else 4
    emissions = " ".join(["2.5"] * width)
    lines = [
        "HMMER3/f [3.3.2 | Nov 2020]",
        f"NAME  {name}",
        f"LENG  {length}",
        f"ALPH  {alphabet}",
        "STATS LOCAL MSV       -9.9  0.7",
        "HMM          " + " ".join("ACDEFGHIKLMNPQRSTVWY"[:width] if alphabet == "amino" else "ACGT"),
        "            m->m     m->i     m->d     i->m     i->i     d->m     d->d",
    ]
    if compo:
        lines.append(f"  COMPO   {emissions}")
    lines += [f"          {emissions}", "          0.01 4.9 5.6 0.6 0.7 0.0 *"]
    for node in range(1, length + 1):
        lines += [
            f"      {node}   {emissions} {node} x - - -",
            f"          {emissions}",
            "          0.01 4.9 5.6 0.6 0.7 0.4 0.9",
        ]
    return ("\n".join(lines) + "\n//\n").encode()


def test_several_models_lengths_and_alphabet(tmp_path: Path):
    path = write(tmp_path / "three.hmm", model("a", 5) + model("b", 12, compo=False) + model("c", 1))
    features = HmmExtractor().extract(path)
    assert tuple(features) == HmmExtractor.feature_names
    assert features == {
        "bytes": float(path.stat().st_size),
        "models": 3.0,
        "total_length": 18.0,
        "mean_length": 6.0,
        "max_length": 12.0,
        "is_nucleotide": 0.0,
    }
    assert HmmExtractor.cost is CostClass.FULL_SCAN
    assert isinstance(get_extractor("hmm"), HmmExtractor), "registered by entry point"


@pytest.mark.parametrize("alphabet", ["DNA", "RNA"])
def test_nucleotide_profiles(tmp_path: Path, alphabet: str):
    features = HmmExtractor().extract(write(tmp_path / "n.hmm", model("n", 7, alphabet)))
    assert features["is_nucleotide"] == 1.0 and features["models"] == 1.0


def test_gzip_crlf_and_chunk_boundaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    text = b"".join(model(f"m{i}", 3 + i % 7) for i in range(40))
    expected = HmmExtractor().extract(write(tmp_path / "plain.hmm", text))
    monkeypatch.setattr(hmm, "_CHUNK_BYTES", 97)  # every model and many lines cut across chunks
    chunked = HmmExtractor().extract(tmp_path / "plain.hmm")
    packed = HmmExtractor().extract(write(tmp_path / "p.hmm.gz", gzip.compress(text)))
    crlf = HmmExtractor().extract(write(tmp_path / "crlf.hmm", text.replace(b"\n", b"\r\n")))
    for found in (chunked, packed, crlf):
        assert without_size(found) == without_size(expected)
    assert expected["models"] == 40 and expected["total_length"] == sum(3 + i % 7 for i in range(40))


@pytest.mark.tools
def test_profiles_built_by_hmmbuild(tmp_path: Path):
    required_tools("hmmbuild", "mafft")
    parts = []
    for i, (length, alphabet) in enumerate([(60, "protein"), (90, "protein")]):
        family = write_family_fasta(tmp_path / f"f{i}.fa", 6, length, 0.2, alphabet, seed=i)
        parts.append(build_hmm(family, tmp_path / f"f{i}.hmm", f"f{i}", alphabet))
    both = write(tmp_path / "both.hmm", b"".join(p.read_bytes() for p in parts))
    features = HmmExtractor().extract(both)
    # hmmbuild may drop columns it judges to be insertions, so the model is at most as long as the family
    assert features["models"] == 2 and 2 <= features["max_length"] <= 90 and features["is_nucleotide"] == 0.0
    assert features["total_length"] == sum(HmmExtractor().extract(p)["total_length"] for p in parts)


def _truncated_gzip(path: Path) -> None:
    path.write_bytes(gzip.compress(model("a", 50) * 20)[:-200])


MALFORMED = {
    "missing": (lambda p: None, "no such file"),
    "directory": (lambda p: p.mkdir(), "is a directory"),
    "empty": (lambda p: p.write_bytes(b""), "empty"),
    "binary junk": (lambda p: p.write_bytes(bytes(range(256)) * 10), "binary"),
    "NUL after the first 64 KiB": (lambda p: p.write_bytes(model("a", 50) * 10 + b"\0" + model("b", 5)), "NUL"),
    "truncated gzip": (_truncated_gzip, "gzip"),
    "fasta": (lambda p: p.write_bytes(b">s1\nMKV\n"), "not an HMMER3 profile"),
    "hmmer2": (lambda p: p.write_bytes(b"HMMER2.0  [2.3.2]\nNAME  x\n"), "HMMER2 format"),
    "no end line": (lambda p: p.write_bytes(model("a", 5)[:-3]), "truncated: model 1 has no '//'"),
    "lines joined in the body": (
        lambda p: p.write_bytes(model("a", 5) + model("b", 9).replace(b"\n      4 ", b" ", 1)),
        "model 2",
    ),
    "missing node line": (
        lambda p: p.write_bytes(b"".join(model("a", 5).splitlines(keepends=True)[:-5] + [b"//\n"])),
        "body lines where LENG 5 needs",
    ),
    "no LENG": (lambda p: p.write_bytes(model("a", 5).replace(b"LENG  5\n", b"")), "one LENG and one ALPH"),
    "bad LENG": (lambda p: p.write_bytes(model("a", 5).replace(b"LENG  5", b"LENG  five")), "positive integer"),
    "unknown alphabet": (
        lambda p: p.write_bytes(model("a", 5).replace(b"ALPH  amino", b"ALPH  coins")),
        "unknown alphabet",
    ),
    "no HMM line": (lambda p: p.write_bytes(model("a", 5).replace(b"\nHMM ", b"\nXMM ")), "no 'HMM' line"),
    "mixed alphabets": (lambda p: p.write_bytes(model("a", 5) + model("b", 5, "DNA")), "different alphabets"),
    "junk between models": (
        lambda p: p.write_bytes(model("a", 5) + b"junk\n" + model("b", 5)),
        "model 2: does not start",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_profile_raises_feature_error_naming_the_file(tmp_path: Path, case: str):
    assert_refused(HmmExtractor(), tmp_path / "input.hmm", *MALFORMED[case])
