"""What the store's tables hold on every backend alike, read from their columns: text within its ``String(n)`` and
free of NUL characters, integers within ``Integer`` or ``BigInteger`` (SQLite would store more, and PostgreSQL then
refuses the whole batch)."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from functools import partial
from typing import Any

from sqlalchemy import BigInteger, Column, Integer, String

from predictor.domain import Measurement
from predictor.store.tables import measurements


def unstorable(m: Measurement) -> tuple[str, str] | None:
    """The first field of ``m`` whose value does not fit its column, and why; None when every one fits."""
    for name, problem_of in COLUMN_CHECKS:
        value = getattr(m, name)
        if value is not None and (problem := problem_of(value)):
            return name, problem
    return None


def _column_checks() -> list[tuple[str, Callable[[Any], str | None]]]:
    """For each column of the measurements table that holds a Measurement field of a limited type: the field and a check."""
    checks: list[tuple[str, Callable[[Any], str | None]]] = []
    for column in measurements.columns:
        field = Measurement.model_fields.get(column.name)
        if field is None or (isinstance(field.annotation, type) and issubclass(field.annotation, Enum)):
            # not a field, or one of a few short names
            continue
        if isinstance(column.type, String | Integer):  # BigInteger included
            checks.append((column.name, partial(column_problem, column)))
    return checks


def column_problem(column: Column[Any], value: Any) -> str | None:
    """Why ``value`` cannot be stored in ``column`` of any table (text too long or with a NUL, an integer too wide);
    None when it fits."""
    kind = column.type
    if isinstance(kind, String) and isinstance(value, str):
        return _text_problem(value, kind.length)
    if isinstance(kind, Integer) and isinstance(value, int):
        return _integer_problem(value, 64 if isinstance(kind, BigInteger) else 32)
    return None


def _text_problem(text: str, length: int | None) -> str | None:
    """Why text cannot be stored: over ``length`` characters, or a NUL character (PostgreSQL's text refuses it)."""
    if length is not None and len(text) > length:
        return f"{len(text)} characters is over the store's limit of {length}"
    return "text must not contain NUL characters" if "\x00" in text else None


def _integer_problem(value: int, bits: int) -> str | None:
    limit = 2 ** (bits - 1)
    return None if -limit <= value < limit else f"{value} does not fit the store's {bits}-bit integer column"


COLUMN_CHECKS = _column_checks()
