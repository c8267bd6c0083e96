"""One run's record, a row of a file or an observation sent to the API, validated into a storable Measurement.

Checked, in order: the algorithm, the platform and that one runs on the other (the catalog); every
parameter against its schema; the fields strictly typed (a boolean is no number, a number no time, no wall time over a
year, no peak memory above the platform's ``memory_gb``);
the measurement itself; then what the store's columns hold on every backend alike
(:mod:`predictor.store.limits`: text within its ``String(n)`` and free of NUL characters, integers
within ``Integer`` or ``BigInteger``, times within the years 1 to 9999 in UTC), where SQLite would
store a value that makes PostgreSQL refuse the whole batch. A record that names input files and gives no features gets the features read
from them; an input that cannot be read rejects the record, since a run without features is no use
to the models. Each problem is a :class:`RowError` naming the field, so the file row or the
observation alone is turned away.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import TypeAdapter, ValidationError

from features import FeatureError
from predictor.catalog import Algorithm, Catalog, Parameter, Platform
from predictor.domain import MAX_WALL_SECONDS, SCALAR_FIELDS, Measurement, Source
from predictor.jobfeatures import budget_options, file_parameters, job_features, known_feature_names
from predictor.store.limits import unstorable

OBJECTS = {"params": "param.", "features": "feature.", "context": "context."}  # object column -> prefix of one entry
ROW = "(row)"
REAL_FIELDS = ("wall_seconds", "cpu_seconds")
INTEGER_FIELDS = ("max_rss_kb", "exit_status")

DATETIME = TypeAdapter(datetime)  # parses times as the Measurement would
Locate = Callable[[str], Path]
"""Where the file a file parameter names is read from; raises ValueError or OSError saying why it may not be."""


class RowError(Exception):
    """One row's (or record's) first problem: the field that failed and why."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Defaults:
    """Values for fields a record leaves out (never overriding one it gives)."""

    algorithm: str | None = None
    platform: str | None = None
    machine: str | None = None
    source: Source = Source.PRODUCTION


@dataclass
class Record:
    """A record's present cells: fields by name; per object column its JSON object (a dict or its text) and single entries."""

    fields: dict[str, Any] = field(default_factory=dict)
    objects: dict[str, Any] = field(default_factory=dict)
    entries: dict[str, dict[str, Any]] = field(default_factory=lambda: {kind: {} for kind in OBJECTS})


def validate_record(
    record: dict[str, Any],
    catalog: Catalog,
    *,
    source: Source = Source.PRODUCTION,
    locate: Locate = Path,
    budget_s: float | None = None,
) -> Measurement:
    """Validate one record (fields by name; ``params``, ``features``, ``context`` as objects) exactly as a file row.

    Raises RowError naming the first bad field; the API's observations and SWF jobs come through here.
    """
    cells = {name: plain(value) for name, value in record.items() if not missing(value)}
    objects = {kind: cells.pop(kind) for kind in OBJECTS if kind in cells}
    return validate(Record(cells, objects), catalog, Defaults(source=Source(source)), locate, budget_s)


def validate(
    record: Record, catalog: Catalog, defaults: Defaults, locate: Locate = Path, budget_s: float | None = None
) -> Measurement:
    """A storable Measurement from ``record``, ``defaults`` filling the fields it leaves out, or RowError.

    Input files a record names are found by ``locate`` and each read within ``budget_s`` seconds (None: no limit)."""
    data = _typed_fields(record.fields)
    for name, value in (
        ("algorithm", defaults.algorithm),
        ("platform", defaults.platform),
        ("machine", defaults.machine),
    ):
        if name not in data and value is not None:
            data[name] = value
    data.setdefault("source", defaults.source.value)
    algorithm = _check_catalog(data, catalog)
    params = _merged(record, "params", partial(_param, algorithm.parameters))
    features = _merged(record, "features", _feature)
    context = _merged(record, "context", lambda _name, value: value)
    if "wall_seconds" not in data:
        raise RowError("wall_seconds", "missing: the wall time is the target the models learn")
    if data["wall_seconds"] > MAX_WALL_SECONDS:
        raise RowError(
            "wall_seconds", f"{data['wall_seconds']:g} s is over a year ({MAX_WALL_SECONDS} s): not a plausible run"
        )
    _check_peak(data.get("max_rss_kb"), catalog.platforms[data["platform"]])
    if features:
        check_feature_names(features, known_feature_names(algorithm))
    else:
        features = _input_features(algorithm, params, locate, budget_s)
    try:
        measurement = Measurement.model_validate(
            {
                **data,
                "run_id": data.get("run_id", "pending"),
                "params": params,
                "features": features,
                "context": context,
            }
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        raise RowError(_field_name(error["loc"]), error["msg"]) from None
    _check_storable(measurement)
    if "run_id" not in data:
        measurement = measurement.model_copy(update={"run_id": _derived_run_id(measurement, "recorded_at" in data)})
    return measurement


def _typed_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """The record's fields, numbers and times checked strictly; the rest is left to the Measurement's own checks."""
    data = {name: fields[name] for name in SCALAR_FIELDS if name in fields}
    for name in REAL_FIELDS:
        if name in data:
            data[name] = _number(name, data[name])
    for name in INTEGER_FIELDS:
        if name in data:
            data[name] = _integer(name, data[name])
    if "recorded_at" in data:
        data["recorded_at"] = parse_timestamp(data["recorded_at"])
    if "censored" in data:
        data["censored"] = _flag("censored", data["censored"])
    return data


def _check_peak(max_rss_kb: Any, platform: Platform) -> None:
    """RowError for a peak memory above the platform's (its catalog ``memory_gb``, its largest node's): no run there
    reached it, and a model trained on it would serve memory limits no node has."""
    if isinstance(max_rss_kb, int) and max_rss_kb * 1024 > platform.memory_bytes:
        raise RowError(
            "max_rss_kb",
            f"{max_rss_kb} KiB is above the memory of a {platform.name} machine ({platform.memory_gb:g} GB): "
            "not a peak a run there can reach",
        )


def check_feature_names(features: dict[str, float], known: frozenset[str]) -> None:
    """RowError for features the run's algorithm does not have: stored, they would widen every export and training
    table with a column no extractor fills."""
    unknown = sorted(set(features) - known)
    if unknown:
        shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise RowError("features", f"unknown feature(s) {shown}; known: {', '.join(sorted(known))}")


def _check_catalog(data: dict[str, Any], catalog: Catalog) -> Algorithm:
    """The row's catalog algorithm, after checking the algorithm, the platform and that one runs on the other."""
    for name, known in (("algorithm", catalog.algorithms), ("platform", catalog.platforms)):
        if name not in data:
            raise RowError(name, f"missing: give a {name} column or the {name} option")
        if data[name] not in known:
            raise RowError(name, f"unknown {name} {data[name]!r}; known: {', '.join(sorted(known))}")
    algorithm = catalog.algorithms[data["algorithm"]]
    if data["platform"] not in algorithm.implementations:
        raise RowError(
            "platform",
            f"{algorithm.name} has no implementation on {data['platform']!r}; on: {', '.join(algorithm.platforms)}",
        )
    return algorithm


def _merged(record: Record, kind: str, convert: Callable[[str, Any], Any]) -> dict[str, Any]:
    """Converted entries of a JSON-object column and its prefixed columns; a key given twice must agree."""
    entries = record.entries[kind]
    if kind not in record.objects:
        return {name: convert(name, value) for name, value in entries.items()}
    value = record.objects[kind]
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise RowError(kind, f"not valid JSON: {exc.msg}") from None
    if not isinstance(value, dict):
        raise RowError(kind, f"must be a JSON object, got {type(value).__name__}")
    merged = {str(k): convert(str(k), plain(v)) for k, v in value.items()}
    for name, value in entries.items():
        value = convert(name, value)
        if name in merged and merged[name] != value:
            raise RowError(
                f"{OBJECTS[kind]}{name}", f"also in the {kind} column with a different value ({merged[name]!r})"
            )
        merged[name] = value
    return merged


def typed_params(algorithm: Algorithm, raw: dict[str, Any]) -> dict[str, Any]:
    """Parameters (text or values) converted to their schema types and checked; RowError naming the first bad one."""
    return {name: _param(algorithm.parameters, name, value) for name, value in raw.items()}


def _param(schema: dict[str, Parameter], name: str, value: Any) -> Any:
    """One parameter value converted to its schema type and checked against its bounds or choices."""
    field = f"param.{name}"
    if name not in schema:
        raise RowError(field, f"not a parameter of this algorithm; known: {', '.join(sorted(schema))}")
    spec = schema[name]
    if spec.type == "bool":
        return _boolean(field, value)
    if spec.type == "categorical":
        if str(value) not in (spec.choices or []):
            raise RowError(field, f"{value!r} is not one of {', '.join(spec.choices or [])}")
        return str(value)
    if spec.type in ("string", "file"):
        if isinstance(value, (dict, list)):
            raise RowError(field, f"expected text, got {type(value).__name__}")
        return str(value)
    converted = _integer(field, value) if spec.type == "int" else _number(field, value)
    if spec.min is not None and converted < spec.min:
        raise RowError(field, f"{converted} is below the minimum {spec.min}")
    if spec.max is not None and converted > spec.max:
        raise RowError(field, f"{converted} is above the maximum {spec.max}")
    return converted


def _number(field: str, value: Any) -> float:
    """A finite float from a number or numeric text; a boolean is not a number."""
    if isinstance(value, bool):
        raise RowError(field, f"expected a number, got {value!r}")
    try:
        converted = float(value)
    except (TypeError, ValueError, OverflowError):
        raise RowError(field, f"expected a number, got {value!r}") from None
    if not math.isfinite(converted):
        raise RowError(field, f"must be a finite number, got {value!r}")
    return converted


def _feature(name: str, value: Any) -> float:
    """A feature's value, a finite float (the common case first, without building the field's name)."""
    if not isinstance(value, bool):
        try:
            converted = float(value)
        except (TypeError, ValueError, OverflowError):
            converted = math.nan
        if math.isfinite(converted):
            return converted
    return _number(f"feature.{name}", value)


def _integer(field: str, value: Any) -> int:
    """An integer from an integer, integer text or a whole float; a boolean is not a number."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            # exact, where a float would round large values
            return int(value)
        except ValueError:
            pass
    if not isinstance(value, bool):
        try:
            converted = float(value)
        except (TypeError, ValueError, OverflowError):
            converted = math.nan
        if converted.is_integer():
            return int(converted)
    raise RowError(field, f"expected an integer, got {value!r}")


def _boolean(field: str, value: Any) -> bool:
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise RowError(field, f"expected true or false, got {value!r}")


def _flag(field: str, value: Any) -> bool:
    """A strict yes/no: a boolean, 1/0, or the text true/false/1/0; a looser reading could turn a time into a bound."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in ("true", "1", "false", "0"):
        return text in ("true", "1")
    raise RowError(field, f"expected true or false (or 1 or 0), got {value!r}")


def parse_timestamp(value: Any) -> datetime:
    """A time in UTC (naive is UTC) from a datetime or ISO 8601 text; a number is refused, not taken as epoch seconds."""
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            try:
                value = DATETIME.validate_python(value)
            except ValidationError as exc:
                raise RowError("recorded_at", exc.errors()[0]["msg"]) from None
    if not isinstance(value, datetime):
        raise RowError(
            "recorded_at", f"expected an ISO 8601 date and time (e.g. 2026-03-01T12:00:00+02:00), got {value!r}"
        )
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise RowError("recorded_at", f"{value.isoformat()} is outside the years 1 to 9999 once in UTC") from None


def _input_features(
    algorithm: Algorithm, params: dict[str, Any], locate: Locate, budget_s: float | None
) -> dict[str, float]:
    """Features of the input files ``params`` names (and of its parameters), or {} when it names none; RowError if unreadable."""
    named = {name: params[name] for name in file_parameters(algorithm) if name in params}
    if not named:
        return {}
    located = dict(params)
    for name, value in named.items():
        try:
            located[name] = str(locate(value))
        except (ValueError, OSError) as exc:
            raise RowError(f"param.{name}", f"{_unreadable(value)}: {exc}") from None
    try:
        return job_features(algorithm, located, **budget_options(algorithm, budget_s))
    except FeatureError as exc:
        failed = next((n for n in named if located[n] == exc.source), None)
        where = f"param.{failed}" if failed else "params"
        raise RowError(
            where, f"{_unreadable(named[failed]) if failed else 'the inputs cannot be read'}: {exc.problem}"
        ) from None


def _unreadable(value: str) -> str:
    """The start of a message about an input file the record names but that cannot be read."""
    return f"no features given and input {value!r} cannot be read (give the run's features, feature.* columns)"


def _check_storable(m: Measurement) -> None:
    """Raise RowError when a value does not fit its column of the store on every backend (JSON columns take any)."""
    if (problem := unstorable(m)) is not None:
        raise RowError(*problem)


def _field_name(loc: tuple[int | str, ...]) -> str:
    """The column name a pydantic error location corresponds to."""
    if len(loc) > 1 and loc[0] in OBJECTS:
        return f"{OBJECTS[str(loc[0])]}{loc[1]}"
    return str(loc[0]) if loc else ROW


def _derived_run_id(m: Measurement, has_time: bool) -> str:
    """A run_id hashed from the row's validated content, so the same row always gets the same id."""
    # A finished run's id leaves ``censored`` out, so it is the id that run had before the flag existed.
    content = m.model_dump(
        mode="json", exclude={"run_id", "source", "recorded_at", *(() if m.censored else ("censored",))}
    )
    content["recorded_at"] = m.recorded_at.isoformat() if has_time else None
    digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()
    return f"ingest-{digest}"


def missing(value: Any) -> bool:
    """Whether a cell is empty: blank text, None or NaN (objects and arrays never are)."""
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, (dict, list, tuple, np.ndarray)):
        return False
    return value is None or bool(pd.isna(value))


def plain(value: Any) -> Any:
    """Python values for pydantic and JSON: stripped text, no numpy scalars or arrays, datetimes for timestamps."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, pd.Timestamp):
        return value.to_pydatetime()
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return value
