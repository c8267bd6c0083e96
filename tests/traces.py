"""The real workload traces: ``../shared/data/traces`` beside the repository; tests skip only where it is absent."""

from __future__ import annotations

from pathlib import Path

from tests.required import required

TRACES = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "traces"


def trace(name: str) -> Path:
    """Path of one real log; skips when the traces folder is absent (fails under CI=1, which always has it)."""
    __tracebackhide__ = True
    what = f"real traces folder {TRACES.resolve()} is absent (it sits beside the repository clone)"
    required(TRACES.is_dir(), what, "CI must run the real-trace tests")
    return TRACES / name
