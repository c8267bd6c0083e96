"""Probing by hand against the real MAFFT: candidates from a plan, ranked, run within a budget, resumed without repeats."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from data.probe import candidates, rank_candidates, restrict, run_probes
from data.sweep import PlanError, load_plan
from predictor.catalog import load_catalog
from predictor.settings import BUNDLED_DATA
from predictor.store import MeasurementStore
from tests.required import required_tools

pytestmark = pytest.mark.tools

PLAN = {
    "seed": 5,
    "repeats": 3,
    "timeout_s": 60,
    "inputs": {
        "fam": {
            "generator": "family",
            "alphabet": "protein",
            "grid": {"n_sequences": [4, 6, 8, 12, 16], "length": [40], "mutation_rate": [0.2]},
        },
        "unused": {"generator": "random", "alphabet": "dna", "grid": {"n_sequences": [2], "length_mean": [50]}},
    },
    "jobs": [
        {"algorithm": "mafft", "platforms": ["cpu1", "cpu2"], "files": {"input": "fam"}, "grid": {"retree": [1, 2]}}
    ],
}


@pytest.fixture
def plan(tmp_path: Path):
    required_tools("mafft")
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(PLAN))
    return load_plan(path)


def _store(tmp_path: Path) -> MeasurementStore:
    store = MeasurementStore(f"sqlite:///{tmp_path / 'store.db'}")
    store.migrate()
    return store


def test_candidates_are_the_pairs_jobs_once_each_with_their_features(plan, tmp_path: Path):
    catalog = load_catalog(BUNDLED_DATA / "catalog.yaml")
    pool = candidates(plan, catalog, tmp_path / "inputs", "mafft", "cpu1")
    assert len(pool) == 5 * 2 and {c.run.platform for c in pool} == {"cpu1"} and {c.run.repeat for c in pool} == {0}
    assert {c.features["input.sequences"] for c in pool} == {4, 6, 8, 12, 16}
    assert not list((tmp_path / "inputs").glob("unused*")), "only the sets the pair reads are generated"
    assert len({c.run_id(plan.seed) for c in pool}) == len(pool) and all(
        c.run_id(plan.seed).startswith("probe-") for c in pool
    )
    with pytest.raises(PlanError, match="no job of mafft on gpu"):
        restrict(plan, "mafft", "gpu")


def test_probe_run_spends_its_budget_then_resumes_without_repeating(plan, tmp_path: Path):
    catalog = load_catalog(BUNDLED_DATA / "catalog.yaml")
    store = _store(tmp_path)
    pairs = [("mafft", "cpu1")]
    first = run_probes(plan, catalog, store, tmp_path / "inputs", budget_s=1e-9, rule="coverage", pairs=pairs)
    assert len(first) == 1, "a budget stops starting runs, it does not stop the run under way"
    assert first[0].succeeded and first[0].source.value == "probe" and first[0].run_id.startswith("probe-")
    assert "load_avg_1m" in first[0].context and first[0].context["command"][:3] == ["taskset", "-c", "0"]
    rest = run_probes(plan, catalog, store, tmp_path / "inputs", budget_s=600, rule="uncertainty", pairs=pairs)
    ids = [m.run_id for m in first + rest]
    assert len(ids) == len(set(ids)) == 10 == store.count(), "every candidate once, none repeated"
    assert run_probes(plan, catalog, store, tmp_path / "inputs", budget_s=600, rule="coverage", pairs=pairs) == []
    pool = candidates(plan, catalog, tmp_path / "inputs", "mafft", "cpu1")
    assert rank_candidates(pool, store, seed=plan.seed, rule="coverage", n=5) == []


def test_a_probe_over_its_cap_is_stored_censored(plan, tmp_path: Path):
    catalog = load_catalog(BUNDLED_DATA / "catalog.yaml")
    store = _store(tmp_path)
    done = run_probes(
        plan, catalog, store, tmp_path / "inputs", budget_s=1e-9, cap_s=1e-4, rule="coverage", pairs=[("mafft", "cpu2")]
    )
    assert len(done) == 1 and done[0].censored and not done[0].succeeded


def test_probe_plan_and_run_from_the_command_line(plan, runner, tmp_path: Path):
    from cli.app import app

    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(PLAN))
    shown = runner.invoke(
        app,
        [
            "probe",
            "plan",
            "--algorithm",
            "mafft",
            "--platform",
            "cpu2",
            "-n",
            "3",
            "--rule",
            "coverage",
            "--plan",
            str(path),
        ],
        env={"COLUMNS": "250"},
    )
    assert shown.exit_code == 0, shown.output
    assert "3 of 10 candidates, by coverage" in shown.stdout and shown.stdout.count("fam-protein") == 3
    ran = runner.invoke(
        app, ["probe", "run", "--budget", "1s", "--algorithm", "mafft", "--platform", "cpu2", "--plan", str(path)]
    )
    assert ran.exit_code == 0 and "probes stored" in ran.stdout, ran.output
    wrong = runner.invoke(app, ["probe", "plan", "--algorithm", "mafft", "--platform", "gpu", "--plan", str(path)])
    assert wrong.exit_code == 2 and "no job of mafft on gpu" in wrong.output
    bad_rule = runner.invoke(app, ["probe", "run", "--budget", "1s", "--rule", "greed", "--plan", str(path)])
    assert bad_rule.exit_code == 2 and "not a rule" in bad_rule.output
