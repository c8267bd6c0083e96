"""Turn a job's parameters into features, as the catalog says: one extractor per input file, parameters, derived ones."""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from features import FeatureError, get_extractor
from features.history import FEATURE_NAMES as HISTORY_FEATURES
from features.params import ParamsExtractor
from predictor.catalog import Algorithm


def file_parameters(algorithm: Algorithm) -> dict[str, str]:
    """Map each file parameter of ``algorithm`` to the name of the extractor that reads it."""
    return {name: p.extractor for name, p in algorithm.parameters.items() if p.type == "file" and p.extractor}


def check_known_parameters(algorithm: Algorithm, params: dict[str, Any]) -> None:
    """Reject parameters the algorithm's schema does not declare."""
    unknown = sorted(set(params) - set(algorithm.parameters))
    if unknown:
        raise FeatureError(
            f"algorithm {algorithm.name}",
            f"unknown parameter(s) {', '.join(unknown)}; declared: {', '.join(sorted(algorithm.parameters))}",
        )


def _params_extractor(algorithm: Algorithm) -> ParamsExtractor:
    """The extractor of the plain (non-file) parameters that are features."""
    return ParamsExtractor(
        {n: p.schema_dict() for n, p in algorithm.parameters.items() if p.type != "file" and p.feature}
    )


def parameter_features(algorithm: Algorithm, params: dict[str, Any]) -> dict[str, float]:
    """Features of the plain (non-file) parameters, defaults applied."""
    extractor = _params_extractor(algorithm)
    return extractor.extract({k: v for k, v in params.items() if k in extractor.schema})


def feature_names(algorithm: Algorithm) -> frozenset[str]:
    """Every feature a run of ``algorithm`` can have: its input files', its parameters' and derived ones; for an algorithm
    that declares none (a job log's queue), the job-history features its log is imported with."""
    files = {
        f"{param}.{name}"
        for param, extractor in file_parameters(algorithm).items()
        for name in get_extractor(extractor).feature_names
    }
    return frozenset({*files, *_params_extractor(algorithm).names, *algorithm.derived} or HISTORY_FEATURES)


# id -> (the algorithm, its names): see known_feature_names
_KNOWN: dict[int, tuple[Algorithm, frozenset[str]]] = {}


def known_feature_names(algorithm: Algorithm) -> frozenset[str]:
    """:func:`feature_names`, computed once per loaded algorithm: validating a row asks for them, and building them
    (an extractor per parameter) costs more than the rest of the row's checks. A loaded catalog never changes."""
    hit = _KNOWN.get(id(algorithm))
    if hit is None or hit[0] is not algorithm:
        # catalogs loaded again and again (tests): forget the old ones
        if len(_KNOWN) > 4096:
            _KNOWN.clear()
        hit = _KNOWN[id(algorithm)] = (algorithm, feature_names(algorithm))
    return hit[1]


def file_features(algorithm: Algorithm, params: dict[str, Any], **extractor_options: Any) -> dict[str, float]:
    """Features of every input file named in ``params``, keyed ``<parameter>.<feature>``."""
    out: dict[str, float] = {}
    for name, extractor_name in file_parameters(algorithm).items():
        if name not in params:
            if algorithm.parameters[name].required:
                raise FeatureError(f"parameter {name}", "required input file is missing")
            continue
        extractor = get_extractor(extractor_name, **extractor_options)
        for key, value in extractor.extract(Path(params[name])).items():
            out[f"{name}.{key}"] = value
    return out


def derived_features(algorithm: Algorithm, features: dict[str, float]) -> dict[str, float]:
    """The catalog's derived features of ``algorithm`` computed from a job's other ``features``."""
    out: dict[str, float] = {}
    for name, derived in algorithm.derived.items():
        missing = [operand for operand in derived.product if operand not in features]
        if missing:
            raise FeatureError(f"derived feature {name}", f"needs {', '.join(missing)}, which no extractor gave")
        out[name] = math.prod(features[operand] for operand in derived.product)
    return out


def known_derived_features(algorithm: Algorithm, known: Mapping[str, Any]) -> dict[str, Any]:
    """The derived features of ``algorithm`` not in ``known`` whose operands all are (numbers or NumPy columns)."""
    return {
        name: math.prod(known[operand] for operand in derived.product)
        for name, derived in algorithm.derived.items()
        if name not in known and all(operand in known for operand in derived.product)
    }


BUDGET_OPTION = "time_budget_s"


@cache
def _takes_budget(extractor: str) -> bool:
    """Whether the extractor registered as ``extractor`` takes a time budget."""
    return BUDGET_OPTION in inspect.signature(type(get_extractor(extractor))).parameters


def budget_options(algorithm: Algorithm, budget_s: float | None) -> dict[str, float]:
    """The extractor options that bound reading ``algorithm``'s input files to ``budget_s`` seconds each: none when
    no budget is asked or an extractor of it takes none (a third party's)."""
    takes = budget_s is not None and all(_takes_budget(name) for name in file_parameters(algorithm).values())
    return {BUDGET_OPTION: budget_s} if takes and budget_s is not None else {}


def job_features(algorithm: Algorithm, params: dict[str, Any], **extractor_options: Any) -> dict[str, float]:
    """All features of one job: its input files', its parameters' and the ones derived from them."""
    check_known_parameters(algorithm, params)
    features = {**file_features(algorithm, params, **extractor_options), **parameter_features(algorithm, params)}
    return {**features, **derived_features(algorithm, features)}
