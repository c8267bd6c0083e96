"""The parameter extractor: pass-through numbers, 0/1 booleans, one-hot categoricals, defaults and errors."""

from __future__ import annotations

import math

import pytest

from features.base import CostClass, FeatureError
from features.params import ParamsExtractor

SCHEMA = {
    "evalue": {"type": "float", "default": 10, "min": 0},
    "threads": {"type": "int", "default": 1, "min": 1, "max": 64},
    "ungapped": {"type": "bool", "default": False},
    "task": {"type": "categorical", "choices": ["megablast", "blastn"], "default": "megablast"},
    "query": {"type": "file"},
    "label": {"type": "string", "default": "x"},
}


@pytest.fixture
def extractor() -> ParamsExtractor:
    return ParamsExtractor(SCHEMA)


def test_names_and_cost(extractor: ParamsExtractor):
    assert extractor.names == ["evalue", "threads", "ungapped", "task=megablast", "task=blastn"]
    assert ParamsExtractor.feature_names == ()
    assert extractor.name == "params" and extractor.cost is CostClass.METADATA


def test_defaults_fill_missing_parameters(extractor: ParamsExtractor):
    assert extractor.extract({}) == {
        "evalue": 10.0,
        "threads": 1.0,
        "ungapped": 0.0,
        "task=megablast": 1.0,
        "task=blastn": 0.0,
    }


def test_given_values_are_features(extractor: ParamsExtractor):
    features = extractor.extract({"evalue": 1e-5, "threads": 8, "ungapped": True, "task": "blastn", "query": "q.fa"})
    assert features == {"evalue": 1e-5, "threads": 8.0, "ungapped": 1.0, "task=megablast": 0.0, "task=blastn": 1.0}
    assert list(features) == extractor.names
    assert all(isinstance(v, float) for v in features.values())


@pytest.mark.parametrize(
    ("text", "value"), [("true", 1.0), ("Yes", 1.0), ("1", 1.0), ("FALSE", 0.0), ("no", 0.0), ("0", 0.0)]
)
def test_boolean_strings(extractor: ParamsExtractor, text: str, value: float):
    assert extractor.extract({"ungapped": text})["ungapped"] == value


def test_integral_float_is_an_int(extractor: ParamsExtractor):
    assert extractor.extract({"threads": 4.0})["threads"] == 4.0


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        ({"threads": 0}, "below the minimum 1"),
        ({"threads": 65}, "above the maximum 64"),
        ({"threads": 2.5}, "expected an int"),
        ({"threads": True}, "expected an int"),
        ({"threads": "4"}, "expected an int"),
        ({"evalue": False}, "expected a number"),
        ({"evalue": math.nan}, "finite"),
        ({"evalue": math.inf}, "finite"),
        ({"evalue": -1}, "below the minimum"),
        ({"ungapped": "maybe"}, "expected a boolean"),
        ({"ungapped": 1}, "expected a boolean"),
        ({"task": "tblastx"}, "unknown choice 'tblastx'"),
        ({"color": "red"}, "not in the schema"),
    ],
)
def test_bad_values_raise_feature_error_naming_the_parameter(extractor: ParamsExtractor, params: dict, problem: str):
    with pytest.raises(FeatureError, match=problem) as caught:
        extractor.extract(params)
    assert caught.value.source == f"parameter {next(iter(params))}"


def test_missing_without_default_is_an_error():
    extractor = ParamsExtractor({"k": {"type": "int", "default": None, "min": None, "max": None, "choices": None}})
    with pytest.raises(FeatureError, match="no default") as caught:
        extractor.extract({})
    assert caught.value.source == "parameter k"
    assert extractor.extract({"k": 3}) == {"k": 3.0}


@pytest.mark.parametrize(
    "schema",
    [{"x": {"type": "complex"}}, {"x": {}}, {"x": {"type": "categorical", "choices": []}}],
)
def test_invalid_schema_is_rejected(schema: dict):
    with pytest.raises(ValueError):
        ParamsExtractor(schema)
