"""Derived features: declared per algorithm in the catalog, validated at load, computed with the job's features."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from features import FeatureError, get_extractor
from predictor.catalog import CatalogError, load_catalog
from predictor.jobfeatures import derived_features, job_features, known_derived_features
from predictor.oracle import RuntimeOracle
from predictor.settings import BUNDLED_DATA

PLATFORMS = {"p": {"kind": "cpu", "cores": 1, "clock_ghz": 1, "memory_gb": 1, "disk": "ssd", "power_watts": 1}}
ALGORITHM = {
    "parameters": {
        "a": {"type": "file", "extractor": "fasta", "required": True},
        "b": {"type": "file", "extractor": "fasta", "required": True},
        "extra": {"type": "file", "extractor": "fasta"},
        "n": {"type": "int", "default": 3},
        "mode": {"type": "categorical", "choices": ["x", "y"], "default": "x"},
    },
    "implementations": {"p": {"command": ["true"]}},
}


def catalog_with(tmp_path: Path, derived: dict):
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump({"platforms": PLATFORMS, "algorithms": {"job": {**ALGORITHM, "derived": derived}}}))
    return load_catalog(path)


def test_product_of_file_features_and_a_number_parameter(tmp_path: Path):
    algorithm = catalog_with(tmp_path, {"space": {"product": ["a.residues", "b.sequences", "n"]}}).algorithm("job")
    (tmp_path / "a.fa").write_text(">1\nACGTACGT\n>2\nAC\n")
    (tmp_path / "b.fa").write_text(">1\nMK\n>2\nV\n>3\nW\n")
    features = job_features(algorithm, {"a": str(tmp_path / "a.fa"), "b": str(tmp_path / "b.fa"), "n": 5})
    assert features["space"] == 10 * 3 * 5
    with pytest.raises(FeatureError, match="derived feature space: needs b.sequences"):
        derived_features(algorithm, {"a.residues": 1.0, "n": 1.0})


@pytest.mark.parametrize(
    ("derived", "problem"),
    [
        ({"s": {"product": ["a.residues"]}}, "at least 2"),
        ({"s": {"product": ["a.residues", "nope.residues"]}}, "'nope.residues' is neither"),
        ({"s": {"product": ["a.residues", "extra.residues"]}}, "'extra.residues' is neither"),
        ({"s": {"product": ["a.residues", "mode"]}}, "'mode' is neither"),
        ({"s": {"product": ["a.residues", "a"]}}, "'a' is neither"),
        ({"a.s": {"product": ["a.residues", "n"]}}, "must not contain"),
        ({"n": {"product": ["a.residues", "n"]}}, "nor be a parameter"),
        ({"s": {"sum": ["a.residues", "n"]}}, "Extra inputs are not permitted"),
    ],
)
def test_invalid_derived_features_are_named(tmp_path: Path, derived: dict, problem: str):
    with pytest.raises(CatalogError, match=problem):
        catalog_with(tmp_path, derived)


def test_bundled_derived_features_name_features_the_extractors_give():
    catalog = load_catalog(BUNDLED_DATA / "catalog.yaml")
    assert {name for name, algo in catalog.algorithms.items() if algo.derived} >= {
        "blastn",
        "blastp",
        "tblastn",
        "hmmsearch",
    }
    for algo in catalog.algorithms.values():
        for derived in algo.derived.values():
            for operand in derived.product:
                param, _, feature = operand.partition(".")
                if feature:
                    assert feature in get_extractor(algo.parameters[param].extractor).feature_names, (
                        algo.name,
                        operand,
                    )


def test_given_features_get_each_derived_feature_whose_operands_are_there(tmp_path: Path):
    algorithm = catalog_with(
        tmp_path, {"space": {"product": ["a.residues", "b.residues"]}, "scaled": {"product": ["a.residues", "n"]}}
    ).algorithm("job")
    known = {"a.residues": 4.0, "n": 3.0}
    assert known_derived_features(algorithm, known) == {
        "scaled": 12.0
    }  # space lacks b.residues: left to the model to name
    assert known_derived_features(algorithm, {**known, "b.residues": 2.0, "scaled": 1.0}) == {
        "space": 8.0
    }  # given wins
    columns = known_derived_features(
        algorithm, {"a.residues": np.array([1.0, 2.0]), "b.residues": np.array([3.0, 4.0])}
    )
    assert columns["space"].tolist() == [3.0, 8.0]


def test_the_oracle_derives_features_from_client_given_ones():
    catalog = load_catalog(BUNDLED_DATA / "catalog.yaml")
    oracle = RuntimeOracle(catalog, {}, coverage=0.9, limit_quantile=0.95)
    job = oracle.prepare("blastn", {"query": "q.fa", "db": "nt"}, None, {"query.residues": 1000.0, "db.residues": 5e6})
    assert job.features["search_space"] == 5e9
