"""The layers of docs/architecture.md are a checked fact: ``lint-imports`` keeps every contract of pyproject.toml on
the tree, and breaks the right one, by name, in a copy of the tree given one import that crosses a boundary; and no
modules of the project import each other in a circle."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
CONTRACTS = {c["id"]: c["name"] for c in CONFIG["contracts"]}
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint(tree: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on ``tree``'s packages and contracts (``tree`` first on the path, so its copies are the ones read)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", str(tree / "pyproject.toml")],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


def broken(output: str) -> str:
    """The part of ``lint-imports``' report that lists the broken contracts ('' when none is)."""
    return output.partition("Broken contracts")[2]


def test_the_tree_keeps_every_contract() -> None:
    assert len(CONTRACTS) >= 2
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(CONTRACTS)} kept, 0 broken" in result.stdout


CROSSINGS = [  # (module, the import added to it, the contracts it breaks)
    ("predictor/catalog.py", "import serving", {"layers"}),  # the core reaching up to the API
    ("training/pipeline.py", "import cli.common", {"layers"}),  # a library reaching up to the command line
    ("models/zoo.py", "import features", {"layers"}),  # the two bottom packages are independent
    ("scheduler/service.py", "import training.pipeline", {"layers"}),  # the production scheduler needs no training
    ("training/pipeline.py", "import scheduler.state", {"layers"}),  # nor does training need the scheduler
    ("predictor/records.py", "import data.ingest", {"layers"}),  # the core knows nothing of measuring or importing data
    ("data/probe.py", "import scheduler.probe_executor", {"layers"}),  # data sits below the scheduler running probes
    ("models/zoo.py", "import mlflow", {"plain-libraries"}),
    ("simulator/runner.py", "import typer", {"edges"}),
    # production reaching the simulator: refused twice, by the layers and by the rule said on its own
    ("scheduler/state.py", "import simulator.workload", {"layers", "production-not-simulator"}),
    ("serving/app.py", "import simulator.runner", {"layers", "production-not-simulator"}),
    ("serving/app.py", "import predictor.store.tables", {"store-tables"}),
    ("training/memory.py", "import predictor.store.scheduler_tables", {"scheduler-tables"}),
    # the Slurm adapter: it trains nothing itself, nothing below it reaches it, and only the API and the CLI use it
    ("slurm/follow.py", "import training.pipeline", {"slurm-adapter"}),
    ("scheduler/service.py", "import slurm.rules", {"layers", "slurm-users"}),
    ("simulator/runner.py", "import slurm.rules", {"slurm-users"}),
]


@pytest.mark.parametrize(("module", "line", "contracts"), CROSSINGS)
def test_one_crossing_import_breaks_its_contract(tmp_path: Path, module: str, line: str, contracts: set[str]) -> None:
    for package in CONFIG["root_packages"]:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    with (tmp_path / module).open("a") as source:
        source.write(f"\n{line}  # the violation under test\n")
    result = lint(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{len(contracts)} broken" in result.stdout
    report = " ".join(broken(result.stdout).split())  # the report wraps long names
    for contract in contracts:
        assert CONTRACTS[contract] in report, report
    assert module.removesuffix(".py").replace("/", ".") in report


def test_every_contract_is_shown_broken() -> None:
    """Each contract of pyproject.toml has a case above that breaks it."""
    assert set(CONTRACTS) == set().union(*(contracts for _, _, contracts in CROSSINGS))


def import_cycles(graph: grimp.ImportGraph) -> list[frozenset[str]]:
    """The strongly connected components of more than one module: modules that import each other, directly or not
    (a function's lazy import and a ``TYPE_CHECKING`` one count, as they do for ``lint-imports``)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[frozenset[str]] = []
    for root in sorted(graph.modules):  # Tarjan's algorithm, iterative (the graph is deeper than the recursion limit)
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.find_modules_directly_imported_by(successor)))))
                    break
                if successor in on_stack:
                    low[module] = min(low[module], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[module])
                if low[module] == index[module]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == module:
                            break
                    if len(component) > 1:
                        cycles.append(frozenset(component))
    return cycles


def test_no_import_cycles() -> None:
    """No module imports itself through others, lazily or not: no cycle is allowed (the last, fanout and rayfanout,
    went when their task types moved to training.fit_tasks)."""
    graph = grimp.build_graph(*CONFIG["root_packages"], cache_dir=None)
    assert [sorted(cycle) for cycle in import_cycles(graph)] == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    """The finder on a small graph: a -> b -> c -> a is one cycle, d beside it none."""
    graph = grimp.ImportGraph()
    for importer, imported in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.d", "p.a")):
        graph.add_import(importer=importer, imported=imported)
    assert import_cycles(graph) == [frozenset({"p.a", "p.b", "p.c"})]
