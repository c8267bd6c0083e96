"""Bring measurements in from CSV or Parquet files: validate every row, store the good ones, report and keep the bad.

Column conventions (after ``mapping`` renames source columns, e.g. ``{"runtime": "wall_seconds"}``):

- a :class:`~predictor.domain.Measurement` field by name (``run_id``, ``algorithm``, ``platform``, ``machine``,
  ``wall_seconds``, ``cpu_seconds``, ``max_rss_kb``, ``exit_status``, ``cache_state``, ``source``, ``recorded_at``);
- ``param.<name>``, ``feature.<name>`` and ``context.<name>`` for one entry of params, features or context;
- ``params``, ``features`` and ``context`` holding a JSON object each;
- ``_line``, ``_field`` and ``_error`` are ignored, so a corrected rejects file can be ingested as it is.

Any other column is an error: map it (``col=context.col``) rather than have it vanish. Empty cells are missing
values; the ``algorithm``, ``platform``, ``machine`` and ``source`` options fill missing cells (or absent columns)
and never override a value in the file. A missing ``recorded_at`` means now, and a naive one is taken as UTC.
A row without ``run_id`` gets a deterministic one hashed from its validated content (its time only if the file
gives it), so ingesting the same file again stores nothing new; identical rows without ids count as duplicates.
Each row is validated as :mod:`predictor.records` says; a row without features that names input files gets
theirs, read from the paths as given (relative to the working directory).

The file is streamed: read, validated and stored ``CHUNK_ROWS`` rows at a time, each chunk in a transaction of
its own, so memory stays flat whatever the file's size. A file that turns unreadable part way keeps the chunks
stored before the fault; ingesting it again, fixed, stores only the rest.

Lines are physical line numbers in a CSV file (the header is line 1); for Parquet, the data row's position
plus one, as the same table exported to CSV would number it. Each rejected row is reported once, with its
first problem, and copied as it is found to ``<stem>.rejects.csv`` beside the input with ``_line``, ``_field``
and ``_error``.
"""

from __future__ import annotations

import csv
import gc
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, TextIO

import pyarrow as pa
import pyarrow.parquet as pq

from predictor.catalog import Catalog
from predictor.domain import SCALAR_FIELDS, Source
from predictor.records import OBJECTS, ROW, Defaults, Record, RowError, missing, plain, validate
from predictor.store import MeasurementStore

CHUNK_ROWS = 5000
# allocations between collections of the youngest generation while rows stream through
GC_THRESHOLD = 100_000
REJECT_COLUMNS = ("_line", "_field", "_error")
# the line a row starts on, and its cells
Row = tuple[int, list[Any]]


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


class _UnreadableFile(Exception):
    """The file could not be read on from ``line`` on (the cause is chained)."""

    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


class _Table(Protocol):
    """An open file of rows: its header and its data rows in chunks."""

    header: list[str]

    def chunks(self, size: int) -> Iterator[list[Row]]: ...

    def close(self) -> None: ...


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
    """Validate every row of a CSV or Parquet file against the catalog and store the good rows, chunk by chunk.

    ``file_format`` (``csv`` or ``parquet``) overrides the file's suffix; ``rejects_dir`` is where the rejects
    file goes instead of beside the input.
    """
    path = Path(path)
    check_options(catalog, algorithm, platform)
    defaults = Defaults(algorithm, platform, machine, Source(source))
    table = _open(path, f".{file_format}" if file_format else path.suffix.lower())
    try:
        plan = _plan(_targets(path, table.header, mapping or {}))
        rows, stored, duplicates = 0, 0, 0
        rejected: list[Reject] = []
        with RejectsFile(path, table.header, rejects_dir) as rejects, _collecting_rarely():
            try:
                for chunk in table.chunks(CHUNK_ROWS):
                    good = []
                    for line, values in chunk:
                        try:
                            good.append(validate(_record(values, plan, len(table.header)), catalog, defaults))
                        except RowError as exc:
                            rejected.append(Reject(line, exc.field, exc.message))
                            rejects.add(values, rejected[-1])
                    result = store.add(good)
                    rows, stored, duplicates = (
                        rows + len(chunk),
                        stored + len(result.stored),
                        duplicates + len(result.duplicates),
                    )
            except _UnreadableFile as exc:
                kept = f"; the {rows} rows before it were handled ({stored} stored)" if rows else ""
                raise IngestError(f"{path}: unreadable from line {exc.line} on: {exc.__cause__}{kept}") from exc
    finally:
        table.close()
    if not rows:
        raise IngestError(f"{path}: the file has a header but no data rows")
    return IngestReport(path, rows, stored, duplicates, rejected, rejects.written)


@contextmanager
def _collecting_rarely() -> Iterator[None]:
    """Run the cyclic garbage collector less often for the block: rows make many objects and no cycles.

    At the default threshold it ran every 700 allocations and took a fifth of the time per row.
    """
    before = gc.get_threshold()
    gc.set_threshold(GC_THRESHOLD, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def check_options(catalog: Catalog, algorithm: str | None, platform: str | None) -> None:
    """Raise IngestError when the algorithm or platform option is not in the catalog."""
    if algorithm is not None and algorithm not in catalog.algorithms:
        raise IngestError(f"unknown algorithm option {algorithm!r}; known: {', '.join(sorted(catalog.algorithms))}")
    if platform is not None and platform not in catalog.platforms:
        raise IngestError(f"unknown platform option {platform!r}; known: {', '.join(sorted(catalog.platforms))}")


def _open(path: Path, suffix: str) -> _Table:
    """The file opened as ``suffix`` says, its header read; IngestError when that cannot be done or there is none."""
    opener = READERS.get(suffix)
    if opener is None:
        raise IngestError(f"{path}: unsupported file type {suffix or '(none)'!r}; expected .csv or .parquet")
    try:
        table = opener(path)
    except OSError as exc:
        raise IngestError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except (csv.Error, pa.ArrowException, ValueError) as exc:
        raise IngestError(f"{path}: not a readable {suffix[1:]} file: {exc}") from exc
    if not table.header:
        table.close()
        raise IngestError(f"{path}: the file is empty")
    return table


class _CsvTable:
    """A CSV file: the header is its first non-blank row; rows carry the physical line they start on."""

    def __init__(self, path: Path) -> None:
        self._file: TextIO = path.open(newline="", encoding="utf-8-sig")
        self._reader = csv.reader(self._file)
        self._next_line = 1
        try:
            self.header = next((row for _, row in self._rows() if row), [])
        except BaseException:
            self.close()
            raise
        self.header = [name.strip() for name in self.header]

    def _rows(self) -> Iterator[Row]:
        """Each record with the line it starts on, even when quoted cells span lines."""
        for row in self._reader:
            start, self._next_line = self._next_line, self._reader.line_num + 1
            yield start, row

    def chunks(self, size: int) -> Iterator[list[Row]]:
        chunk: list[Row] = []
        try:
            for line, row in self._rows():
                if row:
                    chunk.append((line, row))
                if len(chunk) == size:
                    yield chunk
                    chunk = []
        except (OSError, csv.Error, ValueError) as exc:
            raise _UnreadableFile(self._next_line) from exc
        if chunk:
            yield chunk

    def close(self) -> None:
        self._file.close()


class _ParquetTable:
    """A Parquet file read in record batches; a row's line is its position plus two (the header is line 1)."""

    def __init__(self, path: Path) -> None:
        self._file = pq.ParquetFile(path)
        self.header = [str(name) for name in self._file.schema_arrow.names]

    def chunks(self, size: int) -> Iterator[list[Row]]:
        position = 0
        batches = self._file.iter_batches(batch_size=size)
        while True:
            try:
                batch = next(batches, None)
            except (OSError, pa.ArrowException, ValueError) as exc:
                raise _UnreadableFile(position + 2) from exc
            if batch is None:
                return
            columns = [column.to_pylist() for column in batch.columns]
            yield [
                (position + i + 2, [plain(v) for v in values]) for i, values in enumerate(zip(*columns, strict=True))
            ]
            position += batch.num_rows

    def close(self) -> None:
        self._file.close()


READERS: dict[str, Callable[[Path], _Table]] = {".csv": _CsvTable, ".parquet": _ParquetTable, ".pq": _ParquetTable}


def _targets(path: Path, header: list[str], mapping: dict[str, str]) -> list[str | None]:
    """The field each column feeds (None: ignored), after mapping; unknown or clashing columns raise IngestError."""
    missing_columns = sorted(set(mapping) - set(header))
    if missing_columns:
        raise IngestError(
            f"{path}: mapped columns not in the file: {', '.join(missing_columns)}; columns: {', '.join(header)}"
        )
    targets: list[str | None] = []
    for column in header:
        mapped = mapping.get(column, column)
        targets.append(None if mapped in REJECT_COLUMNS and column not in mapping else mapped)
    unknown = [t for t in targets if t is not None and _kind(t) is None]
    if unknown:
        raise IngestError(
            f"{path}: unknown columns: {', '.join(map(repr, unknown))}; name a field ({', '.join(SCALAR_FIELDS)}), "
            "params/features/context, or param.<name>, feature.<name>, context.<name> (rename with a mapping)"
        )
    seen: dict[str, str] = {}
    for column, target in zip(header, targets, strict=True):
        if target is not None and target in seen:
            raise IngestError(f"{path}: columns {seen[target]!r} and {column!r} both give {target!r}")
        if target is not None:
            seen[target] = column
    return targets


def _kind(target: str) -> tuple[str, str] | None:
    """Where a column's cells go in a Record: ("fields" | "objects" | an object column, name), or None if nowhere."""
    if target in SCALAR_FIELDS:
        return ("fields", target)
    if target in OBJECTS:
        return ("objects", target)
    for kind, prefix in OBJECTS.items():
        if target.startswith(prefix) and len(target) > len(prefix):
            return (kind, target[len(prefix) :])
    return None


# the parts of a Record, in the order _record fills them
PARTS = ("fields", "objects", *OBJECTS)


def _plan(targets: list[str | None]) -> list[tuple[int, int, str]]:
    """(column index, part of the Record by its position in PARTS, name) of every column that feeds the record."""
    plan = []
    for index, target in enumerate(targets):
        kind = None if target is None else _kind(target)
        if kind is not None:
            plan.append((index, PARTS.index(kind[0]), kind[1]))
    return plan


def _record(values: list[Any], plan: list[tuple[int, int, str]], width: int) -> Record:
    """One row's present cells, sorted into a Record (text stripped; blank, None and NaN cells left out)."""
    if len(values) != width:
        raise RowError(ROW, f"has {len(values)} fields but the header has {width}")
    record = Record()
    parts = (record.fields, record.objects, *record.entries.values())
    for index, part, name in plan:
        value = values[index]
        if isinstance(value, str):
            value = value.strip()
            if not value:
                continue
        elif missing(value):
            continue
        parts[part][name] = value
    return record


class RejectsFile:
    """``<stem>.rejects.csv`` in ``directory`` (default: beside the input), written as rejects come in.

    The input's columns (less ``_line``, ``_field``, ``_error``) and then those three. On leaving the block,
    :attr:`written` is the file's path, or None when nothing was rejected (a stale file from before is removed).
    """

    def __init__(self, path: Path, header: list[str], directory: Path | None = None) -> None:
        self.path = (directory or path.parent) / f"{path.stem}.rejects.csv"
        self._keep = [i for i, name in enumerate(header) if name not in REJECT_COLUMNS]
        self._header = [header[i] for i in self._keep] + list(REJECT_COLUMNS)
        self._file: TextIO | None = None
        self._writer: Any = None
        self.written: Path | None = None

    def __enter__(self) -> RejectsFile:
        return self

    def add(self, values: list[Any], reject: Reject) -> None:
        """Append one rejected row with its line, field and error."""
        try:
            if self._writer is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = self.path.open("w", newline="", encoding="utf-8")
                self._writer = csv.writer(self._file)
                self._writer.writerow(self._header)
            cells = [_text(values[i]) if i < len(values) else "" for i in self._keep]
            self._writer.writerow([*cells, reject.line, reject.field, reject.message])
        except OSError as exc:
            raise IngestError(
                f"{self.path}: cannot write the rejects file: {exc.strerror or exc} (choose another folder with --rejects-dir)"
            ) from exc

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._file is not None:
            self._file.close()
            self.written = self.path
        elif kind is None:
            self.path.unlink(missing_ok=True)


def write_rejects(
    path: Path, header: list[str], bad: list[tuple[list[Any], Reject]], directory: Path | None = None
) -> Path | None:
    """Write rejected rows to ``<stem>.rejects.csv`` in ``directory`` (default: beside the input); drop a stale one."""
    with RejectsFile(path, header, directory) as rejects:
        for values, reject in bad:
            rejects.add(values, reject)
    return rejects.written


def _text(value: Any) -> str:
    """A cell as text for the rejects CSV; objects as JSON so they can be ingested again."""
    if isinstance(value, str):
        return value
    if missing(value):
        return ""
    value = plain(value)
    return json.dumps(value, default=str) if isinstance(value, (dict, list)) else str(value)
