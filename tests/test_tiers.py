"""The quick tier's lists stay true: each entry of SERVERS and SLOW names a file and a function that exist, and the
tripwire stops a quick-tier test that starts a server."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests import tiers
from tests.conftest import SERVERS, SLOW

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("listing", ["SERVERS", "SLOW"])
def test_every_entry_names_an_existing_file_and_function(listing: str) -> None:
    stale = []
    for entry in {"SERVERS": SERVERS, "SLOW": SLOW}[listing]:
        file, _, name = entry.split("[")[0].partition("::")
        path = ROOT / file
        if not path.is_file():
            stale.append(entry)
            continue
        functions = {node.name for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.FunctionDef)}
        if name and name not in functions:
            stale.append(entry)
    assert not stale, f"{listing} in tests/conftest.py names what is gone (moved or renamed?): {stale}"


def test_a_quick_tier_test_that_starts_a_server_fails_naming_the_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tiers, "running", "tests/x.py::test_y")
    with pytest.raises(
        pytest.fail.Exception, match=r"tests/x.py::test_y starts PostgreSQL .* SERVERS in tests/conftest.py"
    ):
        tiers.starting("PostgreSQL")
    monkeypatch.setattr(tiers, "running", None)
    tiers.starting("PostgreSQL")  # a server test, or a benchmark outside pytest
