"""Seeded generators of realistic inputs, for tests, benchmarks and parameter sweeps.

FASTA (random or families of related sequences), FASTA sampled from other
sequences (BLAST queries and HMMER targets that find hits), FASTQ reads sampled
from a reference, and, through the real tools, BLAST databases (``makeblastdb``),
BWA indexes (``bwa index``) and HMM profiles (``mafft`` then ``hmmbuild``).
Everything of ours is vectorised with numpy; random FASTA is written in batches of
about 16 M residues (a longer record is made whole), so a 1 GB file takes seconds
and little memory beyond one length per sequence. The same arguments always give
the same bytes (the tools add only a creation date to their outputs).
"""

from __future__ import annotations

import gzip
import itertools
import subprocess
import tempfile
from io import BufferedIOBase
from pathlib import Path
from typing import BinaryIO, Literal

import numpy as np

Alphabet = Literal["dna", "protein"]

# UniProtKB/Swiss-Prot background amino-acid composition (percent).
AMINO_ACID_FREQUENCIES: dict[str, float] = {
    "A": 8.25,
    "R": 5.53,
    "N": 4.06,
    "D": 5.45,
    "C": 1.37,
    "Q": 3.93,
    "E": 6.75,
    "G": 7.07,
    "H": 2.27,
    "I": 5.96,
    "L": 9.66,
    "K": 5.84,
    "M": 2.42,
    "F": 3.86,
    "P": 4.70,
    "S": 6.56,
    "T": 5.34,
    "W": 1.08,
    "Y": 2.92,
    "V": 6.87,
}

# residues generated per batch: bounds memory whatever the file size
_BATCH_RESIDUES = 1 << 24
# residues are drawn through a 2**16-entry table, i.e. to 1/65536 precision
_LUT_BITS = 16


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


def _format_records(residues: np.ndarray, lengths: np.ndarray, first_id: int, line_width: int) -> memoryview:
    """FASTA text, as bytes, of consecutive records ``>seq<id>``: the sequences ``residues`` split by ``lengths``."""
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
    return out.data


def _batches(lengths: np.ndarray) -> list[tuple[int, int]]:
    """Split record indices into consecutive ranges of about ``_BATCH_RESIDUES`` residues each."""
    ends = np.searchsorted(np.cumsum(lengths), np.arange(_BATCH_RESIDUES, int(lengths.sum()), _BATCH_RESIDUES))
    bounds = sorted({0, len(lengths), *(int(e) + 1 for e in ends)})
    return list(itertools.pairwise(bounds))


def _open_output(path: Path, gzip_output: bool) -> BufferedIOBase:
    """The output stream: plain, or gzip at level 1 (fast; the content is what matters)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return gzip.open(path, "wb", compresslevel=1) if gzip_output else open(path, "wb")


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
    members = _substitute(rng, np.tile(ancestor, n_sequences), mutation_rate, table)
    with _open_output(path, False) as out:
        out.write(_format_records(members, lengths, 1, line_width))
    return path


def _substitute(rng: np.random.Generator, residues: np.ndarray, rate: float, table: np.ndarray) -> np.ndarray:
    """``residues`` with each position replaced, with probability ``rate``, by a different residue from ``table``."""
    mutated = np.flatnonzero(rng.random(residues.size) < rate)
    replacement = _draw(rng, table, mutated.size)
    clash = replacement == residues[mutated]
    # redraw substitutions that kept the original residue
    while clash.any():
        replacement[clash] = _draw(rng, table, int(clash.sum()))
        clash = replacement == residues[mutated]
    residues[mutated] = replacement
    return residues


def read_sequences(path: str | Path) -> list[bytes]:
    """The sequences (residues only) of every record of a plain FASTA file."""
    records = Path(path).read_bytes().split(b"\n>")
    return [b"".join(record.split(b"\n")[1:]).replace(b"\r", b"") for record in records]


def head_fasta(source: str | Path, path: str | Path, n_sequences: int) -> Path:
    """Copy the first ``n_sequences`` records of the FASTA file ``source`` to ``path``; returns it."""
    text = Path(source).read_bytes()
    starts = [i + 1 for i in _record_starts(text)]
    if n_sequences < 1 or n_sequences > len(starts) + 1:
        raise ValueError(f"{source} has {len(starts) + 1} records, cannot take {n_sequences}")
    path = Path(path)
    path.write_bytes(text[: starts[n_sequences - 1]] if n_sequences <= len(starts) else text)
    return path


def _record_starts(text: bytes) -> np.ndarray:
    """Offsets of the newlines that precede the 2nd, 3rd, ... record's '>'."""
    a = np.frombuffer(text, np.uint8)
    return np.flatnonzero((a[:-1] == ord("\n")) & (a[1:] == ord(">")))


# The standard genetic code, codons indexed 16*first + 4*second + third with bases ordered T, C, A, G.
_CODE = np.frombuffer(b"FFLLSSSSYY**CC*WLLLLPPPPHHQQRRRRIIIMTTTTNNKKSSRRVVVVAAAADDEEGGGG", np.uint8)
_BASE_INDEX = np.zeros(256, dtype=np.uint8)
_BASE_INDEX[list(b"TCAGtcag")] = [0, 1, 2, 3, 0, 1, 2, 3]
_COMPLEMENT = np.arange(256, dtype=np.uint8)
_COMPLEMENT[list(b"ACGT")] = list(b"TGCA")


def _translate(rng: np.random.Generator, dna: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Protein of the codons of ``dna`` (frame 1); stop codons become random residues, so the protein is one piece."""
    codons = _BASE_INDEX[dna[: dna.size - dna.size % 3]].reshape(-1, 3).astype(np.int64)
    protein = _CODE[codons[:, 0] * 16 + codons[:, 1] * 4 + codons[:, 2]]
    stops = protein == ord("*")
    protein[stops] = _draw(rng, table, int(stops.sum()))
    return protein


def write_sampled_fasta(
    path: str | Path,
    source: str | Path,
    n_sequences: int,
    length_mean: float,
    hit_fraction: float,
    length_sd: float = 0,
    mutation_rate: float = 0.1,
    alphabet: Alphabet = "dna",
    translate: bool = False,
    seed: int = 0,
    line_width: int = 60,
) -> Path:
    """Write sequences of which about ``hit_fraction`` are mutated pieces of ``source``'s sequences, the rest random.

    A sampled sequence is a window of a random record of ``source`` (the whole record
    when shorter), with point substitutions at ``mutation_rate``; with ``translate`` the window is DNA read as codons and the
    output is its protein (for translated searches such as tblastn). This makes BLAST
    queries and HMMER targets that find real hits among random decoys.
    """
    if not 0.0 <= hit_fraction <= 1.0 or not 0.0 <= mutation_rate <= 1.0:
        raise ValueError(f"hit_fraction and mutation_rate must be within [0, 1], got {hit_fraction}, {mutation_rate}")
    if translate and alphabet != "protein":
        raise ValueError("translate makes protein from DNA: alphabet must be 'protein'")
    pool = read_sequences(source)
    if not pool or not all(pool):
        raise ValueError(f"{source}: no sequences to sample from")
    rng = np.random.default_rng(seed)
    table = _residue_table(alphabet, 0.5)
    lengths = _lengths(rng, n_sequences, length_mean, length_sd)
    hits = rng.random(n_sequences) < hit_fraction
    pieces = []
    for length, hit in zip(lengths.tolist(), hits.tolist()):
        if not hit:
            pieces.append(_draw(rng, table, length))
            continue
        record = np.frombuffer(pool[int(rng.integers(len(pool)))], np.uint8)
        window = min(record.size, 3 * length if translate else length)
        start = int(rng.integers(record.size - window + 1))
        piece = record[start : start + window].copy()
        if translate:
            piece = _translate(rng, piece, table)
        pieces.append(_substitute(rng, piece, mutation_rate, table))
    out_lengths = np.array([piece.size for piece in pieces], dtype=np.int64)
    path = Path(path)
    with _open_output(path, False) as out:
        out.write(_format_records(np.concatenate(pieces), out_lengths, 1, line_width))
    return path


def write_fastq(
    path: str | Path,
    reference: str | Path,
    n_reads: int,
    read_length: int,
    error_rate: float = 0.01,
    seed: int = 0,
    gzip_output: bool = False,
) -> Path:
    """Write single-end reads sampled uniformly from both strands of ``reference`` (FASTA), with substitution errors.

    Qualities follow the errors: Phred 35-40 at correct bases, 2-15 at substituted ones (Phred+33).
    """
    if n_reads < 1 or read_length < 1 or not 0.0 <= error_rate <= 1.0:
        raise ValueError(
            f"need n_reads >= 1, read_length >= 1, error_rate in [0, 1]; got {n_reads}, {read_length}, {error_rate}"
        )
    contigs = [np.frombuffer(s, np.uint8) for s in read_sequences(reference) if len(s) >= read_length]
    if not contigs:
        raise ValueError(f"{reference}: no sequence as long as a read ({read_length})")
    rng = np.random.default_rng(seed)
    table = _residue_table("dna", 0.5)
    sizes = np.array([c.size - read_length + 1 for c in contigs], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum([c.size for c in contigs])[:-1]))
    which = rng.choice(len(contigs), size=n_reads, p=sizes / sizes.sum())
    starts = offsets[which] + rng.integers(0, sizes[which])
    reads = np.concatenate(contigs)[starts[:, None] + np.arange(read_length)]
    reverse = rng.random(n_reads) < 0.5
    reads[reverse] = _COMPLEMENT[reads[reverse, ::-1]]
    before = reads.copy()
    reads = _substitute(rng, reads.reshape(-1), error_rate, table).reshape(n_reads, read_length)
    wrong = reads != before
    quality = np.where(wrong, rng.integers(2, 16, reads.shape), rng.integers(35, 41, reads.shape)).astype(np.uint8) + 33
    headers = [b"@read%d\n" % i for i in range(1, n_reads + 1)]
    with _open_output(Path(path), gzip_output) as out:
        for header, read, qual in zip(headers, reads, quality):
            out.write(header + read.tobytes() + b"\n+\n" + qual.tobytes() + b"\n")
    return Path(path)


def make_blast_db(fasta: str | Path, prefix: str | Path, alphabet: Alphabet) -> Path:
    """Build a BLAST database (version 5) from ``fasta`` with ``makeblastdb``; returns its prefix."""
    if alphabet not in ("dna", "protein"):
        raise ValueError(f"alphabet must be 'dna' or 'protein', got {alphabet!r}")
    prefix = Path(prefix)
    dbtype = "nucl" if alphabet == "dna" else "prot"
    _run(["makeblastdb", "-in", str(fasta), "-dbtype", dbtype, "-out", str(prefix), "-title", prefix.name])
    return prefix


def make_bwa_index(fasta: str | Path) -> Path:
    """Index the DNA FASTA ``fasta`` for BWA (``bwa index``: its .amb .ann .bwt .pac .sa beside it); returns it."""
    _run(["bwa", "index", str(fasta)])
    return Path(fasta)


def write_profile(
    path: str | Path,
    members: str | Path,
    length_mean: float,
    n_members: int,
    mutation_rate: float,
    length_sd: float = 0,
    alphabet: Alphabet = "protein",
    seed: int = 0,
) -> Path:
    """Write a family of related sequences to ``members`` and its HMMER3 profile, built from their alignment, to ``path``.

    The family's length is drawn (lognormal, ``length_mean`` and ``length_sd``) from ``seed``.
    """
    length = int(_lengths(np.random.default_rng(seed), 1, length_mean, length_sd)[0])
    write_family_fasta(members, n_members, length, mutation_rate, alphabet, seed=seed)
    return build_hmm(members, path, Path(members).stem, alphabet)


def build_hmm(family: str | Path, path: str | Path, name: str, alphabet: Alphabet) -> Path:
    """Align the sequences of ``family`` with ``mafft`` and build an HMMER3 profile named ``name`` at ``path``."""
    with tempfile.TemporaryDirectory() as tmp:
        alignment = Path(tmp) / "family.aln"
        with open(alignment, "wb") as out:
            _run(["mafft", "--quiet", "--thread", "1", str(family)], stdout=out)
        kind = "--amino" if alphabet == "protein" else "--dna"
        _run(["hmmbuild", "-n", name, kind, "-o", "/dev/null", str(path), str(alignment)])
    return Path(path)


def _run(command: list[str], stdout: BinaryIO | int = subprocess.DEVNULL) -> None:
    """Run a tool; a failure raises RuntimeError with the tool's own message."""
    done = subprocess.run(command, stdout=stdout, stderr=subprocess.PIPE, check=False)
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip()
        raise RuntimeError(f"{command[0]} failed (exit {done.returncode}): {message}")
