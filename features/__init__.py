"""Per-algorithm feature extractors: turn a job's parameters and input files into numbers.

This package knows nothing of the service; the service looks extractors up by name
through :func:`features.registry.get_extractor`.
"""

from features.base import CostClass, Extractor, FeatureError
from features.registry import available_extractors, get_extractor

__all__ = ["CostClass", "Extractor", "FeatureError", "available_extractors", "get_extractor"]
