"""The extractor contract shared by every feature extractor."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable


class CostClass(str, Enum):
    """How much of an input an extractor has to read, so callers can budget for it."""

    # only parameters or a file's metadata (size, header)
    METADATA = "metadata"
    # a bounded number of blocks, whatever the input size
    SAMPLED = "sampled"
    FULL_SCAN = "full_scan"  # every byte of the input


class FeatureError(ValueError):
    """An input could not be turned into features; names the input and the problem."""

    def __init__(self, source: str | Path, problem: str) -> None:
        self.source = str(source)
        self.problem = problem
        super().__init__(f"{self.source}: {problem}")


@runtime_checkable
class Extractor(Protocol):
    """Turns one value (usually an input file path) into named numeric features.

    ``feature_names`` lists every key ``extract`` may return; ``cost`` says how
    much of the input it reads.
    """

    name: ClassVar[str]
    feature_names: ClassVar[tuple[str, ...]]
    cost: CostClass

    def extract(self, value: Any) -> dict[str, float]:
        """Return features for ``value``; raise :class:`FeatureError` on bad input."""
        ...
