"""The real workload traces: ``../shared/data/traces`` beside the repository; tests skip only where it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

TRACES = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "traces"


def trace(name: str) -> Path:
    """Path of one real log; skips when the traces folder is absent (fails under CI=1, which always has it)."""
    if not TRACES.is_dir():
        message = f"real traces folder {TRACES.resolve()} is absent (it sits beside the repository clone)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}; CI must run the real-trace tests", pytrace=False)
        pytest.skip(message)
    return TRACES / name
