"""Features of a job's plain parameters: numbers pass through, booleans become 0/1, categoricals one-hot."""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any, ClassVar

from features.base import CostClass, FeatureError

PARAM_TYPES = ("int", "float", "bool", "categorical", "string", "file")
# not features themselves: files are read by the file extractors
_SKIPPED = ("string", "file")
_TRUE = ("true", "yes", "1")
_FALSE = ("false", "no", "0")


class ParamsExtractor:
    """Turns a parameter dict into features as a schema says (``name -> {type, default, choices, min, max}``)."""

    name: ClassVar[str] = "params"
    feature_names: ClassVar[tuple[str, ...]] = ()  # depend on the schema; see ``names``
    cost = CostClass.METADATA

    def __init__(self, schema: dict[str, dict[str, Any]]) -> None:
        for param, spec in schema.items():
            kind = spec.get("type")
            if kind not in PARAM_TYPES:
                raise ValueError(f"parameter {param}: type must be one of {', '.join(PARAM_TYPES)}, got {kind!r}")
            if kind == "categorical" and not spec.get("choices"):
                raise ValueError(f"parameter {param}: a categorical parameter needs 'choices'")
        self.schema = schema
        self.names: list[str] = [name for param, spec in schema.items() for name in _names(param, spec)]

    def extract(self, value: dict[str, Any]) -> dict[str, float]:
        """Features of the parameters in ``value``; missing ones take their default."""
        unknown = sorted(set(value) - set(self.schema))
        if unknown:
            raise FeatureError(f"parameter {unknown[0]}", f"not in the schema (known: {', '.join(self.schema)})")
        out: dict[str, float] = {}
        for param, spec in self.schema.items():
            if spec["type"] in _SKIPPED:
                continue
            given = value.get(param)
            if given is None:
                given = spec.get("default")
            if given is None:
                raise FeatureError(f"parameter {param}", "missing, and the schema gives no default")
            out.update(_features(param, spec, given))
        return out


def _names(param: str, spec: dict[str, Any]) -> list[str]:
    """Feature names one parameter produces."""
    if spec["type"] in _SKIPPED:
        return []
    if spec["type"] == "categorical":
        return [f"{param}={choice}" for choice in spec["choices"]]
    return [param]


def _features(param: str, spec: dict[str, Any], value: Any) -> dict[str, float]:
    """Features of one parameter's value, checked against its spec."""
    kind = spec["type"]
    if kind == "bool":
        return {param: _boolean(param, value)}
    if kind == "categorical":
        if value not in spec["choices"]:
            raise FeatureError(f"parameter {param}", f"unknown choice {value!r}; expected one of {spec['choices']}")
        return {f"{param}={choice}": float(choice == value) for choice in spec["choices"]}
    return {param: _number(param, spec, value)}


def _boolean(param: str, value: Any) -> float:
    """0/1 from a bool or from true/false, yes/no, 1/0 strings (any case)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return float(value.strip().lower() in _TRUE)
    raise FeatureError(f"parameter {param}", f"expected a boolean, got {value!r}")


def _number(param: str, spec: dict[str, Any], value: Any) -> float:
    """A finite int or float within the spec's bounds."""
    kind = spec["type"]
    if isinstance(value, bool) or not isinstance(value, Real):
        raise FeatureError(f"parameter {param}", f"expected {'an int' if kind == 'int' else 'a number'}, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise FeatureError(f"parameter {param}", f"must be finite, got {value!r}")
    if kind == "int" and not (isinstance(value, Integral) or number.is_integer()):
        raise FeatureError(f"parameter {param}", f"expected an int, got {value!r}")
    low, high = spec.get("min"), spec.get("max")
    if low is not None and number < low:
        raise FeatureError(f"parameter {param}", f"{value!r} is below the minimum {low}")
    if high is not None and number > high:
        raise FeatureError(f"parameter {param}", f"{value!r} is above the maximum {high}")
    return number
