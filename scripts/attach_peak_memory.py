"""Fill the bundled runs' blank ``max_rss_kb`` from a re-measure of the same plan (issue 31), run by run.

    python scripts/attach_peak_memory.py --plan data/plans/realtools.yaml \\
        --bundled data/measurements/realtools.csv --bundled-inputs /work/dataset3-home/sweep-inputs \\
        --remeasured data/remeasured/realtools-2026-11-27.csv --remeasured-inputs /work/remeasure-home/sweep-inputs

A sweep's run id is a digest of the plan's seed, the run's algorithm, platform, parameters (input paths included)
and repeat index, so the same run of the plan made in two homes has two ids. For every run of the plan this script
computes both (the plan expanded over the re-measure's inputs, and the same parameters with the bundled sweep's input
folder), checks that every bundled row is a run of the plan, and copies the re-measured peak of the same repeat into
the bundled row. Nothing else in the bundled file changes: its wall and CPU seconds stay those of the quiet sweep.
Peak memory is what the programs hold, not how fast they ran, so a re-measure under load gives the same figures
(``data/remeasured/PROVENANCE.md``).
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from data.sweep import SweepRun, expand, load_plan, materialise_inputs
from predictor.catalog import load_catalog
from predictor.settings import Settings


def id_pairs(plan_path: Path, bundled_inputs: Path, remeasured_inputs: Path) -> dict[str, str]:
    """Re-measured run id -> bundled run id, for every run of the plan."""
    plan = load_plan(plan_path)
    runs = expand(plan, load_catalog(*Settings().catalog_paths), materialise_inputs(plan, remeasured_inputs))
    old, new = str(remeasured_inputs), str(bundled_inputs)
    pairs = {}
    for run in runs:
        params = {k: v.replace(old, new, 1) if isinstance(v, str) else v for k, v in run.params.items()}
        pairs[run.run_id(plan.seed)] = SweepRun(run.algorithm, run.platform, params, run.repeat).run_id(plan.seed)
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plan", type=Path, required=True)
    parser.add_argument("--bundled", type=Path, required=True, help="the CSV to fill (rewritten in place)")
    parser.add_argument("--bundled-inputs", type=Path, required=True, help="the input folder of the bundled sweep")
    parser.add_argument("--remeasured", type=Path, required=True, help="the re-measure's exported CSV")
    parser.add_argument("--remeasured-inputs", type=Path, required=True, help="the input folder of the re-measure")
    args = parser.parse_args()

    pairs = id_pairs(args.plan, args.bundled_inputs.resolve(), args.remeasured_inputs.resolve())
    with args.remeasured.open(newline="") as f:
        peaks = {pairs[row["run_id"]]: row["max_rss_kb"] for row in csv.DictReader(f) if row["max_rss_kb"]}
    with args.bundled.open(newline="") as f:
        reader = csv.DictReader(f)
        fields, rows = list(reader.fieldnames or ()), list(reader)
    unknown = [row["run_id"] for row in rows if row["run_id"] not in set(pairs.values())]
    if unknown:
        raise SystemExit(f"{len(unknown)} bundled rows are not runs of the plan, e.g. {unknown[0]}")
    for row in rows:
        row["max_rss_kb"] = peaks.get(row["run_id"], "")
    with args.bundled.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"{args.bundled}: {sum(1 for r in rows if r['max_rss_kb'])} of {len(rows)} rows have a peak")


if __name__ == "__main__":
    main()
