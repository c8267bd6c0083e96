"""The one helper for "required in CI, skipped here": what it does, and that every test goes through it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.required import required, required_tools

TESTS = Path(__file__).parent


def test_a_missing_requirement_skips_here_and_fails_under_ci(monkeypatch):
    required(True, "a tool", "install it")  # present: nothing happens
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="a tool"):
        required(False, "a tool", "install it")
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match="a tool; install it"):
        required(False, "a tool", "install it")


def test_missing_tools_are_named(monkeypatch):
    monkeypatch.setenv("CI", "1")
    required_tools("sh")
    with pytest.raises(pytest.fail.Exception, match="no-such-tool-h7 not installed"):
        required_tools("sh", "no-such-tool-h7")


def test_no_test_decides_on_its_own_to_skip_for_what_ci_has():
    files = sorted(p for p in TESTS.rglob("*.py") if p.name not in ("required.py", "test_required.py"))
    assert len(files) > 50
    reads_ci = re.compile(r"""environ(\.get)?\(\s*["']CI["']|environ\[\s*["']CI["']|getenv\(\s*["']CI["']""")
    skips_on_presence = re.compile(r"skipif\(.*?\b(which|exists|is_dir|is_file)\(|importorskip\(")
    found = [
        str(p.relative_to(TESTS))
        for p in files
        if reads_ci.search(p.read_text()) or skips_on_presence.search(p.read_text())
    ]
    assert found == []
