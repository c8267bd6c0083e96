"""What the routes share, built once in the app's lifespan: settings (the core's and each served component's), catalog,
store, oracle, watcher, metrics, and the planning decision the Slurm plugin's route follows."""

from __future__ import annotations

from dataclasses import dataclass

from predictor.catalog import Catalog, load_catalog
from predictor.champion_source import ChampionSource, bound_registry_requests
from predictor.oracle import RuntimeOracle
from predictor.settings import Settings
from predictor.store import MeasurementStore
from scheduler.planning import FollowedDecision
from scheduler.settings import ProbeSettings, SchedulerSettings
from serving.hotswap import ChampionWatcher
from serving.metrics import ApiMetrics
from serving.settings import ApiSettings
from slurm.settings import SlurmSettings


@dataclass
class ServiceState:
    """The loaded service: the routes read it, the lifespan builds and closes it."""

    settings: Settings
    api: ApiSettings
    scheduling: SchedulerSettings
    probing: ProbeSettings
    slurm: SlurmSettings
    catalog: Catalog
    store: MeasurementStore
    oracle: RuntimeOracle
    watcher: ChampionWatcher
    metrics: ApiMetrics
    # the newest backfilling decision of the Slurm cluster (its time_min follows it)
    slurm_planning: FollowedDecision


def build_state(
    settings: Settings,
    api: ApiSettings,
    scheduling: SchedulerSettings,
    probing: ProbeSettings,
    slurm: SlurmSettings,
    metrics: ApiMetrics,
) -> ServiceState:
    """Load the catalog, open and migrate the store, and start following the champions (cache fallback included)."""
    catalog = load_catalog(*settings.catalog_paths)
    store = MeasurementStore(settings.resolved_store_url)
    store.migrate()
    bound_registry_requests(api.registry_timeout_s)
    oracle = RuntimeOracle(
        catalog,
        {},
        store.profile_table(),
        coverage=settings.interval_coverage,
        limit_quantile=settings.limit_quantile,
        memory_limit_quantile=settings.memory_limit_quantile,
    )
    watcher = ChampionWatcher(
        oracle,
        ChampionSource(settings.resolved_tracking_uri, settings.resolved_model_cache, api.registry_timeout_s),
        [(a, p) for a, algo in catalog.algorithms.items() for p in algo.platforms],
        interval_s=api.reload_interval_s,
        profile_table=store.profile_table,
        live_members=store.live_members,
        metrics=metrics,
    )
    watcher.start(wait_s=api.registry_wait_s)
    planning = FollowedDecision(store, ("easy", "conservative"), slurm.cluster)
    return ServiceState(settings, api, scheduling, probing, slurm, catalog, store, oracle, watcher, metrics, planning)


def close_state(state: ServiceState) -> None:
    """Stop polling and close the store's connections."""
    state.watcher.stop()
    state.store.dispose()
