"""Tiny sweeps against the real tools (MAFFT, BLAST, HMMER): stored as they finish, resumable, budgeted, failures kept."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from data.sweep import (
    PlanError,
    command_for,
    expand,
    load_plan,
    materialise_inputs,
    run_sweep,
)
from features.fastq import FastqExtractor
from predictor.catalog import load_catalog
from predictor.settings import BUNDLED_DATA
from predictor.store import MeasurementStore
from tests.required import required_tools

pytestmark = pytest.mark.tools

PLAN = {
    "seed": 3,
    "repeats": 2,
    "timeout_s": 60,
    "inputs": {
        "fam": {
            "generator": "family",
            "alphabet": "protein",
            "grid": {"n_sequences": [4, 12], "length": [40], "mutation_rate": [0.2]},
        }
    },
    "jobs": [{"algorithm": "mafft", "platforms": ["cpu1", "cpu2"], "files": {"input": "fam"}, "grid": {"retree": [1]}}],
}


@pytest.fixture
def plan_file(tmp_path: Path) -> Path:
    required_tools("mafft")
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(PLAN))
    return path


def test_sweep_runs_real_tool_and_resumes(plan_file: Path, tmp_path: Path):
    catalog = load_catalog(BUNDLED_DATA / "catalog.yaml")
    store = MeasurementStore(f"sqlite:///{tmp_path / 'store.db'}")
    store.migrate()
    plan = load_plan(plan_file)
    seen: list[int] = []
    done = run_sweep(plan, catalog, store, tmp_path / "inputs", on_run=lambda m, i, n: seen.append(i))
    assert len(done) == 2 * 2 * 2 == store.count() and seen == list(range(1, 9))
    assert all(m.succeeded and m.wall_seconds > 0 and m.source.value == "probe" for m in done)
    assert {m.features["input.sequences"] for m in done} == {4, 12}
    cpu1 = next(m for m in done if m.platform == "cpu1")
    assert cpu1.context["command"][:3] == ["taskset", "-c", "0"] and "--thread" in cpu1.context["command"]
    assert "load_avg_1m" in cpu1.context
    assert run_sweep(plan, catalog, store, tmp_path / "inputs") == [], "a finished plan runs nothing again"


def test_budget_stops_starting_runs(plan_file: Path, tmp_path: Path):
    catalog = load_catalog(BUNDLED_DATA / "catalog.yaml")
    store = MeasurementStore(f"sqlite:///{tmp_path / 'store.db'}")
    store.migrate()
    assert run_sweep(load_plan(plan_file), catalog, store, tmp_path / "inputs", budget_s=0.0) == []
    assert store.count() == 0


def test_a_run_over_the_plans_timeout_is_stored_censored(plan_file: Path, tmp_path: Path):
    plan = {
        **PLAN,
        "repeats": 1,
        "timeout_s": 0.2,
        "inputs": {
            "big": {"generator": "family", "grid": {"n_sequences": [400], "length": [400], "mutation_rate": [0.3]}}
        },
        "jobs": [{"algorithm": "mafft", "platforms": ["cpu1"], "files": {"input": "big"}, "grid": {"retree": [2]}}],
    }
    (done,), _ = sweep_once(tmp_path, plan)
    assert done.censored and done.exit_status == 137 and 0.2 <= done.wall_seconds < 10
    store = MeasurementStore(f"sqlite:///{tmp_path / 'store.db'}")
    assert store.count(informative_only=True) == 1 and store.measurements(with_censored=True)[0].censored


def test_expansion_order_is_seeded_and_commands_filled(plan_file: Path, tmp_path: Path):
    catalog = load_catalog(BUNDLED_DATA / "catalog.yaml")
    plan = load_plan(plan_file)
    inputs = materialise_inputs(plan, tmp_path / "inputs")
    first, second = expand(plan, catalog, inputs), expand(plan, catalog, inputs)
    assert first == second and len({r.run_id(plan.seed) for r in first}) == 8
    command = command_for(next(r for r in first if r.platform == "cpu2"), catalog)
    assert command[:4] == ["mafft", "--quiet", "--thread", "2"] and command[-1].endswith(".fa")


def test_invalid_plan_is_named(tmp_path: Path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**PLAN, "repeats": 0}))
    with pytest.raises(PlanError, match="bad.yaml: invalid plan: repeats"):
        load_plan(path)


def sweep_once(tmp_path: Path, plan: dict) -> tuple[list, Path]:
    """Run ``plan`` into a fresh store; returns the measurements and the inputs folder."""
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    store = MeasurementStore(f"sqlite:///{tmp_path / 'store.db'}")
    store.migrate()
    done = run_sweep(load_plan(path), load_catalog(BUNDLED_DATA / "catalog.yaml"), store, tmp_path / "inputs")
    assert store.count() == len(done)
    return done, tmp_path / "inputs"


BLAST_PLAN = {
    "seed": 4,
    "timeout_s": 60,
    "inputs": {
        "nt": {
            "generator": "blastdb",
            "alphabet": "dna",
            "grid": {"n_sequences": [20, 60]},
            "options": {"length_mean": 400},
        },
        "aa": {
            "generator": "blastdb",
            "alphabet": "protein",
            "grid": {"n_sequences": [40]},
            "options": {"length_mean": 150},
        },
        "ntq": {
            "generator": "sampled",
            "source": "nt",
            "alphabet": "dna",
            "grid": {"n_sequences": [3], "length_mean": [200]},
            "options": {"hit_fraction": 1.0},
        },
        "aaq": {
            "generator": "sampled",
            "source": "aa",
            "grid": {"n_sequences": [3], "length_mean": [80]},
            "options": {"hit_fraction": 1.0},
        },
        "txq": {
            "generator": "sampled",
            "source": "nt",
            "grid": {"n_sequences": [2], "length_mean": [60]},
            "options": {"hit_fraction": 1.0, "translate": True},
        },
    },
    "jobs": [
        {"algorithm": "blastn", "platforms": ["cpu1", "cpu2"], "files": {"query": "ntq", "db": "nt"}},
        {
            "algorithm": "blastp",
            "platforms": ["cpu1"],
            "files": {"query": "aaq", "db": "aa"},
            "grid": {"task": ["blastp-fast"], "word_size": [5]},
        },
        {"algorithm": "tblastn", "platforms": ["cpu2"], "files": {"query": "txq", "db": "nt"}},
    ],
}


def test_blast_sweep_on_generated_databases(tmp_path: Path):
    required_tools("makeblastdb", "blastn", "blastp", "tblastn")
    done, _ = sweep_once(tmp_path, BLAST_PLAN)
    assert sorted(m.algorithm for m in done) == ["blastn"] * 4 + ["blastp"] + ["tblastn"] * 2
    assert all(m.succeeded and m.wall_seconds > 0 for m in done)
    for m in done:
        assert m.features["search_space"] == m.features["query.residues"] * m.features["db.residues"]
        assert m.params["db"].endswith(".blastdb/db") and "-num_threads" in m.context["command"]
    assert {m.features["db.sequences"] for m in done if m.algorithm == "blastn"} == {20, 60}
    assert next(m for m in done if m.algorithm == "blastp").features["task=blastp-fast"] == 1.0


def test_failing_tool_run_is_stored_as_failed(tmp_path: Path):
    required_tools("makeblastdb", "blastn")
    plan = {**BLAST_PLAN, "jobs": BLAST_PLAN["jobs"][:1]}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    inputs = materialise_inputs(load_plan(path), tmp_path / "inputs")
    broken = inputs["nt"][0]
    Path(f"{broken}.nsq").unlink()  # the header still reads fine (features extract), the sequences are gone
    done, _ = sweep_once(tmp_path, plan)
    failed = [m for m in done if m.params["db"] == str(broken)]
    assert len(failed) == 2 and all(m.exit_status != 0 and not m.succeeded for m in failed)
    assert len(done) > len(failed) and all(m.succeeded for m in done if m not in failed)


def test_hmmsearch_sweep_on_built_profiles(tmp_path: Path):
    required_tools("mafft", "hmmbuild", "hmmsearch")
    plan = {
        "seed": 5,
        "timeout_s": 60,
        "inputs": {
            "hmms": {
                "generator": "hmm",
                "grid": {"n_models": [1, 2]},
                "options": {"length_mean": 50, "n_members": 4, "mutation_rate": 0.2},
            },
            "targets": {
                "generator": "sampled",
                "source": "hmms",
                "grid": {"n_sequences": [40]},
                "options": {"length_mean": 60, "hit_fraction": 0.25},
            },
        },
        "jobs": [
            {"algorithm": "hmmsearch", "platforms": ["cpu1", "cpu2"], "files": {"hmm": "hmms", "target": "targets"}}
        ],
    }
    done, _ = sweep_once(tmp_path, plan)
    assert len(done) == 4 and all(m.succeeded for m in done)
    assert {m.features["hmm.models"] for m in done} == {1, 2}
    for m in done:
        assert m.features["search_space"] == m.features["hmm.total_length"] * m.features["target.residues"]
    two = next(m for m in done if m.features["hmm.models"] == 2).params["hmm"]
    one = next(m for m in done if m.features["hmm.models"] == 1).params["hmm"]
    assert Path(two).read_bytes().startswith(Path(one).read_bytes()), "a larger profile file extends the smaller"


def test_bwa_mem_sweep_maps_sampled_reads(tmp_path: Path):
    required_tools("bwa")
    plan = {
        "seed": 6,
        "timeout_s": 60,
        "inputs": {
            "ref": {
                "generator": "bwa",
                "alphabet": "dna",
                "grid": {"n_sequences": [2, 4]},
                "options": {"length_mean": 3000},
            },
            "reads": {
                "generator": "fastq",
                "source": "ref",
                "alphabet": "dna",
                "grid": {"n_reads": [200]},
                "options": {"read_length": 80},
            },
        },
        "jobs": [
            {"algorithm": "bwa_mem", "platforms": ["cpu1", "cpu2"], "files": {"reference": "ref", "reads": "reads"}}
        ],
    }
    done, _ = sweep_once(tmp_path, plan)
    assert len(done) == 4 and all(m.succeeded for m in done)
    assert {m.features["reference.sequences"] for m in done} == {2, 4}
    for m in done:
        assert m.features["reads.reads"] == 200 and Path(m.params["reference"] + ".bwt").is_file()
        assert m.features["search_space"] == m.features["reads.bases"] * m.features["reference.residues"]


def test_fastq_set_samples_reads_from_its_source(tmp_path: Path):
    plan = {
        "inputs": {
            "ref": {"generator": "random", "alphabet": "dna", "grid": {"n_sequences": [2], "length_mean": [2000]}},
            "reads": {
                "generator": "fastq",
                "source": "ref",
                "alphabet": "dna",
                "grid": {"n_reads": [100, 300], "read_length": [50]},
            },
        },
        "jobs": [],
    }
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    files = materialise_inputs(load_plan(path), tmp_path / "inputs")
    assert [FastqExtractor().extract(f)["reads"] for f in files["reads"]] == [100, 300]
    assert files["reads"][0].name == "reads-dna-n_reads100-read_length50-s0.fq"
    assert materialise_inputs(load_plan(path), tmp_path / "inputs") == files, "existing inputs are reused"


@pytest.mark.parametrize(
    ("inputs", "problem"),
    [
        ({"q": {"generator": "sampled", "grid": {"n_sequences": [1]}}}, "needs 'source'"),
        ({"f": {"generator": "family", "source": "x", "grid": {"n_sequences": [1]}}}, "takes no 'source'"),
        (
            {"q": {"generator": "sampled", "source": "nowhere", "grid": {"n_sequences": [1]}}},
            "not a non-sampled input set",
        ),
        (
            {"db": {"generator": "blastdb", "grid": {"n_sequences": [1], "length_mean": [5]}}},
            "varies exactly n_sequences",
        ),
        ({"h": {"generator": "hmm", "grid": {"n_sequences": [1]}}}, "varies exactly n_models"),
        ({"r": {"generator": "bwa", "grid": {"n_sequences": [1]}}}, "set alphabet: dna"),
    ],
)
def test_invalid_input_sets_are_named(tmp_path: Path, inputs: dict, problem: str):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"inputs": inputs, "jobs": []}))
    with pytest.raises(PlanError, match=problem):
        load_plan(path)


def test_job_naming_an_unknown_set_is_rejected(tmp_path: Path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**PLAN, "jobs": [{**PLAN["jobs"][0], "files": {"input": "missing"}}]}))
    with pytest.raises(PlanError, match="unknown input set"):
        load_plan(path)


def test_bad_generator_arguments_are_a_plan_error(tmp_path: Path):
    path = tmp_path / "bad.yaml"
    path.write_text(
        yaml.safe_dump(
            {"inputs": {"r": {"generator": "random", "grid": {"n_sequences": [2], "colour": [1]}}}, "jobs": []}
        )
    )
    with pytest.raises(PlanError, match="inputs.r: cannot generate"):
        materialise_inputs(load_plan(path), tmp_path / "inputs")
