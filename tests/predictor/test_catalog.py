"""The catalog loads, and a broken one names the file, the entry and the field."""

import re
from pathlib import Path

import pytest
import yaml

from data.ingest import ingest_file
from predictor.catalog import CatalogError, load_catalog
from predictor.oracle import RuntimeOracle
from predictor.settings import BUNDLED_DATA, Settings

BUNDLED = BUNDLED_DATA / "catalog.yaml"


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def bundled_dict() -> dict:
    return yaml.safe_load(BUNDLED.read_text())


def test_bundled_catalog_loads_with_platforms_and_implementations():
    catalog = load_catalog(BUNDLED)
    assert {"cpu1", "cpu2"} <= set(catalog.platforms) and {"blastn", "mafft"} <= set(catalog.algorithms)
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


def test_bool_flags_are_present_when_true_and_absent_when_false():
    catalog = load_catalog(BUNDLED)
    hmmsearch, mafft = catalog.algorithm("hmmsearch"), catalog.algorithm("mafft")
    files = {"hmm": "p.hmm", "target": "t.fa"}
    assert "--max" in hmmsearch.command("cpu1", {**files, "max": True}, threads=1)
    plain = hmmsearch.command("cpu1", files, threads=1)  # default false
    assert "--max" not in plain and plain == hmmsearch.command("cpu1", {**files, "max": False}, threads=1)
    assert plain[:3] == ["hmmsearch", "--cpu", "1"] and plain[-2:] == ["p.hmm", "t.fa"]
    assert mafft.command("cpu2", {"input": "in.fa", "auto": True}, threads=2)[-2:] == ["--auto", "in.fa"]
    with pytest.raises(ValueError, match="max must be true or false"):
        hmmsearch.command("cpu1", {**files, "max": "yes"}, threads=1)


def _flagless(hmmsearch: dict) -> None:
    del hmmsearch["parameters"]["max"]["flag"]


def _flag_inside_a_part(hmmsearch: dict) -> None:
    command = hmmsearch["implementations"]["cpu1"]["command"]
    command[command.index("{max}")] = "--x={max}"


def _unknown_name(hmmsearch: dict) -> None:
    hmmsearch["implementations"]["cpu1"]["command"].append("{nope}")


def _flag_on_a_number(hmmsearch: dict) -> None:
    hmmsearch["parameters"]["f1"]["flag"] = "--F1"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_flagless, "a bool parameter stands alone as '{max}' and needs a 'flag'"),
        (_flag_inside_a_part, "'--x={max}': a bool parameter stands alone"),
        (_unknown_name, "names {nope}, neither a parameter nor {threads}"),
        (_flag_on_a_number, "only a bool parameter has a 'flag'"),
    ],
)
def test_command_templates_are_checked_at_load(tmp_path, change, message):
    data = bundled_dict()
    change(data["algorithms"]["hmmsearch"])
    with pytest.raises(CatalogError, match=rf"algorithms\.hmmsearch.*{re.escape(message)}"):
        load_catalog(write(tmp_path, data))


BLASTX = {
    "description": "Translated nucleotide query against a protein database (NCBI BLAST+).",
    "parameters": {
        "query": {"type": "file", "extractor": "fasta", "required": True},
        "db": {"type": "file", "extractor": "blastdb", "required": True},
        "evalue": {"type": "float", "default": 10, "min": 0},
        "ungapped": {"type": "bool", "default": False, "flag": "-ungapped"},
    },
    "implementations": {
        "cpu1": {"command": ["blastx", "-query", "{query}", "-db", "{db}", "-evalue", "{evalue}", "{ungapped}"]},
    },
}


def site_catalog(tmp_path: Path, algorithms: dict, name: str = "site.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"algorithms": algorithms}))
    return path


def test_a_site_catalog_adds_algorithms_to_the_bundled_one(tmp_path, store):
    site = site_catalog(tmp_path, {"blastx": BLASTX, "tblastx": {**BLASTX, "implementations": {"cpu2": {}}}})
    settings = Settings(site_catalogs=[site])
    catalog = load_catalog(*settings.catalog_paths)
    assert {"blastx", "tblastx", "mafft", "blastn"} <= set(catalog.algorithms) and catalog.platform("cpu1").threads == 1
    assert (
        catalog.algorithm("blastx").command("cpu1", {"query": "q.fa", "db": "nr", "ungapped": True}, threads=1)[-1]
        == "-ungapped"
    )
    rows = tmp_path / "blastx.csv"
    rows.write_text(
        "algorithm,platform,wall_seconds,param.query,param.db,feature.query.residues\n"
        "blastx,cpu1,4.0,q.fa,nr,300\nblastx,cpu1,6.0,q.fa,nr,600\n"
    )
    report = ingest_file(rows, store, catalog)
    assert (report.stored, report.rejected) == (2, [])
    oracle = RuntimeOracle(catalog, {}, store.profile_table(), coverage=0.9, limit_quantile=0.95)
    estimate = oracle.estimate("blastx", features={"query.residues": 450.0})["cpu1"]
    assert (estimate.seconds, estimate.fallback) == (5.0, True)


def test_a_site_catalog_redefining_an_entry_differently_is_an_error_naming_both_files(tmp_path):
    bundled_mafft = bundled_dict()["algorithms"]["mafft"]
    same = site_catalog(tmp_path, {"mafft": bundled_mafft}, "same.yaml")
    assert load_catalog(BUNDLED, same).algorithm("mafft") == load_catalog(BUNDLED).algorithm("mafft")  # identical: fine
    changed = site_catalog(tmp_path, {"mafft": {**bundled_mafft, "description": "ours"}}, "changed.yaml")
    with pytest.raises(CatalogError) as err:
        load_catalog(BUNDLED, changed)
    assert str(err.value).startswith(f"{changed}: algorithms.mafft is already defined, differently, in {BUNDLED}")
    twice = [
        site_catalog(tmp_path, {"blastx": BLASTX}, "a.yaml"),
        site_catalog(tmp_path, {"blastx": {**BLASTX, "description": "b"}}, "b.yaml"),
    ]
    with pytest.raises(
        CatalogError, match=r"b\.yaml: algorithms\.blastx is already defined, differently, in .*a\.yaml"
    ):
        load_catalog(BUNDLED, *twice)


def test_a_problem_in_a_site_catalog_names_the_site_file(tmp_path):
    site = site_catalog(tmp_path, {"blastx": {**BLASTX, "implementations": {"gpu9": {}}}})
    with pytest.raises(
        CatalogError,
        match=rf"{re.escape(str(site))}: \(top level\): .*algorithms\.blastx\.implementations\.gpu9: unknown platform",
    ):
        load_catalog(BUNDLED, site)
    broken = site_catalog(
        tmp_path, {"blastx": {**BLASTX, "parameters": {"evalue": {"type": "float", "min": "low"}}}}, "broken.yaml"
    )
    with pytest.raises(CatalogError, match=rf"{re.escape(str(broken))}: algorithms\.blastx\.parameters\.evalue\.min"):
        load_catalog(BUNDLED, broken)
