"""The model zoo: scikit-learn-compatible regressors for runtime prediction, knowing nothing of the service."""

from models.zoo import ZOO, available_models, make_model, register

__all__ = ["ZOO", "available_models", "make_model", "register"]
