"""What CI must run but a developer's machine may lack (tools, PostgreSQL, the real traces): skipped here, failed under CI."""

from __future__ import annotations

import os
import shutil

import pytest


def required(available: bool, what: str, remedy: str) -> None:
    """Skip the test when ``what`` is not available; under CI (``CI`` set), where it always is, fail saying ``remedy``."""
    __tracebackhide__ = True  # pytest names the caller as where the test was skipped
    if available:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{what}; {remedy}", pytrace=False)
    pytest.skip(what)


def required_tools(*tools: str) -> None:
    """Skip unless every program of ``tools`` is on PATH (under CI, where `make test` installs them, fail)."""
    __tracebackhide__ = True
    missing = [tool for tool in tools if shutil.which(tool) is None]
    required(not missing, f"{', '.join(missing)} not installed", "`make test` installs them (make system-deps)")
