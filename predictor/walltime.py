"""Slurm walltimes: seconds printed as ``HH:MM:SS`` or ``D-HH:MM:SS`` (rounded up, so a limit built from one is never
short), and Slurm's durations read back as seconds."""

from __future__ import annotations

import math
import re
from functools import lru_cache

SECONDS_PER_DAY = 86_400


def slurm_walltime(seconds: float) -> str:
    """``seconds`` rounded up to the next whole second, as ``HH:MM:SS`` under a day and ``D-HH:MM:SS`` from one day on."""
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"a walltime needs finite, non-negative seconds, got {seconds!r}")
    return _clock(math.ceil(seconds))


@lru_cache(maxsize=16_384)
def _clock(whole: int) -> str:
    """Whole seconds as a Slurm walltime, remembered: a batch's estimates share few whole seconds (a thousand took 3 ms)."""
    days, rest = divmod(whole, SECONDS_PER_DAY)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{clock}" if days else clock


def optional_walltime(seconds: float | None) -> str | None:
    """:func:`slurm_walltime` of ``seconds``, None for None (an estimate without seconds or without a limit)."""
    return None if seconds is None else slurm_walltime(seconds)


LIMITLESS = frozenset({"UNLIMITED", "INFINITE", "PARTITION_LIMIT", "NONE", ""})
# Slurm's longest finite duration (NO_VAL and INFINITE minutes are above)
MAX_DURATION_S = (2**32 - 3) * 60.0
_DURATION = re.compile(
    r"(?:(?P<days>\d+)-(?P<dh>\d+)(?::(?P<dm>\d+)(?::(?P<ds>\d+))?)?|(?P<a>\d+)(?::(?P<b>\d+)(?::(?P<c>\d+))?)?)"
)


def parse_walltime(text: str) -> float | None:
    """Seconds in a Slurm duration as Slurm reads one: ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M`` or ``D-H:M:S``.

    A bare number is minutes (``sacct -c`` prints time limits so); ``UNLIMITED``, ``Partition_Limit`` and an empty
    field are None (no limit); anything else, and a duration over Slurm's longest (:data:`MAX_DURATION_S`), raises
    ValueError.
    """
    text = text.strip()
    if text.upper() in LIMITLESS:
        return None
    match = _DURATION.fullmatch(text)
    if match is None:
        raise ValueError(f"not a Slurm duration: {text[:40]!r}")
    n = {k: int(v) for k, v in match.groupdict().items() if v is not None}
    if "days" in n:
        seconds = ((n["days"] * 24 + n["dh"]) * 60 + n.get("dm", 0)) * 60 + n.get("ds", 0)
    elif "c" in n:
        seconds = (n["a"] * 60 + n["b"]) * 60 + n["c"]
    else:
        seconds = n["a"] * 60 + n.get("b", 0)
    if seconds > MAX_DURATION_S:
        raise ValueError(f"{text[:40]!r} is longer than Slurm's longest duration ({MAX_DURATION_S:.0f} s)")
    return float(seconds)
