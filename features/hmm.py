"""HMMER3 profile features (number of models, model lengths, alphabet) from a profile file, plain or gzip.

The file is read in large chunks; the scan jumps from one model's ``//`` end line to
the next with ``bytes.find``, so only each model's few header lines are parsed in
Python. Every model must start with a ``HMMER3/`` format line, carry one ``LENG``
and one ``ALPH`` line in its header, and have exactly the body lines a model of
that length has (the ``HMM`` line, the transition header, the optional ``COMPO``
line, two lines for node 0 and three per match state), so a truncated or garbled
profile is rejected rather than miscounted.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

from features.base import CostClass
from features.textio import BadInput, Deadline, Stream, feature_errors, is_binary, open_input

FEATURE_NAMES: tuple[str, ...] = ("bytes", "models", "total_length", "mean_length", "max_length", "is_nucleotide")
_CHUNK_BYTES = 1 << 23
# a model's text above this is not a profile (Pfam's largest is a few tens of MB)
_MAX_MODEL_BYTES = 1 << 28
_ALPHABETS = {b"amino": False, b"dna": True, b"rna": True}  # -> is nucleotide
_LENG = re.compile(rb"^LENG[ \t]+(\S+)[ \t\r]*$", re.MULTILINE)
_ALPH = re.compile(rb"^ALPH[ \t]+(\S+)[ \t\r]*$", re.MULTILINE)


class HmmExtractor:
    """Features of an HMMER3 text profile file holding one or more models."""

    name: ClassVar[str] = "hmm"
    feature_names: ClassVar[tuple[str, ...]] = FEATURE_NAMES
    cost = CostClass.FULL_SCAN

    def __init__(self, time_budget_s: float | None = None) -> None:
        """``time_budget_s``: seconds the scan may take (None: no limit); over it the input is refused."""
        if time_budget_s is not None and time_budget_s < 0:
            raise ValueError(f"time_budget_s must be >= 0, got {time_budget_s}")
        self.time_budget_s = time_budget_s

    def extract(self, value: str | Path) -> dict[str, float]:
        """Features of the profile file at ``value``; raises :class:`FeatureError` naming it on bad input."""
        path = Path(value)
        with feature_errors(path), open_input(path) as (stream, _, _):
            lengths, nucleotide = _scan(stream, Deadline(self.time_budget_s))
            size = path.stat().st_size
        return {
            "bytes": float(size),
            "models": float(len(lengths)),
            "total_length": float(sum(lengths)),
            "mean_length": sum(lengths) / len(lengths),
            "max_length": float(max(lengths)),
            "is_nucleotide": float(nucleotide),
        }


def _scan(stream: Stream, deadline: Deadline) -> tuple[list[int], bool]:
    """Model lengths and whether the alphabet is nucleotide, checking every model on the way."""
    lengths: list[int] = []
    alphabets: set[bool] = set()
    carry = b""
    chunk = stream.read(_CHUNK_BYTES)
    _check_start(chunk)
    while True:
        if b"\0" in chunk:
            raise BadInput("binary data (NUL bytes), not an HMM profile")
        data = carry + chunk if carry else chunk
        pos = 0
        while (end := data.find(b"\n//", pos)) != -1:
            line_end = data.find(b"\n", end + 3)
            if line_end == -1 and chunk:
                # the end line continues in the next chunk
                break
            length, nucleotide = _model(data[pos : end + 1], len(lengths) + 1)
            lengths.append(length)
            alphabets.add(nucleotide)
            pos = len(data) if line_end == -1 else line_end + 1
        carry = data[pos:]
        if not chunk:
            break
        if len(carry) > _MAX_MODEL_BYTES:
            raise BadInput(f"model {len(lengths) + 1} runs past {_MAX_MODEL_BYTES >> 20} MiB without a '//' end line")
        deadline.check()
        chunk = stream.read(_CHUNK_BYTES)
    if carry.strip():
        raise BadInput(f"truncated: model {len(lengths) + 1} has no '//' end line")
    if len(alphabets) > 1:
        raise BadInput("models of different alphabets (amino and nucleotide) in one file")
    return lengths, alphabets.pop()


def _check_start(head: bytes) -> None:
    """Check the input is text starting with an HMMER3 format line."""
    if not head:
        raise BadInput("empty input: no data to read")
    if is_binary(head[: 1 << 16]):
        raise BadInput("binary data, not an HMM profile")
    first = head.lstrip()[:20]
    if first.startswith(b"HMMER2"):
        raise BadInput("HMMER2 format; convert it with `hmmconvert` to HMMER3")
    if not first.startswith(b"HMMER3/"):
        raise BadInput(f"not an HMMER3 profile: starts with {first[:10]!r}, expected 'HMMER3/'")


def _model(text: bytes, number: int) -> tuple[int, bool]:
    """Length and alphabet of one model's text (up to, not including, its '//' line), after checking it."""
    if not text.lstrip().startswith(b"HMMER3/"):
        raise BadInput(f"model {number}: does not start with a 'HMMER3/' format line")
    body = text.find(b"\nHMM ")
    if body == -1:
        raise BadInput(f"model {number}: no 'HMM' line starting the model body")
    header = text[:body]
    lengs, alphs = _LENG.findall(header), _ALPH.findall(header)
    if len(lengs) != 1 or len(alphs) != 1:
        raise BadInput(f"model {number}: needs one LENG and one ALPH line, found {len(lengs)} and {len(alphs)}")
    if not lengs[0].isdigit() or int(lengs[0]) < 1:
        raise BadInput(f"model {number}: LENG must be a positive integer, got {lengs[0].decode(errors='replace')!r}")
    alphabet = alphs[0].lower()
    if alphabet not in _ALPHABETS:
        raise BadInput(f"model {number}: unknown alphabet {alphs[0].decode(errors='replace')!r}")
    length = int(lengs[0])
    node0 = 3 if text.find(b"\n  COMPO ", body) != -1 else 2
    expected = 2 + node0 + 3 * length
    found = text.count(b"\n", body + 1)
    if found != expected:
        raise BadInput(
            f"model {number}: {found} body lines where LENG {length} needs {expected} (truncated or garbled)"
        )
    return length, _ALPHABETS[alphabet]
