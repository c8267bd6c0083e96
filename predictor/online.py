"""Online champions, live: a served online member goes on learning from every run production records, run by run.

When the ``champion`` of a pair's target is a single online member of the zoo (registered ``online=True``: the
SC'15-style learner and its kin, :mod:`models.online`), its registered version is only where it starts. Each finished
run recorded after that (``slurm follow``, ``ingest``, ``POST /v1/observations``: every path ends in the store's
``add``) is first answered by the member, as it would have been served, then learned: one constant-time step,
whatever the number of runs before it. What it has learned is kept in the store (:class:`LiveMember`, persisted across
restarts), and the API swaps the member it serves when the store's copy has moved (its ``revision``). The answers it
gives before learning each run are its forward score, tracked as runs arrive: the mean absolute log error.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np

from models.online import AsymmetricOnlineRegressor
from predictor.domain import Measurement, Target
from predictor.registry import Champion

# both sides of a log error are floored here, as training's metrics floor them
LOG_FLOOR = 1.0e-3


class ColumnValues(Protocol):
    """Values read by column name: a dict of :meth:`LiveMember.record`, or a row of the store (a ``RowMapping``,
    whose keys may also be columns, so it is no ``Mapping[str, Any]``)."""

    def __getitem__(self, key: str, /) -> Any: ...


@dataclass
class LiveMember:
    """One pair's served online member as it learns: where it grew from, what it has learned, and its live score.

    ``version`` is the registered version it started from (the champion it stands for); ``learned`` counts the runs
    learned since; ``revision`` moves with every batch learned (what a server compares to swap it in);
    ``log_error_sum`` and ``scored`` hold its answers' absolute log errors before learning each run.
    """

    algorithm: str
    platform: str
    target: Target
    member: str
    version: str
    feature_names: list[str]
    model: AsymmetricOnlineRegressor
    learned: int = 0
    revision: int = 0
    scored: int = 0
    log_error_sum: float = 0.0

    @property
    def key(self) -> tuple[str, str, Target]:
        return (self.algorithm, self.platform, self.target)

    @property
    def live_male(self) -> float:
        """Mean absolute log error of its answers to the runs it learned since it started (NaN before any)."""
        return self.log_error_sum / self.scored if self.scored else math.nan

    def learn(self, runs: Iterable[Measurement]) -> int:
        """Answer, then learn, each finished run of its pair and target among ``runs``, in the order they ended; how many
        it learned. O(features) per run."""
        mine = sorted(
            (m for m in runs if (m.algorithm, m.platform) == (self.algorithm, self.platform)),
            key=lambda m: m.recorded_at,
        )
        count = 0
        for m in mine:
            value = target_value(m, self.target)
            if value is None:
                continue
            row = np.array([m.features.get(name, math.nan) for name in self.feature_names], dtype=float)
            answer = self.model.predict_one(row)
            self.log_error_sum += abs(math.log(max(answer, LOG_FLOOR)) - math.log(max(value, LOG_FLOOR)))
            self.scored += 1
            self.model.learn_one(row, value)
            count += 1
        if count:
            self.learned += count
            self.revision += 1
        return count

    def record(self) -> dict[str, Any]:
        """The member as a row of the store's ``online_members`` table (JSON-able)."""
        return {
            "algorithm": self.algorithm,
            "platform": self.platform,
            "target": self.target.value,
            "member": self.member,
            "version": self.version,
            "feature_names": list(self.feature_names),
            "params": _plain(self.model.get_params()),
            "state": self.model.state(),
            "learned": self.learned,
            "revision": self.revision,
            "scored": self.scored,
            "log_error_sum": self.log_error_sum,
        }

    @classmethod
    def from_record(cls, row: ColumnValues) -> LiveMember:
        """The member a row of :meth:`record` holds."""
        model = AsymmetricOnlineRegressor.from_state(dict(row["params"]), dict(row["state"]))
        return cls(
            algorithm=str(row["algorithm"]),
            platform=str(row["platform"]),
            target=Target(row["target"]),
            member=str(row["member"]),
            version=str(row["version"]),
            feature_names=[str(n) for n in row["feature_names"]],
            model=model,
            learned=int(row["learned"]),
            revision=int(row["revision"]),
            scored=int(row["scored"]),
            log_error_sum=float(row["log_error_sum"]),
        )


# on a served champion that learns online: the live member's revision it holds
LIVE_REVISION_TAG = "live_revision"


def with_live_member(champion: Champion, member: LiveMember) -> Champion:
    """``champion`` answering with ``member``'s learned numbers (its tags say how far it has learned)."""
    tags = {**champion.tags, LIVE_REVISION_TAG: str(member.revision), "live_learned": str(member.learned)}
    return replace(champion, model=member.model, tags=tags)


def holds(champion: Champion, member: LiveMember) -> bool:
    """Whether a served ``champion`` already answers with what ``member`` has learned (same version and revision)."""
    return champion.version == member.version and champion.tags.get(LIVE_REVISION_TAG) == str(member.revision)


def target_value(m: Measurement, target: Target) -> float | None:
    """What a run tells of ``target``: its wall seconds, or its peak memory in bytes; None when it did not finish (a
    censored run's time is only a bound) or did not measure it."""
    if m.exit_status != 0 or m.censored:
        return None
    if target is Target.MEMORY:
        return None if m.max_rss_kb is None or m.max_rss_kb <= 0 else float(m.max_rss_kb) * 1024.0
    return float(m.wall_seconds)


def _plain(params: Mapping[str, Any]) -> dict[str, Any]:
    """An estimator's parameters as JSON-able values (tuples become lists)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in params.items()}
