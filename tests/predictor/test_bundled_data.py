"""The bundled measurements: what their provenance promises about them holds."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

from predictor.settings import BUNDLED_DATA

REALTOOLS = BUNDLED_DATA / "measurements" / "realtools.csv"
REMEASURED = BUNDLED_DATA / "remeasured" / "realtools-2026-11-27.csv"
FORKED_WRAPPER_KB = "425608"  # what the old wrapper reported for itself (PROVENANCE.md)


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_realtools_carries_the_remeasured_peaks_run_for_run() -> None:
    rows = _rows(REALTOOLS)
    assert len(rows) == 3744
    assert all(float(row["max_rss_kb"]) > 0 and row["max_rss_kb"] != FORKED_WRAPPER_KB for row in rows)
    assert all(float(row["wall_seconds"]) > 0 and float(row["cpu_seconds"]) >= 0 for row in rows)

    def peaks(rows: list[dict[str, str]]) -> Counter[tuple[str, str, str]]:
        return Counter((r["algorithm"], r["platform"], r["max_rss_kb"]) for r in rows)

    assert peaks(rows) == peaks(_rows(REMEASURED)), "each bundled run has the peak of the same run re-measured"
