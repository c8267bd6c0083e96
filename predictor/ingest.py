"""Bring measurements in from CSV or Parquet files: validate every row, store the good ones, report and keep the bad.

Column conventions (after ``mapping`` renames source columns, e.g. ``{"runtime": "wall_seconds"}``):

- a :class:`~predictor.domain.Measurement` field by name (``run_id``, ``algorithm``, ``platform``, ``machine``,
  ``wall_seconds``, ``cpu_seconds``, ``max_rss_kb``, ``exit_status``, ``censored``, ``cache_state``, ``source``,
  ``recorded_at``); ``censored`` is ``true``/``false`` or ``1``/``0`` (any case), nothing else, and a censored run
  (stopped before it finished: its wall time is a lower bound) needs ``wall_seconds`` > 0;
- ``param.<name>``, ``feature.<name>`` and ``context.<name>`` for one entry of params, features or context;
- ``params``, ``features`` and ``context`` holding a JSON object each;
- ``_line``, ``_field`` and ``_error`` are ignored, so a corrected rejects file can be ingested as it is.

Any other column is an error: map it (``col=context.col``) rather than have it vanish. Empty cells are missing
values; the ``algorithm``, ``platform``, ``machine`` and ``source`` options fill missing cells (or absent columns)
and never override a value in the file. A missing ``recorded_at`` means now, and a naive one is taken as UTC.
A row without ``run_id`` gets a deterministic one hashed from its validated content (its time only if the file
gives it), so ingesting the same file again stores nothing new; identical rows without ids count as duplicates.

Lines are physical line numbers in a CSV file (the header is line 1); for Parquet, the data row's position
plus one, as the same table exported to CSV would number it. Each rejected row is reported once, with its
first problem, and copied to ``<stem>.rejects.csv`` beside the input with ``_line``, ``_field`` and ``_error``.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from pydantic import ValidationError

from predictor.catalog import Algorithm, Catalog, Parameter
from predictor.domain import Measurement, Source
from predictor.store import MeasurementStore

FIELDS = (
    "run_id", "algorithm", "platform", "machine", "wall_seconds", "cpu_seconds",
    "max_rss_kb", "exit_status", "censored", "cache_state", "source", "recorded_at",
)  # fmt: skip
OBJECT_COLUMNS = ("params", "features", "context")
PREFIXES = {"param.": "params", "feature.": "features", "context.": "context"}
REJECT_COLUMNS = ("_line", "_field", "_error")
ROW = "(row)"


class IngestError(ValueError):
    """The file as a whole cannot be ingested: unreadable, unsupported, empty or with unusable columns."""


@dataclass(frozen=True)
class Reject:
    """One rejected row: where it is in the file, which field failed and why."""

    line: int
    field: str
    message: str


@dataclass
class IngestReport:
    """Outcome of one file; ``rows == stored + duplicates + len(skipped) + len(rejected)`` always holds.

    ``skipped`` rows are valid but not measurements (e.g. a log's job whose run time is unknown); CSV and Parquet
    rows are never skipped.
    """

    path: Path
    rows: int
    stored: int
    duplicates: int
    rejected: list[Reject]
    rejects_path: Path | None
    skipped: tuple[Reject, ...] = ()


class RowError(Exception):
    """One row's (or record's) first problem: the field that failed and why."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class _Defaults:
    algorithm: str | None
    platform: str | None
    machine: str | None
    source: Source


def ingest_file(
    path: str | Path,
    store: MeasurementStore,
    catalog: Catalog,
    *,
    algorithm: str | None = None,
    platform: str | None = None,
    mapping: dict[str, str] | None = None,
    source: Source = Source.IMPORT,
    machine: str | None = None,
    file_format: str | None = None,
    rejects_dir: Path | None = None,
) -> IngestReport:
    """Validate every row of a CSV or Parquet file against the catalog and store the good rows in one transaction.

    ``file_format`` (``csv`` or ``parquet``) overrides the file's suffix; ``rejects_dir`` is where the rejects
    file goes instead of beside the input.
    """
    path = Path(path)
    check_options(catalog, algorithm, platform)
    header, records = _read(path, f".{file_format}" if file_format else path.suffix.lower())
    targets = _targets(path, header, mapping or {})
    defaults = _Defaults(algorithm, platform, machine, Source(source))
    good: list[Measurement] = []
    bad: list[tuple[list[Any], Reject]] = []
    for line, values in records:
        try:
            good.append(_measurement(values, targets, catalog, defaults))
        except RowError as exc:
            bad.append((values, Reject(line, exc.field, exc.message)))
    rejects_path = write_rejects(path, header, bad, rejects_dir)
    result = store.add(good)
    return IngestReport(
        path=path,
        rows=len(records),
        stored=len(result.stored),
        duplicates=len(result.duplicates),
        rejected=[reject for _, reject in bad],
        rejects_path=rejects_path,
    )


def check_options(catalog: Catalog, algorithm: str | None, platform: str | None) -> None:
    """Raise IngestError when the algorithm or platform option is not in the catalog."""
    if algorithm is not None and algorithm not in catalog.algorithms:
        raise IngestError(f"unknown algorithm option {algorithm!r}; known: {', '.join(sorted(catalog.algorithms))}")
    if platform is not None and platform not in catalog.platforms:
        raise IngestError(f"unknown platform option {platform!r}; known: {', '.join(sorted(catalog.platforms))}")


def _read(path: Path, suffix: str) -> tuple[list[str], list[tuple[int, list[Any]]]]:
    """Header and (line, values) records of a file read as ``suffix`` says; IngestError when nothing is usable."""
    reader = READERS.get(suffix)
    if reader is None:
        raise IngestError(f"{path}: unsupported file type {suffix or '(none)'!r}; expected .csv or .parquet")
    try:
        header, records = reader(path)
    except OSError as exc:
        raise IngestError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except (csv.Error, pa.ArrowException, ValueError) as exc:
        raise IngestError(f"{path}: not a readable {suffix[1:]} file: {exc}") from exc
    if not header:
        raise IngestError(f"{path}: the file is empty")
    if not records:
        raise IngestError(f"{path}: the file has a header but no data rows")
    return header, records


def _read_csv(path: Path) -> tuple[list[str], list[tuple[int, list[Any]]]]:
    """Rows with the physical line each starts on; blank lines are not rows."""
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh)
        header: list[str] = []
        records: list[tuple[int, list[Any]]] = []
        for start, row in _numbered(reader):
            if not row:
                continue
            if not header:
                header = [name.strip() for name in row]
            else:
                records.append((start, row))
    return header, records


def _numbered(reader: Any) -> Iterator[tuple[int, list[str]]]:
    """Each CSV record with the line it starts on, even when quoted cells span lines."""
    start = 1
    for row in reader:
        yield start, row
        start = reader.line_num + 1


def _read_parquet(path: Path) -> tuple[list[str], list[tuple[int, list[Any]]]]:
    frame = pd.read_parquet(path)
    header = [str(name) for name in frame.columns]
    rows = frame.astype(object).itertuples(index=False, name=None)
    return header, [(position + 2, list(row)) for position, row in enumerate(rows)]


READERS = {".csv": _read_csv, ".parquet": _read_parquet, ".pq": _read_parquet}


def _targets(path: Path, header: list[str], mapping: dict[str, str]) -> list[str | None]:
    """The field each column feeds (None: ignored), after mapping; unknown or clashing columns raise IngestError."""
    missing = sorted(set(mapping) - set(header))
    if missing:
        raise IngestError(f"{path}: mapped columns not in the file: {', '.join(missing)}; columns: {', '.join(header)}")
    targets: list[str | None] = []
    for column in header:
        target = mapping.get(column, column)
        targets.append(None if target in REJECT_COLUMNS and column not in mapping else target)
    unknown = [t for t in targets if t is not None and not _known_target(t)]
    if unknown:
        raise IngestError(
            f"{path}: unknown columns: {', '.join(map(repr, unknown))}; name a field ({', '.join(FIELDS)}), "
            "params/features/context, or param.<name>, feature.<name>, context.<name> (rename with a mapping)"
        )
    seen: dict[str, str] = {}
    for column, target in zip(header, targets, strict=True):
        if target is not None and target in seen:
            raise IngestError(f"{path}: columns {seen[target]!r} and {column!r} both give {target!r}")
        if target is not None:
            seen[target] = column
    return targets


def _known_target(target: str) -> bool:
    if target in FIELDS or target in OBJECT_COLUMNS:
        return True
    return any(target.startswith(prefix) and len(target) > len(prefix) for prefix in PREFIXES)


def validate_record(record: dict[str, Any], catalog: Catalog, *, source: Source = Source.PRODUCTION) -> Measurement:
    """Validate one record (fields by name; ``params``, ``features``, ``context`` as objects) exactly as a file row.

    Raises RowError naming the first bad field; the API's observations come through here.
    """
    cells = {name: _plain(value) for name, value in record.items() if not _missing(value)}
    return _validated(cells, catalog, _Defaults(None, None, None, Source(source)))


def _measurement(values: list[Any], targets: list[str | None], catalog: Catalog, defaults: _Defaults) -> Measurement:
    """Validate one row into a Measurement, or raise RowError naming the first bad field."""
    if len(values) != len(targets):
        raise RowError(ROW, f"has {len(values)} fields but the header has {len(targets)}")
    cells = {t: _plain(v) for t, v in zip(targets, values, strict=True) if t is not None and not _missing(v)}
    return _validated(cells, catalog, defaults)


def _validated(cells: dict[str, Any], catalog: Catalog, defaults: _Defaults) -> Measurement:
    """A Measurement from cells keyed by target (field, object column or ``prefix.name``), or RowError."""
    data: dict[str, Any] = {name: cells[name] for name in FIELDS if name in cells}
    for name, value in (
        ("algorithm", defaults.algorithm),
        ("platform", defaults.platform),
        ("machine", defaults.machine),
        ("source", defaults.source.value),
    ):
        if name not in data and value is not None:
            data[name] = value
    algorithm = _check_catalog(data, catalog)
    params = _entries(cells, "params", lambda name, value: _param(algorithm.parameters, name, value))
    features = _entries(cells, "features", lambda name, value: _number(f"feature.{name}", value))
    context = _entries(cells, "context", lambda _name, value: value)
    if "wall_seconds" not in data:
        raise RowError("wall_seconds", "missing: the wall time is the target the models learn")
    if "censored" in data:
        data["censored"] = _flag("censored", data["censored"])
    try:
        measurement = Measurement.model_validate(
            {**data, "run_id": data.get("run_id", "pending"), "params": params, "features": features, "context": context}
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        raise RowError(_field_name(error["loc"]), error["msg"]) from None
    recorded_at = measurement.recorded_at
    recorded_at = recorded_at.replace(tzinfo=UTC) if recorded_at.tzinfo is None else recorded_at
    measurement = measurement.model_copy(update={"recorded_at": recorded_at.astimezone(UTC)})
    if "run_id" not in data:
        measurement = measurement.model_copy(update={"run_id": _derived_run_id(measurement, "recorded_at" in data)})
    return measurement


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
            "platform", f"{algorithm.name} has no implementation on {data['platform']!r}; on: {', '.join(algorithm.platforms)}"
        )
    return algorithm


def _entries(cells: dict[str, Any], kind: str, convert: Callable[[str, Any], Any]) -> dict[str, Any]:
    """Converted entries of a JSON-object column and its prefixed columns; a key given twice must agree."""
    merged: dict[str, Any] = {}
    if kind in cells:
        value = cells[kind]
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise RowError(kind, f"not valid JSON: {exc.msg}") from None
        if not isinstance(value, dict):
            raise RowError(kind, f"must be a JSON object, got {type(value).__name__}")
        merged.update({str(k): convert(str(k), _plain(v)) for k, v in value.items()})
    prefix = next(p for p, k in PREFIXES.items() if k == kind)
    for target, value in cells.items():
        if target.startswith(prefix):
            name = target[len(prefix) :]
            value = convert(name, value)
            if name in merged and merged[name] != value:
                raise RowError(target, f"also in the {kind} column with a different value ({merged[name]!r})")
            merged[name] = value
    return merged


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
    number = _integer(field, value) if spec.type == "int" else _number(field, value)
    if spec.min is not None and number < spec.min:
        raise RowError(field, f"{number} is below the minimum {spec.min}")
    if spec.max is not None and number > spec.max:
        raise RowError(field, f"{number} is above the maximum {spec.max}")
    return number


def _number(field: str, value: Any) -> float:
    """A finite float from a number or numeric text."""
    if isinstance(value, bool):
        raise RowError(field, f"expected a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise RowError(field, f"expected a number, got {value!r}") from None
    if not math.isfinite(number):
        raise RowError(field, f"must be a finite number, got {value!r}")
    return number


def _integer(field: str, value: Any) -> int:
    number = _number(field, value)
    if not number.is_integer():
        raise RowError(field, f"expected an integer, got {value!r}")
    return int(number)


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


def _field_name(loc: tuple[int | str, ...]) -> str:
    """The column name a pydantic error location corresponds to."""
    if len(loc) > 1 and loc[0] in OBJECT_COLUMNS:
        return f"{next(p for p, k in PREFIXES.items() if k == loc[0])}{loc[1]}"
    return str(loc[0]) if loc else ROW


def _derived_run_id(m: Measurement, has_time: bool) -> str:
    """A run_id hashed from the row's validated content, so the same row always gets the same id."""
    # A finished run's id leaves ``censored`` out, so it is the id that run had before the flag existed.
    content = m.model_dump(mode="json", exclude={"run_id", "source", "recorded_at", *(() if m.censored else ("censored",))})
    content["recorded_at"] = m.recorded_at.isoformat() if has_time else None
    digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()
    return f"ingest-{digest}"


def _missing(value: Any) -> bool:
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, (dict, list, tuple, np.ndarray)):
        return False
    return value is None or bool(pd.isna(value))


def _plain(value: Any) -> Any:
    """Python values for pydantic and JSON: stripped text, no numpy scalars or arrays, datetimes for timestamps."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, pd.Timestamp):
        return value.to_pydatetime()
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def write_rejects(
    path: Path, header: list[str], bad: list[tuple[list[Any], Reject]], directory: Path | None = None
) -> Path | None:
    """Write rejected rows to ``<stem>.rejects.csv`` in ``directory`` (default: beside the input); drop a stale one."""
    rejects_path = (directory or path.parent) / f"{path.stem}.rejects.csv"
    if not bad:
        rejects_path.unlink(missing_ok=True)
        return None
    keep = [i for i, name in enumerate(header) if name not in REJECT_COLUMNS]
    try:
        rejects_path.parent.mkdir(parents=True, exist_ok=True)
        with rejects_path.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow([header[i] for i in keep] + list(REJECT_COLUMNS))
            for values, reject in bad:
                cells = [_text(values[i]) if i < len(values) else "" for i in keep]
                writer.writerow(cells + [reject.line, reject.field, reject.message])
    except OSError as exc:
        raise IngestError(
            f"{rejects_path}: cannot write the rejects file: {exc.strerror or exc} (choose another folder with --rejects-dir)"
        ) from exc
    return rejects_path


def _text(value: Any) -> str:
    """A cell as text for the rejects CSV; objects as JSON so they can be ingested again."""
    if isinstance(value, str):
        return value
    if _missing(value):
        return ""
    value = _plain(value)
    return json.dumps(value, default=str) if isinstance(value, (dict, list)) else str(value)
