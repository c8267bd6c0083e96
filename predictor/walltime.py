"""Seconds as a Slurm walltime (``HH:MM:SS``, ``D-HH:MM:SS``), rounded up so a limit built from it is never short."""

from __future__ import annotations

import math

SECONDS_PER_DAY = 86_400


def slurm_walltime(seconds: float) -> str:
    """``seconds`` rounded up to the next whole second, as ``HH:MM:SS`` under a day and ``D-HH:MM:SS`` from one day on."""
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"a walltime needs finite, non-negative seconds, got {seconds!r}")
    days, rest = divmod(math.ceil(seconds), SECONDS_PER_DAY)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{clock}" if days else clock


def optional_walltime(seconds: float | None) -> str | None:
    """:func:`slurm_walltime` of ``seconds``, None for None (an estimate without seconds or without a limit)."""
    return None if seconds is None else slurm_walltime(seconds)
