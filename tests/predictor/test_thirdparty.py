"""The private APIs of other libraries, quarantined in predictor.thirdparty: each works on the versions installed."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from predictor import thirdparty
from predictor.settings import PROJECT_ROOT

SOURCES = ("predictor", "features", "models", "training", "serving", "scheduler", "benchmarks", "scripts", "tests")
LIBRARIES = ("sklearn", "lightgbm", "mlflow", "torch", "pandas", "numpy", "scipy", "fastapi", "starlette", "sqlalchemy")


def test_every_private_api_works_on_the_versions_installed():
    assert thirdparty.PRIVATE_APIS
    assert thirdparty.problems() == []


@pytest.mark.parametrize(
    ("installed", "inside"), [("1.6", True), ("1.9.1", True), ("1.10.0", False), ("1.5.2", False), ("1.10.0rc1", False)]
)
def test_the_checked_range_compares_releases_as_numbers(installed, inside):
    assert thirdparty.LINEAR_MODEL.checked_on(installed) is inside


def test_a_version_outside_the_checked_range_is_a_problem(monkeypatch):
    installed = {"lightgbm": "9.0", "mlflow": thirdparty.MLFLOW_URIS.lowest}  # scikit-learn: 1.9.1
    monkeypatch.setattr(thirdparty, "version", lambda name: installed.get(name, "1.9.1"))
    assert [p for p in thirdparty.problems() if "outside the checked" in p] == [
        f"{thirdparty.INNER_PREDICTOR.name}: lightgbm 9.0 is outside the checked 4.4 <= v < 4.8"
    ]


def private_names(path: Path) -> list[str]:
    """The private names of other libraries ``path`` uses: ``from x._y import z``, ``from x import _z``, ``x._z``."""
    tree = ast.parse(path.read_text(), str(path))
    bound: set[str] = set()  # names this file binds to another library's modules and objects
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in LIBRARIES:
            bound.update(alias.asname or alias.name for alias in node.names)
            names = [node.module, *(alias.name for alias in node.names)]
            found += [
                f"{node.module}: {name}" for name in names if any(part.startswith("_") for part in name.split("."))
            ]
        elif isinstance(node, ast.Import):
            libraries = [a for a in node.names if a.name.split(".")[0] in LIBRARIES]
            bound.update(a.asname or a.name.split(".")[0] for a in libraries)
            found += [a.name for a in libraries if "._" in a.name]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in bound:
                found.append(f"{root.id}...{node.attr} (line {node.lineno})")
    return found


def test_no_module_but_the_quarantine_imports_a_private_name_of_another_library():
    files = [f for folder in SOURCES for f in (PROJECT_ROOT / folder).rglob("*.py")]
    assert len(files) > 50
    imports = {str(f.relative_to(PROJECT_ROOT)): private_names(f) for f in files}
    assert imports["predictor/thirdparty.py"]  # the check sees what it should
    assert {f: names for f, names in imports.items() if names and f != "predictor/thirdparty.py"} == {}
