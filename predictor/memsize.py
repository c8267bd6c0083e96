"""Memory sizes between bytes and the strings Slurm reads and writes (``3500M``, ``4Gn``, ``2Gc``, ``123456K``)."""

from __future__ import annotations

import math
import re

MIB = 1024**2
GIB = 1024**3
# the most a store's integer column holds: a larger size is no machine's
MAX_BYTES = 2**63 - 1
_UNITS = {"": 1024**2, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}  # bare numbers: MiB
_SIZE = re.compile(r"^\s*(?P<number>\d+(?:\.\d+)?)\s*(?P<unit>[KMGTP]?)(?P<per>[nc]?)\s*$", re.IGNORECASE)


class MemorySizeError(ValueError):
    """Text that is not a Slurm memory size; the message quotes it."""


def slurm_memory(nbytes: float) -> str:
    """``nbytes`` as a Slurm ``--mem`` value: whole mebibytes, rounded up so the request covers it (``3500M``)."""
    if not math.isfinite(nbytes) or nbytes < 0:
        raise MemorySizeError(f"{nbytes!r} is not a memory size in bytes")
    return f"{max(1, math.ceil(nbytes / MIB))}M"


def optional_slurm_memory(nbytes: float | None) -> str | None:
    """:func:`slurm_memory` of ``nbytes``, or None when there is no memory estimate."""
    return None if nbytes is None else slurm_memory(nbytes)


def parse_slurm_memory(text: str, *, cpus: int = 1, nodes: int = 1) -> int:
    """Bytes a Slurm memory string stands for, for the whole job.

    ``sacct`` writes ReqMem per node (``4000Mn``) or per CPU (``2Gc``) and MaxRSS with a unit (``123456K``); a bare
    number is mebibytes, as in ``--mem``. ``cpus`` and ``nodes`` scale the per-CPU and per-node forms.
    """
    match = _SIZE.match(text)
    if match is None:
        raise MemorySizeError(f"{text!r} is not a Slurm memory size (a number with K, M, G, T or P, e.g. 3500M)")
    size = float(match["number"]) * _UNITS[match["unit"].upper()]
    per = match["per"].lower()
    scale = cpus if per == "c" else nodes if per == "n" else 1
    total = size * max(scale, 1)
    # inf too: a number of hundreds of digits
    if not total <= MAX_BYTES:
        raise MemorySizeError(f"{text[:40]!r} is over {MAX_BYTES} bytes: no machine's memory")
    return int(math.ceil(total))
