"""What the scheduler's tests over a served API share: the token and the API's settings, a job's features and measured
runs to seed a store."""

from __future__ import annotations

from predictor.domain import Measurement, Source
from predictor.settings import Settings
from predictor.store import MeasurementStore
from serving.settings import ApiSettings

TOKEN = "sched-token"
AUTH = {"authorization": f"Bearer {TOKEN}"}
FEATURES = {"input.sequences": 20.0, "input.mean_length": 250.0}


def served_api(**changes: object) -> ApiSettings:
    """The API's settings the scheduler's tests serve with: their token, the champions loaded once (no polling)."""
    return ApiSettings(**{"token": TOKEN, "reload_interval_s": 0, **changes})  # type: ignore[arg-type]


def seed_profile(settings: Settings) -> None:
    """Measured runs, so the oracle answers from the profile table (mafft: cpu1 4 s, cpu2 1 s)."""
    store = MeasurementStore(settings.resolved_store_url)
    store.migrate()
    store.add(
        Measurement(run_id=f"{p}-{i}", algorithm="mafft", platform=p, wall_seconds=s, source=Source.PROBE)
        for p, s in (("cpu1", 4.0), ("cpu2", 1.0))
        for i in range(3)
    )
    store.dispose()
