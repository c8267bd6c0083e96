"""Training: datasets from the store, fold plans, metrics, cross-validation, tracking and champions."""
