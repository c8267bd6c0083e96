"""Derived features: declared per algorithm in the catalog, validated at load, computed with the job's features."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from features import FeatureError, get_extractor
from predictor.catalog import CatalogError, load_catalog
from predictor.jobfeatures import derived_features, job_features
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
    assert {name for name, algo in catalog.algorithms.items() if algo.derived} >= {"blastn", "blastp", "tblastn", "hmmsearch"}
    for algo in catalog.algorithms.values():
        for derived in algo.derived.values():
            for operand in derived.product:
                param, _, feature = operand.partition(".")
                if feature:
                    assert feature in get_extractor(algo.parameters[param].extractor).feature_names, (algo.name, operand)
