"""The runtime oracle: job -> features -> champion per platform -> estimates.

The API, the CLI, the scheduler and the simulator all ask this one object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from predictor.catalog import Catalog
from predictor.domain import Estimate
from predictor.jobfeatures import check_known_parameters, job_features
from predictor.registry import Champion, configure_mlflow, load_champions


class RuntimeOracle:
    """Estimates a job's wall seconds on each eligible platform.

    ``champions`` maps (algorithm, platform) to a loaded model; ``profile_table``
    maps the same keys to (mean seconds, count) and answers, marked as fallback,
    where no model exists (seed 000's profile table).
    """

    def __init__(
        self,
        catalog: Catalog,
        champions: Mapping[tuple[str, str], Champion],
        profile_table: Mapping[tuple[str, str], tuple[float, int]] | None = None,
    ) -> None:
        self.catalog = catalog
        self.champions = dict(champions)
        self.profile_table = dict(profile_table or {})

    def eligible_platforms(self, algorithm: str, platforms: list[str] | None = None) -> list[str]:
        """Platforms with an implementation of ``algorithm``, restricted to ``platforms`` if given."""
        implemented = self.catalog.algorithm(algorithm).platforms
        if platforms is None:
            return implemented
        for name in platforms:
            self.catalog.platform(name)
        return [p for p in platforms if p in implemented]

    def features(self, algorithm: str, params: dict[str, Any]) -> dict[str, float]:
        """Features of a job, extracted as the catalog declares."""
        return job_features(self.catalog.algorithm(algorithm), params)

    def estimate(
        self,
        algorithm: str,
        params: dict[str, Any] | None = None,
        platforms: list[str] | None = None,
        features: dict[str, float] | None = None,
    ) -> dict[str, Estimate]:
        """Estimate the job on each eligible platform; ``features`` skips extraction when given."""
        params = params or {}
        if features is None:
            features = self.features(algorithm, params)
        else:
            check_known_parameters(self.catalog.algorithm(algorithm), params)
        return {p: self._estimate_on(algorithm, p, features) for p in self.eligible_platforms(algorithm, platforms)}

    def _estimate_on(self, algorithm: str, platform: str, features: dict[str, float]) -> Estimate:
        champion = self.champions.get((algorithm, platform))
        if champion is None:
            return self._fallback(algorithm, platform, "no champion model for this algorithm and platform")
        missing = [n for n in champion.feature_names if n not in features]
        if missing:
            return self._fallback(algorithm, platform, f"features missing for the model: {', '.join(missing)}")
        row = pd.DataFrame([[float(features[n]) for n in champion.feature_names]], columns=champion.feature_names)
        seconds = max(float(champion.model.predict(row)[0]), 0.0)
        return Estimate(
            platform=platform,
            seconds=seconds,
            model_name=champion.name,
            model_version=champion.version,
            flavor=champion.flavor,
            features={n: float(features[n]) for n in champion.feature_names},
        )

    def _fallback(self, algorithm: str, platform: str, reason: str) -> Estimate:
        entry = self.profile_table.get((algorithm, platform))
        if entry is None:
            return Estimate(platform=platform, reason=f"{reason}; no measurements to fall back on")
        mean, count = entry
        return Estimate(
            platform=platform,
            seconds=mean,
            fallback=True,
            model_name="profile-table",
            reason=f"{reason}; mean of {count} measured runs",
        )


def build_oracle(catalog: Catalog, tracking_uri: str, profile_table: Mapping[tuple[str, str], tuple[float, int]]) -> RuntimeOracle:
    """An oracle over every champion registered for the catalog's (algorithm, platform) pairs."""
    configure_mlflow(tracking_uri)
    pairs = [(a, p) for a, algo in catalog.algorithms.items() for p in algo.platforms]
    return RuntimeOracle(catalog, load_champions(pairs), profile_table)
