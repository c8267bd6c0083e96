"""The model zoo: scikit-learn-compatible regressors for runtime prediction, knowing nothing of the service.

The zoo is imported on first use of a name below, not with the package: it loads torch, LightGBM and
scikit-learn, which a caller of ``models.transforms`` alone (the serving envelope, the CLI) does not need.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from models.zoo import ZOO, available_models, make_model, register

__all__ = ["ZOO", "available_models", "make_model", "register"]


def __getattr__(name: str) -> Any:
    """The zoo's ``name``, importing the zoo the first time one is asked for (PEP 562)."""
    if name in __all__:
        return getattr(import_module("models.zoo"), name)
    raise AttributeError(f"module 'models' has no attribute {name!r}")
