"""Which stored runs an operator names: by run id, by the input of a run (the same features and parameters), by user
or by time, within an algorithm and platform. What ``predictor runs set-aside`` takes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class RunSelection:
    """Runs to select; every criterion given must hold, and at least one of ``run_ids``, ``like``, ``user``, ``since``
    or ``until`` is given (an algorithm or a platform alone names too much to set aside by mistake)."""

    run_ids: frozenset[str] = field(default_factory=frozenset)
    # a run id: the runs of the same input (equal features and parameters)
    like: str | None = None
    # the ``user`` of the runs' context (accounting imports and SWF logs record it)
    user: str | None = None
    since: datetime | None = None  # recorded at or after
    until: datetime | None = None  # recorded before
    algorithm: str | None = None
    platform: str | None = None

    def __post_init__(self) -> None:
        if not (self.run_ids or self.like or self.user or self.since or self.until):
            raise ValueError("name the runs: by run id, by a run whose input they share, by user or by time")
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ValueError("since must come before until")

    def matches(self, row: Mapping[str, Any], like: Mapping[str, Any] | None) -> bool:
        """Whether a stored row (its columns) is selected; ``like`` is the row of :attr:`like` (None: not given)."""
        same_input = like is None or (row["features"], row["params"]) == (like["features"], like["params"])
        by_user = self.user is None or str((row.get("context") or {}).get("user")) == self.user
        return (not self.run_ids or row["run_id"] in self.run_ids) and same_input and by_user
