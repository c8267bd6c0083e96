"""Transforms of features and run times the zoo's members share."""

from __future__ import annotations

from typing import Any

import numpy as np

MIN_SECONDS = 1e-3


def signed_log1p(x: Any) -> Any:
    """log1p of magnitudes with the sign kept: compresses wide ranges and accepts negatives."""
    return np.sign(x) * np.log1p(np.abs(x))


def log_seconds(y: Any) -> Any:
    """Natural log of run times, floored at a millisecond so a zero-second run stays finite."""
    return np.log(np.maximum(y, MIN_SECONDS))
