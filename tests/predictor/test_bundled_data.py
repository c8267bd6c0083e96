"""The bundled measurements: what their provenance promises about them holds."""

from __future__ import annotations

import csv

from predictor.settings import BUNDLED_DATA

REALTOOLS = BUNDLED_DATA / "measurements" / "realtools.csv"


def test_realtools_carries_no_max_rss_measured_the_old_way() -> None:
    with REALTOOLS.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 3744
    assert all(row["max_rss_kb"] == "" for row in rows), "the forked wrapper's figures were dropped (PROVENANCE.md)"
    assert all(float(row["wall_seconds"]) > 0 and float(row["cpu_seconds"]) >= 0 for row in rows)
