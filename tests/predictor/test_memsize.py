"""Memory sizes between bytes and Slurm's strings."""

from __future__ import annotations

import pytest

from predictor.memsize import MIB, MemorySizeError, parse_slurm_memory, slurm_memory


def test_a_request_is_whole_mebibytes_rounded_up_so_it_covers_the_bytes() -> None:
    assert slurm_memory(3500 * MIB) == "3500M"
    assert slurm_memory(3500 * MIB + 1) == "3501M"
    assert slurm_memory(0) == "1M"


@pytest.mark.parametrize(
    ("text", "cpus", "nodes", "expected"),
    [
        ("3500", 1, 1, 3500 * MIB),
        ("4000Mn", 4, 2, 8000 * MIB),
        ("2Gc", 4, 1, 8 * 1024**3),
        ("123456K", 1, 1, 123456 * 1024),
        ("1.5G", 1, 1, 1536 * MIB),
        ("0", 1, 1, 0),
    ],
)
def test_sacct_and_sbatch_forms_are_read_for_the_whole_job(text: str, cpus: int, nodes: int, expected: int) -> None:
    assert parse_slurm_memory(text, cpus=cpus, nodes=nodes) == expected


@pytest.mark.parametrize("text", ["", "lots", "-5M", "5X", "nan", "1e9"])
def test_text_that_is_no_size_is_refused_with_its_words(text: str) -> None:
    with pytest.raises(MemorySizeError, match="memory size"):
        parse_slurm_memory(text)


@pytest.mark.parametrize("nbytes", [float("nan"), float("inf"), -1.0])
def test_no_request_is_written_for_a_size_that_is_none(nbytes: float) -> None:
    with pytest.raises(MemorySizeError):
        slurm_memory(nbytes)
