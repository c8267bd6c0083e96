"""Helpers of the training tests: the champion the service would load after training."""

from __future__ import annotations

from predictor.champion_source import ChampionSource
from predictor.registry import Champion
from predictor.settings import Settings


def served_champion(settings: Settings, algorithm: str, platform: str) -> Champion | None:
    """The champion the service loads for the pair (registry alias, then the disk cache), or None when there is none."""
    source = ChampionSource(settings.resolved_tracking_uri, settings.resolved_model_cache)
    loaded = source.load_current([(algorithm, platform)])
    return loaded[(algorithm, platform)].champion if loaded else None
