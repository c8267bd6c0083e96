"""Background loops of passes: a pass now, then one every interval until asked to stop.

The retrain worker, the Slurm follower, the Slurm bridge and the probe executor all run this way; a pass that
fails is logged and the next one tries again, so one bad moment (a database restart, Slurm busy) stops nothing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def every_interval(
    step: Callable[[], T],
    interval_s: float,
    stop: threading.Event,
    *,
    what: str,
    log: logging.Logger,
    on_pass: Callable[[T], None] | None = None,
    retry_on: tuple[type[Exception], ...] = (Exception,),
    quiet: bool = False,
) -> None:
    """Run ``step`` (and ``on_pass`` with what it returned) every ``interval_s`` until ``stop`` is set.

    A pass raising one of ``retry_on`` is logged as ``what`` failing: with its traceback, or as one warning line when
    ``quiet`` (failures the caller expects, such as Slurm being unreachable). Anything else ends the loop.
    """
    while True:
        try:
            done = step()
            if on_pass is not None:
                on_pass(done)
        except retry_on as exc:
            if quiet:
                log.warning("%s failed; trying again in %.0f s: %s", what, interval_s, exc)
            else:
                log.exception("%s failed; trying again in %.0f s", what, interval_s)
        if stop.wait(interval_s):
            return
