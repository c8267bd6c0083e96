"""The measurement store: every finished run, stored once by run_id, read back for training and fallbacks."""

from predictor.store.store import RUN_COLUMNS, AddResult, MeasurementStore

__all__ = ["RUN_COLUMNS", "AddResult", "MeasurementStore"]
