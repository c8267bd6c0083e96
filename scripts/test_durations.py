"""Seconds each test file takes, from a junit report of a full run: writes tests/durations.json, which tests/conftest.py
reads to hand the longest files out first (`make test`: `--dist loadfile --no-loadscope-reorder`).

    .venv/bin/python -m pytest -n 2 --dist loadfile --junitxml=/tmp/junit.xml
    .venv/bin/python scripts/test_durations.py /tmp/junit.xml > tests/durations.json

A test's time in the report is its setup, call and teardown together (pytest's default), so a file's sum includes the
session servers and trained homes its first test started on its worker.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ElementTree
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_file(classname: str) -> str | None:
    """The file under the repository a junit ``classname`` (``tests.cli.test_serve``, ``...test_x.TestY``) names."""
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        candidate = "/".join(parts[:end]) + ".py"
        if (ROOT / candidate).is_file():
            return candidate
    return None


def durations(report: Path) -> dict[str, float]:
    """Seconds per test file, longest first."""
    seconds: dict[str, float] = defaultdict(float)
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        found = test_file(case.get("classname", ""))
        if found is not None:
            seconds[found] += float(case.get("time", 0.0))
    return {name: round(total, 1) for name, total in sorted(seconds.items(), key=lambda item: -item[1])}


if __name__ == "__main__":
    json.dump(durations(Path(sys.argv[1])), sys.stdout, indent=1)
    sys.stdout.write("\n")
