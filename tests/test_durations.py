"""`make test`'s order: the longest test files are collected (and so handed out by pytest-xdist) first, from
tests/durations.json, which scripts/test_durations.py writes from a junit report and which names no file that is gone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from scripts.test_durations import durations
from tests.conftest import DURATIONS

ROOT = Path(__file__).resolve().parents[1]


def test_the_longest_files_are_collected_first() -> None:
    """Issue 42: xdist ordered the files by their number of tests, so the longest ones (few long tests) came last and
    ended on one worker while the other idled. Not a run: the order `pytest --collect-only` gives."""
    quick = [
        "tests/test_tiers.py",
        "tests/predictor/test_catalog.py",
        "tests/test_layers.py",
        "tests/test_registries.py",
    ]
    files = sorted(quick, key=lambda name: DURATIONS.get(name, 0.0))  # given shortest first
    assert len({DURATIONS.get(name, 0.0) for name in files}) == len(files), "pick files of distinct durations"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    nodes = [line for line in done.stdout.splitlines() if "::" in line]
    seen = list(dict.fromkeys(node.split("::")[0] for node in nodes))
    assert seen == files[::-1], seen
    assert "--no-loadscope-reorder" in (ROOT / "Makefile").read_text()


def test_every_measured_file_exists() -> None:
    gone = [name for name in DURATIONS if not (ROOT / name).is_file()]
    assert not gone, f"tests/durations.json names files that are gone (moved or renamed?): {gone}"


def test_a_junit_report_gives_seconds_per_file_longest_first(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_tiers" name="a" time="1.5"/>'
        '<testcase classname="tests.cli.test_serve" name="b" time="2.0"/>'
        '<testcase classname="tests.cli.test_serve" name="c" time="3.25"/>'
        '<testcase classname="tests.nowhere" name="d" time="9.0"/>'
        "</testsuite></testsuites>"
    )
    assert list(durations(report).items()) == [("tests/cli/test_serve.py", 5.2), ("tests/test_tiers.py", 1.5)]
