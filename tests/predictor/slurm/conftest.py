"""Jobs for the Slurm tests: a small FASTA input and a catalog whose mafft reads it."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def fasta(tmp_path: Path) -> Path:
    path = tmp_path / "family.fa"
    path.write_text("".join(f">s{i}\n{'ACGT' * (20 + i)}\n" for i in range(6)))
    return path
