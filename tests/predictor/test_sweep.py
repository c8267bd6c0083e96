"""A tiny sweep against the real MAFFT: runs stored as they finish, deterministic ids, resumable, budgeted."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from predictor.catalog import load_catalog
from predictor.settings import BUNDLED_DATA
from predictor.store import MeasurementStore
from predictor.sweep import PlanError, command_for, expand, load_plan, materialise_inputs, run_sweep

pytestmark = pytest.mark.tools

PLAN = {
    "seed": 3,
    "repeats": 2,
    "timeout_s": 60,
    "inputs": {"fam": {"generator": "family", "alphabet": "protein", "grid": {"n_sequences": [4, 12], "length": [40], "mutation_rate": [0.2]}}},
    "jobs": [{"algorithm": "mafft", "platforms": ["cpu1", "cpu2"], "files": {"input": "fam"}, "grid": {"retree": [1]}}],
}


@pytest.fixture
def plan_file(tmp_path: Path) -> Path:
    if shutil.which("mafft") is None:
        if os.environ.get("CI"):
            pytest.fail("mafft is missing; `make test` installs it", pytrace=False)
        pytest.skip("mafft not installed")
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
