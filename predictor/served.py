"""What the service serves for a model's raw answers, in one place for the oracle and for forward validation.

The oracle does not hand out a champion's raw prediction: a row outside the champion's training envelope is answered
by the envelope's monotone power law, nothing is served below the pair's fastest finished run, and a job that carries
its own request (a job class's) is never served more run time than it asked for. Forward validation scores a
learned member's answers shaped the same way (:mod:`training.crossval`), so the member chosen is judged on what would
be served, not on what its model alone would say.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from features.history import REQUEST_TIME
from predictor.envelope import Check, TrainingEnvelope
from predictor.intervals import MIN_SECONDS


def served_points(raw: np.ndarray, X: np.ndarray, envelope: TrainingEnvelope | None) -> tuple[np.ndarray, Check | None]:
    """Raw answers for rows ``X`` (in the envelope's feature order) as served: by the envelope's law outside it, floored
    at its fastest run (a millisecond without an envelope); NaN stays NaN. With where the rows lie."""
    check = None
    with np.errstate(all="ignore"):
        seconds = np.asarray(raw, dtype="float64")
        if envelope is not None:
            check = envelope.check(X)
            if check.outside.any():
                seconds = np.where(check.outside, envelope.law(X), seconds)
        return np.maximum(seconds, envelope.floor if envelope is not None else MIN_SECONDS), check


def cap_at_request(answers: dict[str, np.ndarray], names: Sequence[str], X: np.ndarray) -> None:
    """Cap every run-time answer at the job's own request (``request.time``, where the rows carry a positive one, as a
    job class's do): the job is killed there, so it cannot run longer. Its limit *is* the request: the prediction
    plans, the request kills, as in EASY++ (Tsafrir, Etsion & Feitelson 2007). Limits tightened below the request,
    wherever forward validation judged them safe, were outlived more often than the requests on the later jobs
    (wagap-2013: 4.8 % against 3.1 %, docs/results/live-accuracy.md). Lower ends stay at or below the point."""
    if REQUEST_TIME not in names:
        return
    request = X[:, list(names).index(REQUEST_TIME)]
    known = np.isfinite(request) & (request > 0)
    if not known.any():
        return
    for key in ("seconds", "upper"):
        if key in answers:
            answers[key] = np.where(known, np.minimum(answers[key], request), answers[key])
    if "limit" in answers:
        answers["limit"] = np.where(known, request, answers["limit"])
    if "lower" in answers:
        answers["lower"] = np.minimum(answers["lower"], answers["seconds"])
