"""What a platform can run, and answers capped there: no time above a year, no memory above the platform's.

A model asked about features far beyond anything it saw (every feature at 1e15) can answer 4e26 s, or 1e167 bytes:
numbers no job can take, and walltimes and ``--mem`` sizes no scheduler accepts. Every answer of the oracle is capped at
what a platform can run, a year of run time (:data:`predictor.domain.MAX_WALL_SECONDS`, the longest run the store
takes) and the platform's memory (its catalog ``memory_gb``, its largest node's), and its ``reason`` says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from predictor.domain import MAX_WALL_SECONDS, Estimate, EstimateColumns

TIME_FIELDS = ("seconds", "lower", "upper", "limit")
MEMORY_FIELDS = ("memory", "memory_lower", "memory_upper", "memory_limit")
Columns = TypeVar("Columns", bound=EstimateColumns)


@dataclass(frozen=True)
class _Ceiling:
    """A group of an estimate's fields, the most any of them may be, and what an answer capped there is told."""

    fields: tuple[str, ...]
    most: float
    says: str
    unit: str

    def note(self, top: float) -> str:
        return f"{self.says}: the model answered up to {top:.3g} {self.unit}"


def _ceilings(memory_bytes: float) -> tuple[_Ceiling, ...]:
    return (
        _Ceiling(TIME_FIELDS, MAX_WALL_SECONDS, f"capped at a year ({MAX_WALL_SECONDS:,} s), the longest run", "s"),
        _Ceiling(
            MEMORY_FIELDS,
            memory_bytes,
            f"memory capped at the platform's {memory_bytes:,.0f} bytes (its nodes')",
            "bytes",
        ),
    )


def within_reach(estimate: Estimate, memory_bytes: float) -> Estimate:
    """``estimate`` with every time above a year and every memory above ``memory_bytes`` capped there, its reason
    saying which (the same object when nothing was over)."""
    changes: dict[str, object] = {}
    notes = []
    for ceiling in _ceilings(memory_bytes):
        values = [v for name in ceiling.fields if (v := getattr(estimate, name)) is not None]
        if values and max(values) > ceiling.most:
            changes.update(
                {name: ceiling.most for name in ceiling.fields if (getattr(estimate, name) or 0) > ceiling.most}
            )
            notes.append(ceiling.note(max(values)))
    if not changes:
        return estimate
    changes["reason"] = "; ".join([*([estimate.reason] if estimate.reason else []), *notes])
    return estimate.model_copy(update=changes)


def columns_within_reach(column: Columns, memory_bytes: float) -> Columns:
    """:func:`within_reach` for every row of ``column``; its one reason counts the rows capped."""
    changes: dict[str, object] = {}
    notes = []
    for ceiling in _ceilings(memory_bytes):
        lists = {name: values for name in ceiling.fields if (values := getattr(column, name)) is not None}
        rows = {i for values in lists.values() for i, v in enumerate(values) if v is not None and v > ceiling.most}
        if rows:
            for name, values in lists.items():
                changes[name] = [ceiling.most if v is not None and v > ceiling.most else v for v in values]
            top = max(v for values in lists.values() for v in values if v is not None)
            notes.append(f"{len(rows)} row(s) {ceiling.note(top)}")
    if not changes:
        return column
    changes["reason"] = "; ".join([*([column.reason] if column.reason else []), *notes])
    return column.model_copy(update=changes)
