"""What the retrain worker is doing, kept in one small file under the home: the API's ``/readyz`` and the CLI read it.

The worker (``predictor worker``, or the one ``predictor serve --train`` starts beside the API) writes it whole at
each step of a pass: which target it trains, for which pairs, how many of the pass's steps (fold fits mostly) are done of about how
many, and what the last pass decided. Readers in other processes see a complete file or the one before it
(:mod:`predictor.atomic`). A status whose writer is gone from this host reads as ``stopped``.
"""

from __future__ import annotations

import os
import socket
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from predictor.atomic import read_state, write_json_atomically

STATUS_FILE = "training-status.json"
State = Literal["none", "training", "waiting", "stopped"]


@dataclass(frozen=True)
class TrainingStatus:
    """The worker's latest word. ``state``: ``none`` (no worker has run on this home), ``training`` (a pass is under
    way), ``waiting`` (between passes) or ``stopped``. ``done`` of about ``total`` steps, fold fits mostly (the estimate
    grows by what the champions' own members and the registrations add); times are ISO 8601 in UTC."""

    state: State = "none"
    pid: int | None = None
    host: str | None = None
    target: str | None = None
    pairs: list[str] = field(default_factory=list)
    done: int = 0
    total: int = 0
    step: str | None = None
    started_at: str | None = None
    updated_at: str | None = None
    last_pass_at: str | None = None
    last_decisions: dict[str, int] = field(default_factory=dict)
    next_pass_at: str | None = None

    def with_(self, **changes: object) -> TrainingStatus:
        """This status with ``changes``, stamped now by this process."""
        return replace(self, pid=os.getpid(), host=socket.gethostname(), updated_at=now_iso(), **changes)  # type: ignore[arg-type]

    def summary(self) -> str:
        """One line for people: what the worker does now, or did last."""
        if self.state == "none":
            return "no retrain worker has run on this home"
        if self.state == "training":
            total = max(self.done, self.total)
            share = f" ({100 * self.done / total:.0f} %)" if total else ""
            pairs = f" of {len(self.pairs)} pair(s)" if self.pairs else ""
            return f"training {self.target}{pairs} since {self.started_at}: {self.done}/{total} steps{share}" + (
                f", last {self.step}" if self.step else ""
            )
        decided = ", ".join(f"{n} {verdict}" for verdict, n in sorted(self.last_decisions.items())) or "nothing due"
        last = f"last pass {self.last_pass_at}: {decided}" if self.last_pass_at else "no pass finished"
        following = f"; next pass {self.next_pass_at}" if self.state == "waiting" and self.next_pass_at else ""
        return f"retrain worker {self.state}; {last}{following}"


def now_iso() -> str:
    """Now, in UTC, to the second, as ISO 8601."""
    return datetime.now(UTC).replace(microsecond=0).isoformat()


def status_path(home: Path) -> Path:
    return home / STATUS_FILE


def write_status(home: Path, status: TrainingStatus) -> None:
    """Replace the home's status with ``status`` in one step."""
    write_json_atomically(status_path(home), asdict(status))


def read_status(home: Path) -> TrainingStatus:
    """The home's status (``none`` when no worker wrote one); ``stopped`` when its writer no longer runs on this host."""
    status = read_state(status_path(home), TrainingStatus)
    if status.state in ("training", "waiting") and status.host == socket.gethostname() and not _alive(status.pid):
        return replace(status, state="stopped")
    return status


def _alive(pid: int | None) -> bool:
    """Whether process ``pid`` runs (on this host)."""
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it runs, as another user
        return True
    return True
