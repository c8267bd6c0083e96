"""Alembic environment: migrates the connection MeasurementStore.migrate hands over, or ``sqlalchemy.url`` for developers."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine

import predictor.store.scheduler_tables  # noqa: F401  (puts the scheduler's tables on Base.metadata)
from predictor.store.tables import Base


def _run(connection: Connection) -> None:
    """Run pending migrations on one connection, all in its one transaction; SQLite needs batch mode to alter tables.

    Alembic takes SQLite for a database without transactional DDL and commits after each migration, which lets
    another process's migrate, queued on the write lock, read the version in between and run the same migrations
    again ("table already exists"). SQLite's DDL is transactional (the store issues BEGIN itself), so it is told so:
    the whole upgrade is one transaction under the lock ``MeasurementStore.migrate`` takes.
    """
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        transactional_ddl=True,
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


connection = context.config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    url = context.config.get_main_option("sqlalchemy.url")
    if url is None:
        raise RuntimeError("no connection handed over and no sqlalchemy.url set: nothing to migrate")
    engine = create_engine(url)
    with engine.begin() as connection:
        _run(connection)
    engine.dispose()
