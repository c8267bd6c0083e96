"""Exported measurements ingest back as the very same runs."""

from data.export import export_csv
from data.ingest import ingest_file
from predictor.domain import Measurement
from predictor.store import MeasurementStore


def test_export_then_ingest_round_trips(store: MeasurementStore, catalog, tmp_path):
    runs = [
        Measurement(
            run_id=f"r{i}",
            algorithm="blastn",
            platform="cpu-small",
            params={"evalue": 0.1 * (i + 1), "task": "blastn"},
            features={"query.sequences": float(i + 1)},
            wall_seconds=1.5 * i,
            exit_status=i % 2,
            censored=i == 3,
            context={"load_avg_1m": 0.5},
        )
        for i in range(4)
    ]
    store.add(runs)
    path = tmp_path / "out.csv"
    assert export_csv(store, path) == 4
    report = ingest_file(path, store, catalog)
    assert (report.rows, report.stored, report.duplicates, report.rejected) == (4, 0, 4, [])
    fresh = MeasurementStore(f"sqlite:///{tmp_path / 'fresh.db'}")
    fresh.migrate()
    assert ingest_file(path, fresh, catalog).stored == 4
    by_id = {m.run_id: m for m in fresh.measurements(successful_only=False)}
    for original in runs:
        copy = by_id[original.run_id]
        assert copy.model_dump(exclude={"recorded_at"}) == original.model_dump(exclude={"recorded_at"})
        assert copy.recorded_at == original.recorded_at
    assert [m.run_id for m in fresh.measurements(successful_only=False) if m.censored] == ["r3"]
