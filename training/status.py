"""The retrain worker's progress, told as it goes: into the home's status file (:mod:`predictor.training_status`), read by
``/readyz`` and ``predictor models list``, and as a log line now and then for whoever watches the worker's output."""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from predictor.domain import Target
from predictor.training_status import TrainingStatus, now_iso, write_status
from training.pipeline import TrainingOutcome

log = logging.getLogger(__name__)
# a progress line in the worker's log at most this often
LOG_EVERY_S = 30.0


class StatusReport:
    """Keeps the home's training status in step with one worker: a pass's start, each fit, its end, the worker's stop."""

    def __init__(self, home: Path, interval_s: float) -> None:
        self.home = home
        self.interval_s = interval_s
        self.status = TrainingStatus()
        self._logged = 0.0
        self._write(state="waiting")

    def start(self, target: Target, pairs: Sequence[str], total: int) -> None:
        """A pass starts training ``target`` for ``pairs``, about ``total`` steps."""
        self._write(
            state="training",
            target=target.value,
            pairs=list(pairs),
            done=0,
            total=total,
            step=None,
            started_at=now_iso(),
        )
        log.info("training %s of %d pair(s): about %d steps", target.value, len(pairs), total)
        self._logged = time.monotonic()

    def __call__(self, step: str) -> None:
        """One more step of the pass is done (training's progress callback)."""
        self._write(done=self.status.done + 1, step=step)
        if time.monotonic() - self._logged >= LOG_EVERY_S:
            self._logged = time.monotonic()
            log.info("%s", self.status.summary())

    def passed(self, outcomes: Sequence[TrainingOutcome]) -> None:
        """A pass ended with ``outcomes``; the next comes after the interval."""
        following = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=self.interval_s)
        self._write(
            state="waiting",
            last_pass_at=now_iso(),
            last_decisions=dict(Counter(o.decision.verdict.value for o in outcomes)),
            next_pass_at=following.isoformat(),
        )

    def stopped(self) -> None:
        self._write(state="stopped", next_pass_at=None)

    def _write(self, **changes: object) -> None:
        self.status = self.status.with_(**changes)
        try:
            write_status(self.home, self.status)
        # a full or read-only disk must not stop training: the status is for people
        except OSError:
            log.warning("cannot write the training status under %s", self.home, exc_info=True)
