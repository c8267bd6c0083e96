"""The core of the runtime-prediction service: domain types, catalog, settings, measurement store, registry and oracle."""

from importlib.metadata import PackageNotFoundError, version

try:
    # the installed package's, as pyproject.toml gave it
    __version__ = version("runtime-predictor")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"
