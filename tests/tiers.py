"""The quick tier's tripwire: a test not marked ``server`` that starts a real server fails, naming the list to fix.

tests/conftest.py marks the tests that start real servers (``SERVERS``) and sets :data:`running` to the node id of
each test outside that mark while it runs; the starters in tests/pgserver.py, tests/slurmserver.py,
tests/livesrv.py and tests/raycluster.py call :func:`starting` first. Benchmarks, which use the same starters
outside pytest, are never stopped (``running`` stays None).
"""

from __future__ import annotations

import pytest

running: str | None = None
"""The node id of the test of the quick tier (not marked ``server``) now running, else None."""


def starting(what: str) -> None:
    """Fail the running test if it belongs to the quick tier: it starts ``what``, a real server."""
    __tracebackhide__ = True
    if running is not None:
        pytest.fail(
            f"{running} starts {what} but is not marked `server`: add it to SERVERS in tests/conftest.py", pytrace=False
        )
