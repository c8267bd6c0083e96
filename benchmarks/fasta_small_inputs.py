"""Per-call time of the FASTA extractor on the small inputs of job submissions (the API's and the Slurm plugin's case).

    python benchmarks/fasta_small_inputs.py --calls 2000
    git worktree add /tmp/base aed44ac && PYTHONPATH=/tmp/base python benchmarks/fasta_small_inputs.py   # a baseline

Files of about 2 kB, 60 kB, 120 kB and 1 MB are generated in a temporary folder; each is extracted ``--calls``
times after a warm-up, and the median per call is printed. ``features`` is imported from ``PYTHONPATH``
when set, so the same command times an older revision's extractor on the same machine, side by side.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from features import fasta

SIZES = {
    "2 kB": (20, 80),
    "60 kB": (200, 300),
    "120 kB": (400, 300),
    "1 MB": (1_000, 1_000),
}  # (records, residues each)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    extractor = fasta.FastaExtractor()
    out = {"extractor": str(Path(fasta.__file__).resolve()), "calls": args.calls, "sizes": {}}
    with tempfile.TemporaryDirectory() as work:
        for label, (records, residues) in SIZES.items():
            path = Path(work) / f"{records}.fa"
            path.write_text("".join(f">s{i}\n{'ACGT' * (residues // 4)}\n" for i in range(records)))
            for _ in range(min(50, args.calls)):
                extractor.extract(path)
            calls = max(20, args.calls // (1 + path.stat().st_size // 100_000))
            took = []
            for _ in range(calls):
                started = time.perf_counter()
                extractor.extract(path)
                took.append(1e3 * (time.perf_counter() - started))
            out["sizes"][label] = {"bytes": path.stat().st_size, "calls": calls, "median_ms": statistics.median(took)}
            print(
                f"{label:>6s} ({path.stat().st_size:>9,d} B): median {statistics.median(took):7.3f} ms over {calls} calls",
                flush=True,
            )
    print(f"extractor: {out['extractor']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
