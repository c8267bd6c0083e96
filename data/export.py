"""Write stored measurements as CSV in the layout ``predictor ingest`` reads back."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from predictor.domain import SCALAR_FIELDS
from predictor.store import MeasurementStore


def export_csv(store: MeasurementStore, path: Path, *, algorithm: str | None = None) -> int:
    """Write every measurement (failed runs included) to ``path``; return the row count."""
    rows = []
    for m in store.measurements(algorithm=algorithm, successful_only=False):
        row = {f: getattr(m, f) for f in SCALAR_FIELDS}
        row["cache_state"], row["source"] = m.cache_state.value, m.source.value
        row["recorded_at"] = m.recorded_at.isoformat()
        row.update({f"param.{k}": v for k, v in m.params.items()})
        row.update({f"feature.{k}": v for k, v in m.features.items()})
        row["context"] = json.dumps(m.context, sort_keys=True)
        rows.append(row)
    frame = pd.DataFrame(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    return len(frame)
