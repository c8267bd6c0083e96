"""The measurement store: finished runs in SQLite (embedded) or PostgreSQL (at scale), same code, a URL apart."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import pandas as pd
from alembic import command
from alembic.config import Config
from sqlalchemy import (
    Connection,
    Engine,
    LargeBinary,
    RowMapping,
    Text,
    cast,
    create_engine,
    delete,
    event,
    func,
    make_url,
    select,
    text,
    type_coerce,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql import Select
from sqlalchemy.types import NullType

from predictor.addresses import shown_address
from predictor.domain import MAX_WALL_SECONDS, SCALAR_FIELDS, Measurement, ServedEstimate
from predictor.store import online_members
from predictor.store.selection import RunSelection
from predictor.store.tables import measurements as table
from predictor.store.tables import model_decisions, served_estimates, set_aside

if TYPE_CHECKING:
    from predictor.online import LiveMember

AnySelect: TypeAlias = Select[*tuple[Any, ...]]
"""A SELECT of any number of columns of any types (``Select[Any]`` would be one column)."""

log = logging.getLogger(__name__)
MIGRATIONS = Path(__file__).resolve().parent / "migrations"
SQLITE_BUSY_TIMEOUT_MS = 30_000
# values in one SQL IN list (SQLite caps a statement's parameters)
IN_CHUNK = 10_000
# the largest LIMIT both backends take (a larger Python int overflows the driver)
MAX_SQL_INTEGER = 2**63 - 1
# Arbitrary constant key of the PostgreSQL advisory lock that serialises concurrent migrations.
MIGRATION_LOCK_KEY = 0x6D656173
# Alembic keeps the running migration context in module globals, so one process migrates one database at a time.
_ALEMBIC_LOCK = threading.Lock()
# read as text and parsed row by row (see MeasurementStore._read)
JSON_COLUMNS = ("params", "features", "context")
# Rows of a pair's live window: what it was served beside what it measured (see live_window).
LIVE_COLUMNS = (
    "run_id",
    "seconds",
    "lower",
    "upper",
    "limit",
    "model_version",
    "extrapolating",
    "memory",
    "memory_lower",
    "memory_upper",
    "memory_limit",
    "memory_model_version",
    "wall_seconds",
    "censored",
    "max_rss_kb",
)
# the served estimate's columns of a live window (its run's: the last three)
SERVED_LIVE = LIVE_COLUMNS[1:-3]


@dataclass
class AddResult:
    """What one :meth:`MeasurementStore.add` call did with each run_id, in input order."""

    stored: list[str]
    duplicates: list[str]


class MeasurementStore:
    """Stores measurements idempotently by run_id and reads them back as records or frames."""

    def __init__(self, url: str) -> None:
        parsed = make_url(url)
        self.dialect = parsed.get_backend_name()
        if self.dialect not in ("sqlite", "postgresql"):
            raise ValueError(
                f"unsupported store URL {shown_address(url)}: use a sqlite:/// or postgresql+psycopg:// URL"
            )
        if self.dialect == "sqlite":
            _make_sqlite_parent(parsed.database)
        self.engine: Engine = create_engine(parsed)
        if self.dialect == "sqlite":
            _configure_sqlite(self.engine)
        # see profile_table
        self._profile: tuple[tuple[Any, ...], dict[tuple[str, str], tuple[float, int]]] | None = None

    def migrate(self) -> None:
        """Upgrade the schema to the newest revision; a lock makes concurrent callers take turns."""
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS).replace("%", "%%"))
        with _ALEMBIC_LOCK, self._connect_exclusive() as conn:
            if self.dialect == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
            config.attributes["connection"] = conn
            command.upgrade(config, "head")
            conn.commit()

    def add(self, measurements: Iterable[Measurement], served: Iterable[ServedEstimate] = ()) -> AddResult:
        """Store new runs (and the estimates they were served) in one transaction, in which the live online champions of
        their pairs learn them (:mod:`predictor.online`); run_ids already stored or repeated in the batch are
        duplicates."""
        rows: dict[str, Measurement] = {}
        repeats: list[str] = []
        for m in measurements:
            if m.run_id in rows:
                repeats.append(m.run_id)
            else:
                rows[m.run_id] = m
        served = list(served)
        inserted: set[str] = set()
        if rows or served:
            with self._connect_exclusive() as conn:
                inserted = insert_measurements(conn, rows.values())
                insert_served(conn, served)
                online_members.learn_in(conn, (rows[r] for r in inserted))
                conn.commit()
        return AddResult(
            stored=[run_id for run_id in rows if run_id in inserted],
            duplicates=[run_id for run_id in rows if run_id not in inserted] + repeats,
        )

    def count(
        self, algorithm: str | None = None, platform: str | None = None, *, informative_only: bool = False
    ) -> int:
        """Number of stored measurements, optionally for one algorithm and/or platform.

        Failed runs count too, unless ``informative_only`` (then: finished and censored runs, what training reads).
        """
        stmt = _filtered(
            select(func.count()).select_from(table),
            algorithm,
            platform,
            successful_only=informative_only,
            with_censored=informative_only,
        )
        with self.engine.connect() as conn:
            return int(conn.execute(stmt).scalar_one())

    def known_run_ids(self, run_ids: Iterable[str]) -> set[str]:
        """The subset of ``run_ids`` already stored (lets a resumed sweep skip finished runs)."""
        wanted = list(dict.fromkeys(run_ids))
        found: set[str] = set()
        with self.engine.connect() as conn:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                found.update(conn.execute(select(table.c.run_id).where(table.c.run_id.in_(chunk))).scalars())
        return found

    def measurement(self, run_id: str) -> Measurement | None:
        """The stored run of that id, in whatever outcome (None: not stored)."""
        rows = self._read(self._readable().where(table.c.run_id == run_id))
        return Measurement.model_validate(rows[0]) if rows else None

    def measurements(
        self,
        algorithm: str | None = None,
        platform: str | None = None,
        successful_only: bool = True,
        *,
        with_censored: bool = False,
    ) -> list[Measurement]:
        """Stored measurements in the order they were recorded (ties by storing order), as domain records.

        ``successful_only`` keeps finished runs, and censored ones too when ``with_censored``.
        """
        return [
            Measurement.model_validate(row) for row in self._rows(algorithm, platform, successful_only, with_censored)
        ]

    def frame(
        self,
        algorithm: str | None = None,
        platform: str | None = None,
        successful_only: bool = True,
        *,
        with_censored: bool = False,
    ) -> pd.DataFrame:
        """One row per measurement: the base columns, one float column per feature key (NaN if absent), ``params``."""
        return frame_of(self._rows(algorithm, platform, successful_only, with_censored))

    def pairs(self) -> list[tuple[str, str]]:
        """Distinct (algorithm, platform) pairs with at least one successful measurement, sorted."""
        stmt = (
            select(table.c.algorithm, table.c.platform)
            .where(table.c.exit_status == 0)
            .distinct()
            .order_by(table.c.algorithm, table.c.platform)
        )
        with self.engine.connect() as conn:
            return [(a, p) for a, p in conn.execute(stmt)]

    def profile_table(self) -> dict[tuple[str, str], tuple[float, int]]:
        """Median wall seconds and run count per (algorithm, platform) over successful runs of at most a year: the
        fallback estimate, which no stored outlier can move far (a mean was made infinite by one absurd row).

        A median sorts every run, several times the cost of a mean on a large store, so the table is computed
        again only when the measurements changed since the last call (the API asks at every champion poll)."""
        with self.engine.connect() as conn:
            stamp = tuple(conn.execute(select(func.count(), func.max(table.c.id))).one())
            if self._profile is not None and self._profile[0] == stamp:
                return dict(self._profile[1])
            table_now = {(a, p): (float(median), int(n)) for a, p, median, n in conn.execute(_medians())}
        self._profile = (stamp, table_now)
        return dict(table_now)

    def set_live_member(self, key: online_members.Key, member: LiveMember | None) -> None:
        """Make ``member`` the live online champion of (algorithm, platform, target) ``key``; None: it has none."""
        with self._connect_exclusive() as conn:
            online_members.replace_in(conn, key, member)
            conn.commit()

    def live_members(self) -> dict[online_members.Key, LiveMember]:
        """Every live online champion, by (algorithm, platform, target)."""
        return online_members.read(self.engine)

    def live_revisions(self) -> dict[online_members.Key, tuple[str, int]]:
        """(version, revision) of every live online champion (see :func:`online_members.revisions`)."""
        return online_members.revisions(self.engine)

    def add_served(self, served: Iterable[ServedEstimate]) -> int:
        """Keep the estimate each run was served (the first one recorded per run_id wins); how many were new."""
        with self._connect_exclusive() as conn:
            added = insert_served(conn, served)
            conn.commit()
        return added

    def live_window(self, algorithm: str, platform: str, size: int) -> pd.DataFrame:
        """The pair's last ``size`` runs that were served an estimate and have a measurement (oldest first): :data:`LIVE_COLUMNS`."""
        s = served_estimates.c
        stmt = (
            select(
                s.run_id,
                *(s[name] for name in SERVED_LIVE),
                table.c.wall_seconds,
                table.c.censored,
                table.c.max_rss_kb,
            )
            .join(table, table.c.run_id == s.run_id)
            .where(s.algorithm == algorithm, s.platform == platform)
            .where((table.c.exit_status == 0) | table.c.censored)
            .order_by(s.id.desc())
            .limit(size)
        )
        with self.engine.connect() as conn:
            rows = [tuple(r) for r in conn.execute(stmt)][::-1]
        return live_frame(rows)

    def served_pairs(self) -> list[tuple[str, str]]:
        """(algorithm, platform) pairs with at least one served estimate recorded, sorted."""
        stmt = select(served_estimates.c.algorithm, served_estimates.c.platform).distinct()
        with self.engine.connect() as conn:
            return sorted((a, p) for a, p in conn.execute(stmt))

    def add_decision(self, row: dict[str, Any]) -> None:
        """Record one decision of the champion guard (columns of ``model_decisions`` but its id)."""
        with self._connect_exclusive() as conn:
            conn.execute(model_decisions.insert().values(row))
            conn.commit()

    def decisions(
        self, algorithm: str | None = None, platform: str | None = None, limit: int = 100, target: str | None = None
    ) -> list[dict[str, Any]]:
        """The newest ``limit`` decisions, newest first, optionally for one algorithm, platform and/or target.

        A row holding a value its column cannot read back (``details`` not JSON, a ``decided_at`` that is no date:
        written past the store, on SQLite) comes back with the value as stored and ``unreadable`` naming the columns,
        so one bad row hides none of the others; ``unreadable`` is empty on a sound row.
        """
        columns = model_decisions.c
        stmt = select(*(type_coerce(c, NullType()).label(c.name) for c in columns)).order_by(columns.id.desc())
        stmt = stmt.limit(min(limit, MAX_SQL_INTEGER))
        if algorithm is not None:
            stmt = stmt.where(columns.algorithm == algorithm)
        if platform is not None:
            stmt = stmt.where(columns.platform == platform)
        if target is not None:
            stmt = stmt.where(columns.target == target)
        return self._decision_rows(stmt)

    def newest_decisions(self, platforms: Iterable[str], algorithm: str | None = None) -> list[dict[str, Any]]:
        """The newest decision of each (algorithm, platform) among ``platforms`` (of ``algorithm`` alone when given),
        newest first, read as :meth:`decisions` reads them. One query on the table's (algorithm, platform, id) index:
        cheap enough for a route that asks every few seconds (the planning decision production follows)."""
        columns = model_decisions.c
        newest = select(func.max(columns.id)).where(columns.platform.in_(list(platforms)))
        if algorithm is not None:
            newest = newest.where(columns.algorithm == algorithm)
        newest = newest.group_by(columns.algorithm, columns.platform)
        stmt = select(*(type_coerce(c, NullType()).label(c.name) for c in columns)).where(columns.id.in_(newest))
        return self._decision_rows(stmt.order_by(columns.id.desc()))

    def _decision_rows(self, stmt: AnySelect) -> list[dict[str, Any]]:
        """The ``model_decisions`` rows ``stmt`` selects, each read column by column (:func:`_read_back`)."""
        columns = model_decisions.c
        dialect = self.engine.dialect
        readers = {c.name: c.type.dialect_impl(dialect).result_processor(dialect, None) for c in columns}
        with self.engine.connect() as conn:
            return [_read_back(row, readers) for row in conn.execute(stmt).mappings()]

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()

    def _connect_exclusive(self) -> Connection:
        """A connection whose transaction takes SQLite's write lock at BEGIN, so writers queue instead of failing."""
        return self.engine.connect().execution_options(sqlite_begin="IMMEDIATE")

    def _rows(
        self, algorithm: str | None, platform: str | None, successful_only: bool, with_censored: bool = False
    ) -> list[dict[str, Any]]:
        stmt = self._readable().order_by(table.c.recorded_at, table.c.id)
        return self._read(_filtered(stmt, algorithm, platform, successful_only, with_censored))

    def _readable(self) -> AnySelect:
        """Every column of the measurements, the JSON ones as their stored text (SQLite: bytes), parsed by :meth:`_read`."""
        # SQLite keeps any bytes in a column, even not UTF-8
        raw = LargeBinary if self.dialect == "sqlite" else Text
        return select(*(cast(c, raw).label(c.name) if c.name in JSON_COLUMNS else c for c in table.c))

    def _read(self, stmt: AnySelect) -> list[dict[str, Any]]:
        """The rows of ``stmt`` (a :meth:`_readable` query) as column values without the id; a row that cannot be read
        is moved to ``measurements_set_aside`` with its reason and logged, once: one such row made every read fail."""
        with self.engine.connect() as conn:
            result = conn.execute(stmt)
            keys, fetched = list(result.keys()), result.all()
        rows, unreadable = [], []
        for values in fetched:
            row = dict(zip(keys, values, strict=True))
            try:
                rows.append(_parsed(row))
            except ValueError as exc:
                unreadable.append((row, str(exc)))
        if unreadable:
            self._set_aside(unreadable)
        return rows

    def set_aside_runs(self, selection: RunSelection, reason: str) -> list[str]:
        """Move the stored runs ``selection`` names out of the measurements, into ``measurements_set_aside`` with
        ``reason``: training, the profile table and every read then ignore them, and storing one of them again is a
        duplicate. The run ids moved (none when nothing matches, or the run ``like`` names is unknown)."""
        c = table.c
        stmt = select(table)
        for column, value in ((c.algorithm, selection.algorithm), (c.platform, selection.platform)):
            if value is not None:
                stmt = stmt.where(column == value)
        if selection.since is not None:
            stmt = stmt.where(c.recorded_at >= selection.since)
        if selection.until is not None:
            stmt = stmt.where(c.recorded_at < selection.until)
        if selection.run_ids:
            stmt = stmt.where(c.run_id.in_(sorted(selection.run_ids)))
        with self.engine.connect() as conn:
            rows = [dict(r) for r in conn.execute(stmt).mappings()]
            like = None
            if selection.like is not None:
                found = conn.execute(select(table).where(c.run_id == selection.like)).mappings().first()
                if found is None:
                    return []
                like = dict(found)
        picked = [row for row in rows if selection.matches(row, like)]
        if picked:
            self._set_aside([(row, f"set aside: {reason}") for row in picked])
        return [row["run_id"] for row in picked]

    def _set_aside(self, unreadable: Sequence[tuple[Mapping[str, Any], str]]) -> None:
        """Move each row out of the measurements, with its reason, in one transaction."""
        now = datetime.now(UTC)
        rows = [
            {
                "measurement_id": row["id"],
                "run_id": row["run_id"],
                "reason": reason,
                "set_aside_at": now,
                "row": json.dumps({k: _text(v) for k, v in row.items()}, default=str),
            }
            for row, reason in unreadable
        ]
        with self._connect_exclusive() as conn:
            conn.execute(
                dialect_insert(conn)(set_aside).on_conflict_do_nothing(index_elements=["measurement_id"]), rows
            )
            conn.execute(delete(table).where(table.c.id.in_([r["measurement_id"] for r in rows])))
            conn.commit()
        for r in rows:
            log.warning(
                "measurement %s (run %s) set aside in measurements_set_aside: %s",
                r["measurement_id"],
                r["run_id"],
                r["reason"],
            )


def live_frame(rows: list[tuple[Any, ...]]) -> pd.DataFrame:
    """A live window from rows of :data:`LIVE_COLUMNS`: the served and measured numbers as floats (NaN where none)."""
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(LIVE_COLUMNS)
    return pd.DataFrame(
        {
            name: np.array(values, dtype="float64")
            if name in _LIVE_NUMBERS
            else pd.Series(values, dtype=None if rows else object)
            for name, values in zip(LIVE_COLUMNS, columns, strict=True)
        }
    )


# the columns of a live window that hold numbers (NaN where none): built as float arrays, one pass each
_LIVE_NUMBERS = frozenset(
    ("seconds", "lower", "upper", "limit", "memory", "memory_lower", "memory_upper", "memory_limit")
    + ("wall_seconds", "max_rss_kb")
)


def _medians() -> AnySelect:
    """(algorithm, platform, median wall seconds, runs) of successful runs of at most a year, per pair."""
    pair = (table.c.algorithm, table.c.platform)
    ranked = (
        select(
            *pair,
            table.c.wall_seconds,
            func.row_number().over(partition_by=pair, order_by=table.c.wall_seconds).label("rank"),
            func.count().over(partition_by=pair).label("n"),
        )
        .where(table.c.exit_status == 0, table.c.wall_seconds <= MAX_WALL_SECONDS)
        .subquery()
    )
    r = ranked.c
    return (
        select(r.algorithm, r.platform, func.avg(r.wall_seconds), func.max(r.n))
        .where(r.rank >= (r.n + 1) // 2, r.rank <= (r.n + 2) // 2)  # the middle run, or the middle two
        .group_by(r.algorithm, r.platform)
    )


def _parsed(row: Mapping[str, Any]) -> dict[str, Any]:
    """A :meth:`MeasurementStore._readable` row's values without the id, its JSON columns parsed; ValueError saying why
    it cannot be read (a JSON column not a JSON object, a feature value not a number)."""
    values = {k: v for k, v in row.items() if k != "id"}
    for name in JSON_COLUMNS:
        raw = row[name]
        try:
            values[name] = json.loads(raw.decode() if isinstance(raw, bytes) else raw)  # not UTF-8: a ValueError too
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{name} is not JSON ({exc})") from None
        if not isinstance(values[name], dict):
            raise ValueError(f"{name} is not a JSON object")
    if not all(type(v) in (int, float) for v in values["features"].values()):
        raise ValueError("features holds a value that is not a number")
    return values


def _text(value: Any) -> Any:
    """A value for the set-aside row's JSON: bytes as the text they hold (undecodable ones escaped)."""
    return value.decode(errors="backslashreplace") if isinstance(value, bytes) else value


# The columns of :meth:`MeasurementStore.frame` that describe a run rather than its inputs; every other one is a feature.
RUN_COLUMNS = frozenset({*SCALAR_FIELDS, "params", "submitted_at"})


def frame_of(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The frame of :meth:`MeasurementStore.frame` from measurement rows (column values, features and params as dicts)."""
    feature_names = sorted({name for row in rows for name in row["features"]})
    clashes = set(feature_names) & RUN_COLUMNS
    if clashes:
        raise ValueError(f"feature names clash with frame columns: {', '.join(sorted(clashes))}")
    frame = pd.DataFrame(
        {
            **{name: [row[name] for row in rows] for name in SCALAR_FIELDS},
            **{name: [row["features"].get(name) for row in rows] for name in feature_names},
            "params": [row["params"] for row in rows],
            "submitted_at": [_submitted_at(row) for row in rows],
        }
    )
    floats = ["wall_seconds", "cpu_seconds", "max_rss_kb", *feature_names]
    frame[floats] = frame[floats].astype("float64")
    frame["exit_status"] = frame["exit_status"].astype("int64")
    frame["censored"] = frame["censored"].astype("bool")
    frame["recorded_at"] = pd.to_datetime(frame["recorded_at"], utc=True)
    frame["submitted_at"] = pd.to_datetime(frame["submitted_at"], utc=True)
    return frame


def _submitted_at(row: Mapping[str, Any]) -> datetime:
    """When a run's job was submitted, as far as its row tells: its context's ``submitted_at`` (Slurm accounting), else
    its end less its run and its wait (``wait_seconds``, an SWF log's), else less its run alone (a profiled run starts
    when it is asked for)."""
    context = row.get("context") or {}
    end, wall = _as_utc(row["recorded_at"]), float(row["wall_seconds"] or 0.0)
    if isinstance(context.get("submitted_at"), str):
        try:
            return min(_as_utc(datetime.fromisoformat(context["submitted_at"])), end)
        except ValueError:
            pass
    wait = context.get("wait_seconds")
    wait = float(wait) if isinstance(wait, int | float) and wait > 0 else 0.0
    try:
        return end - timedelta(seconds=max(wall, 0.0) + wait)
    except OverflowError:
        return end


def _as_utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def _read_back(row: RowMapping, readers: Mapping[str, Callable[[Any], Any] | None]) -> dict[str, Any]:
    """A row read column by column; a value its column's type cannot read is kept raw and named in ``unreadable``."""
    out: dict[str, Any] = {"unreadable": []}
    for name in row:
        value, read = row[name], readers[name]
        try:
            out[name] = value if read is None or value is None else read(value)
        except (ValueError, TypeError) as exc:  # json.JSONDecodeError is a ValueError
            out[name] = value
            out["unreadable"].append(f"{name} ({type(exc).__name__})")
    return out


def _filtered(
    stmt: AnySelect, algorithm: str | None, platform: str | None, successful_only: bool, with_censored: bool = False
) -> AnySelect:
    """Apply the optional algorithm, platform and success filters shared by the queries (censored runs pass with ``with_censored``)."""
    if algorithm is not None:
        stmt = stmt.where(table.c.algorithm == algorithm)
    if platform is not None:
        stmt = stmt.where(table.c.platform == platform)
    if successful_only:
        stmt = (
            stmt.where((table.c.exit_status == 0) | table.c.censored)
            if with_censored
            else stmt.where(table.c.exit_status == 0)
        )
    return stmt


def dialect_insert(conn: Connection) -> Any:
    """The dialect's INSERT, which knows ON CONFLICT."""
    return sqlite.insert if conn.dialect.name == "sqlite" else postgresql.insert


def insert_measurements(conn: Connection, measurements: Iterable[Measurement]) -> set[str]:
    """Insert runs not stored (nor set aside) yet, inside the caller's transaction (the scheduler commits its finished runs with its
    step); the run ids inserted. Sorted by run_id so concurrent PostgreSQL writers lock keys in one order (no deadlock).
    """
    rows = {m.run_id: measurement_row(m) for m in measurements}
    if not rows:
        return set()
    keys = sorted(rows)
    aside = {
        run_id
        for start in range(0, len(keys), IN_CHUNK)
        for run_id in conn.execute(
            select(set_aside.c.run_id).where(set_aside.c.run_id.in_(keys[start : start + IN_CHUNK]))
        ).scalars()
    }
    rows = {k: v for k, v in rows.items() if k not in aside}  # a run set aside stays aside
    if not rows:
        return set()
    stmt = dialect_insert(conn)(table).on_conflict_do_nothing(index_elements=["run_id"]).returning(table.c.run_id)
    return set(conn.execute(stmt, [rows[k] for k in sorted(rows)]).scalars())


def insert_served(conn: Connection, served: Iterable[ServedEstimate]) -> int:
    """Insert served estimates of runs that have none yet, inside the caller's transaction; how many were new."""
    rows = {s.run_id: s.model_dump() for s in served}
    if not rows:
        return 0
    stmt = (
        dialect_insert(conn)(served_estimates)
        .on_conflict_do_nothing(index_elements=["run_id"])
        .returning(served_estimates.c.run_id)
    )
    return len(conn.execute(stmt, [rows[k] for k in sorted(rows)]).scalars().all())


def measurement_row(m: Measurement) -> dict[str, Any]:
    """Column values of one measurement; params and context are made JSON-safe."""
    row = m.model_dump(exclude={"params", "context", "cache_state", "source"})
    row.update(m.model_dump(mode="json", include={"params", "context", "cache_state", "source"}))
    return row


def _make_sqlite_parent(database: str | None) -> None:
    """Create the folder of a SQLite file so a fresh home directory just works."""
    if database and database != ":memory:" and not database.startswith("file:"):
        Path(database).expanduser().resolve().parent.mkdir(parents=True, exist_ok=True)


def _enable_wal(cursor: Any) -> None:
    """Switch the file to WAL (a no-op once it is). Two connections racing to switch a new file can be told "locked"
    at once, without the busy timeout (SQLite's deadlock avoidance), so the switch is retried until that timeout."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.05)


def _configure_sqlite(engine: Engine) -> None:
    """WAL, a busy timeout and foreign keys on every connection; BEGIN issued by us so DDL is transactional."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # the driver stops issuing its own BEGIN
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        _enable_wal(cursor)
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql(f"BEGIN {conn.get_execution_options().get('sqlite_begin', 'DEFERRED')}")
