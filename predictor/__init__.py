"""Runtime-prediction service: domain types, catalog, settings, measurement store, oracle and CLI."""

__version__ = "0.1.0"
