"""Alembic environment: migrates the connection MeasurementStore.migrate hands over, or ``sqlalchemy.url`` for developers."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine

import predictor.store.scheduler_tables  # noqa: F401  (puts the scheduler's tables on Base.metadata)
from predictor.store.tables import Base


def _run(connection: Connection) -> None:
    """Run pending migrations on one connection; SQLite needs batch mode to alter tables."""
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


connection = context.config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    engine = create_engine(context.config.get_main_option("sqlalchemy.url"))
    with engine.begin() as connection:
        _run(connection)
    engine.dispose()
