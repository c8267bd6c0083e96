"""The catalog loads, and a broken one names the file, the entry and the field."""

from pathlib import Path

import pytest
import yaml

from predictor.catalog import CatalogError, load_catalog
from predictor.settings import BUNDLED_DATA

BUNDLED = BUNDLED_DATA / "catalog.yaml"


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def bundled_dict() -> dict:
    return yaml.safe_load(BUNDLED.read_text())


def test_bundled_catalog_loads_with_platforms_and_implementations():
    catalog = load_catalog(BUNDLED)
    assert {"cpu1", "cpu2"} <= set(catalog.platforms)
    for algo in catalog.algorithms.values():
        assert algo.platforms, algo.name
        if any(i.command for i in algo.implementations.values()):  # job classes of imported logs run nothing here
            assert any(p.type == "file" for p in algo.parameters.values()), algo.name
    assert catalog.platforms["cpu1"].cores == 1


def test_missing_file_is_named(tmp_path):
    with pytest.raises(CatalogError, match="nope.yaml: cannot read"):
        load_catalog(tmp_path / "nope.yaml")


def test_invalid_yaml_is_named(tmp_path):
    path = tmp_path / "catalog.yaml"
    path.write_text("platforms: [unclosed")
    with pytest.raises(CatalogError, match="catalog.yaml: not valid YAML"):
        load_catalog(path)


def test_bad_field_names_entry_and_field(tmp_path):
    data = bundled_dict()
    data["platforms"]["cpu1"]["cores"] = "many"
    with pytest.raises(CatalogError) as err:
        load_catalog(write(tmp_path, data))
    assert "catalog.yaml" in str(err.value) and "platforms.cpu1.cores" in str(err.value)


def test_unknown_field_is_rejected(tmp_path):
    data = bundled_dict()
    data["platforms"]["cpu2"]["colour"] = "blue"
    with pytest.raises(CatalogError, match=r"platforms\.cpu2\.colour"):
        load_catalog(write(tmp_path, data))


def test_implementation_on_unknown_platform(tmp_path):
    data = bundled_dict()
    data["algorithms"]["mafft"]["implementations"]["gpu9"] = {"command": ["x"]}
    with pytest.raises(CatalogError, match=r"algorithms\.mafft\.implementations\.gpu9: unknown platform"):
        load_catalog(write(tmp_path, data))


def test_file_parameter_needs_extractor(tmp_path):
    data = bundled_dict()
    del data["algorithms"]["mafft"]["parameters"]["input"]["extractor"]
    with pytest.raises(CatalogError, match=r"algorithms\.mafft\.parameters\.input.*extractor"):
        load_catalog(write(tmp_path, data))


def test_not_a_mapping(tmp_path):
    with pytest.raises(CatalogError, match="must be a mapping"):
        load_catalog(write(tmp_path, ["a", "b"]))


def test_lookup_errors_list_known_names():
    catalog = load_catalog(BUNDLED)
    with pytest.raises(KeyError, match="unknown algorithm 'nope'; known: "):
        catalog.algorithm("nope")
    with pytest.raises(KeyError, match="unknown platform 'gpu'"):
        catalog.platform("gpu")
