"""Jobs for the Slurm tests: a small FASTA input, and a Slurm that enforces memory requests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from slurm.ingest import Inputs
from tests.required import required
from tests.slurmserver import SlurmCluster, memory_enforceable
from tests.slurmserver import available as slurm_available


def readable(*roots: Path) -> Inputs:
    """What accounting may read for a test: input files under ``roots``, up to 1 GiB each, 5 s each."""
    return Inputs(roots, 1 << 30, 5.0)


@pytest.fixture
def fasta(tmp_path: Path) -> Path:
    path = tmp_path / "family.fa"
    path.write_text("".join(f">s{i}\n{'ACGT' * (20 + i)}\n" for i in range(6)))
    return path


@pytest.fixture(scope="module")
def slurm_memory_cluster() -> Iterator[SlurmCluster]:
    """A single-node Slurm that enforces ``--mem`` (cgroups: a job past its request ends OUT_OF_MEMORY), per module."""
    required(
        slurm_available() and memory_enforceable(),
        "Slurm and munge, or a writable cgroup v1 memory hierarchy, missing",
        "run as root on a machine with cgroup v1 (see tests/slurmserver.py)",
    )
    cluster = SlurmCluster(memory=True)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
