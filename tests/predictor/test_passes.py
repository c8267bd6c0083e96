"""``every_interval``: passes until stopped, failures of the expected kinds logged and retried, others raised."""

from __future__ import annotations

import logging
import threading

import pytest

from predictor.passes import every_interval

log = logging.getLogger("tests.passes")


def _steps(*outcomes: object, stop: threading.Event):
    """A step that returns or raises each of ``outcomes`` in turn and sets ``stop`` after the last."""
    left = list(outcomes)

    def step() -> object:
        outcome = left.pop(0)
        if not left:
            stop.set()
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return step


def test_a_failed_pass_is_logged_and_the_next_one_runs(caplog: pytest.LogCaptureFixture) -> None:
    stop, seen = threading.Event(), []
    step = _steps(1, OSError("busy"), 3, stop=stop)
    with caplog.at_level(logging.WARNING, logger="tests.passes"):
        every_interval(step, 0.0, stop, what="test pass", log=log, on_pass=seen.append, retry_on=(OSError,), quiet=True)
    assert seen == [1, 3]
    (record,) = caplog.records
    assert record.levelno == logging.WARNING and record.getMessage() == "test pass failed; trying again in 0 s: busy"
    assert record.exc_info is None  # quiet: one line


def test_an_unexpected_failure_keeps_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    stop = threading.Event()
    with caplog.at_level(logging.ERROR, logger="tests.passes"):
        every_interval(_steps(ValueError("odd"), 2, stop=stop), 0.0, stop, what="test pass", log=log)
    (record,) = caplog.records
    assert record.levelno == logging.ERROR and record.exc_info is not None


def test_a_failure_of_another_kind_ends_the_loop() -> None:
    stop = threading.Event()
    with pytest.raises(ValueError, match="odd"):
        every_interval(
            _steps(ValueError("odd"), 2, stop=stop), 0.0, stop, what="test pass", log=log, retry_on=(OSError,)
        )
    assert not stop.is_set()  # the second pass never ran
