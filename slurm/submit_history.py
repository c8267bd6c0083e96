"""History features of a job at its submission, from its request and its user's live history in the store.

The features are :data:`features.history.FEATURE_NAMES`, computed by :func:`features.history.features_at`, the code
the SWF replay uses, applied to the user's state read by :meth:`JobHistory.user_state`: a job of a site and the same
job replayed from a log get the same features.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo

from features.history import UserHistory, features_at
from predictor.store.job_history import JobHistory


@dataclass(frozen=True)
class Submission:
    """A job being submitted, as far as its history features read it: where, by whom, when (timezone-aware) and what
    it asks for (None: unknown).

    ``seq`` places it among jobs recorded as submitted at the same instant (a log's line order); None puts it after
    all of them, as for a job not recorded yet.
    """

    cluster: str
    user: str
    submit: datetime
    time_limit_s: float | None
    procs: int | None
    seq: int | None = None


def submit_features(history: JobHistory, job: Submission, tz: tzinfo = UTC) -> dict[str, float]:
    """The job's history features from what the store knew at its submit time (hour and weekday read in ``tz``)."""
    return _features(history, job, history.user_state(job.cluster, job.user, job.submit, job.seq), tz)


def submit_features_of_many(
    history: JobHistory, jobs: Sequence[Submission], tz: tzinfo | None = None
) -> list[dict[str, float]]:
    """:func:`submit_features` of each of ``jobs``, in their order (hours and weekdays read in ``tz``, else in each
    submit time's own zone): each user's states read in one pass (:meth:`JobHistory.user_states`), so an import
    costs in proportion to its users' jobs, not their square."""
    mine: dict[tuple[str, str], list[int]] = {}
    for index, job in enumerate(jobs):
        mine.setdefault((job.cluster, job.user), []).append(index)
    out: list[dict[str, float]] = [{} for _ in jobs]
    for (cluster, user), indices in mine.items():
        states = history.user_states(cluster, user, [(jobs[i].submit, jobs[i].seq) for i in indices])
        for index, state in zip(indices, states, strict=True):
            out[index] = _features(history, jobs[index], state, tz or jobs[index].submit.tzinfo or UTC)
    return out


def _features(history: JobHistory, job: Submission, state: UserHistory, tz: tzinfo) -> dict[str, float]:
    """The job's features from its user's state at its submit time."""
    first = job.submit
    # only a user's first job reads the site's first submission
    if not state.submitted:
        known = history.first_submit(job.cluster)
        first = min(first, known) if known is not None else first
    return features_at(
        job.submit.timestamp(), job.time_limit_s, job.procs, state, first_submit=first.timestamp(), tz=tz
    )
