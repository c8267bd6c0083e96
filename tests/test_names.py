"""One name per idea: no two modules of the product define a class of the same name, so a name found by search is
the one thing it says (issue 40: twelve names were defined twice)."""

from __future__ import annotations

import ast
import tomllib
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES: list[str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"]


def class_homes(root: Path, packages: list[str]) -> dict[str, list[str]]:
    """Each module-level class name -> the files (relative to ``root``) that define it."""
    homes: dict[str, list[str]] = defaultdict(list)
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.parse(path.read_text(), str(path)).body:
                if isinstance(node, ast.ClassDef):
                    homes[node.name].append(str(path.relative_to(root)))
    return homes


def twice(homes: dict[str, list[str]]) -> dict[str, list[str]]:
    """The names defined in more than one file."""
    return {name: files for name, files in homes.items() if len(files) > 1}


def test_no_class_name_is_defined_twice() -> None:
    homes = class_homes(ROOT, PACKAGES)
    assert len(homes) > 300  # the product's classes were read
    assert twice(homes) == {}


def test_a_second_definition_is_found(tmp_path: Path) -> None:
    for package, source in (
        ("a", "class Plan:\n    pass\n"),
        ("b", "class Plan(tuple):\n    pass\nclass Own:\n    pass\n"),
    ):
        (tmp_path / package).mkdir()
        (tmp_path / package / "mod.py").write_text(source)
    assert twice(class_homes(tmp_path, ["a", "b"])) == {"Plan": ["a/mod.py", "b/mod.py"]}
