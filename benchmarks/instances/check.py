"""An independent check of a batch schedule: plain loops, sharing no code with the planners it checks."""

from __future__ import annotations

import math
from collections.abc import Sequence


def checked_makespan(times: Sequence[Sequence[float]], ready: Sequence[float], assign: Sequence[int]) -> float:
    """The makespan of ``assign``, after checking that every job is on exactly one machine that can run it.

    Raises ValueError on a missing, out-of-range or ineligible assignment; the makespan
    is recomputed from scratch as the latest (ready time + sum of the job times) of a machine.
    """
    rows = [list(map(float, row)) for row in times]
    machines = len(ready)
    if len(assign) != len(rows):
        raise ValueError(f"{len(assign)} assignments for {len(rows)} jobs")
    finish = [float(r) for r in ready]
    for job, (row, machine) in enumerate(zip(rows, assign)):
        if isinstance(machine, float) or int(machine) != machine or not 0 <= int(machine) < machines:
            raise ValueError(f"job {job}: machine {machine!r} is not one of 0..{machines - 1}")
        seconds = row[int(machine)]
        if not math.isfinite(seconds):
            raise ValueError(f"job {job}: machine {machine} cannot run it")
        finish[int(machine)] += seconds
    return max(finish)
