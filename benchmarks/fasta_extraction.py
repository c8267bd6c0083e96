"""Benchmark the FASTA extractor against ``seqkit stats -a`` on a generated file of a given size.

Runs are alternated (seqkit, full scan, sampled, sampled on a 4x smaller file) so
that a noisy machine slows every contender alike; each figure is the best of
``--repeat`` runs. The sampled run on the smaller file shows that sampling time
does not grow with the file size.

    python benchmarks/fasta_extraction.py --size-gb 1.0 --workdir benchmarks/work --repeat 3 --json results.json
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from data.datagen import write_fasta
from features.fasta import FastaExtractor

LENGTH_MEAN, LENGTH_SD, LINE_WIDTH = 1000, 500, 60
HEADER_BYTES = 12  # ">seq1000000\n" at most, for files up to a few GB


def generated_file(workdir: Path, size_bytes: int, seed: int) -> Path:
    """A FASTA file of at least ``size_bytes``, generated once and reused (cached by size and seed)."""
    path = workdir / f"bench-{size_bytes}B-s{seed}.fa"
    if not path.exists():
        per_record = LENGTH_MEAN * (1 + 1 / LINE_WIDTH) + 1 + HEADER_BYTES
        n_sequences = math.ceil(1.02 * size_bytes / per_record)
        tmp = path.with_suffix(".tmp")
        write_fasta(tmp, n_sequences, LENGTH_MEAN, LENGTH_SD, seed=seed, line_width=LINE_WIDTH)
        tmp.rename(path)
    if path.stat().st_size < size_bytes:
        raise SystemExit(f"{path} is smaller than {size_bytes} bytes; delete it and run again")
    return path


def seqkit_stats(path: Path) -> dict[str, str]:
    """``seqkit stats -a -T`` of ``path`` as a column -> value dict."""
    out = subprocess.run(["seqkit", "stats", "-a", "-T", str(path)], check=True, capture_output=True, text=True)
    header, row = (line.split("\t") for line in out.stdout.strip().splitlines())
    return dict(zip(header, row, strict=True))


def timed(action: Callable[[], object]) -> tuple[float, object]:
    """Wall seconds of one call, and its result."""
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-gb", type=float, default=1.0, help="size of the main input file, GB (1e9 bytes)")
    parser.add_argument("--workdir", type=Path, default=Path("benchmarks/work"), help="where inputs are cached")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each contender; the best one counts")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    args = parser.parse_args()
    if shutil.which("seqkit") is None:
        raise SystemExit("seqkit is not on PATH")

    args.workdir.mkdir(parents=True, exist_ok=True)
    big = generated_file(args.workdir, int(args.size_gb * 1e9), args.seed)
    small = generated_file(args.workdir, int(args.size_gb * 1e9 / 4), args.seed)
    full, sampled = FastaExtractor(mode="full"), FastaExtractor(mode="sampled")
    contenders: dict[str, tuple[Path, Callable[[], object]]] = {
        "seqkit stats -a -T": (big, lambda: seqkit_stats(big)),
        "ours, full scan": (big, lambda: full.extract(big)),
        "ours, sampled": (big, lambda: sampled.extract(big)),
        "ours, sampled (1/4 size)": (small, lambda: sampled.extract(small)),
    }
    seconds: dict[str, list[float]] = {name: [] for name in contenders}
    outputs: dict[str, object] = {}
    for _ in range(args.repeat):
        for name, (_, action) in contenders.items():
            elapsed, outputs[name] = timed(action)
            seconds[name].append(elapsed)

    reference, ours = outputs["seqkit stats -a -T"], outputs["ours, full scan"]
    assert isinstance(reference, dict) and isinstance(ours, dict)
    if (int(reference["num_seqs"]), int(reference["sum_len"])) != (ours["sequences"], ours["residues"]):
        raise SystemExit(f"full scan disagrees with seqkit: {ours} vs {reference}")

    best_seqkit = min(seconds["seqkit stats -a -T"])
    rows = []
    print(f"| run | file size | best of {args.repeat} (s) | all runs (s) | ours / seqkit |")
    print("| --- | ---: | ---: | --- | ---: |")
    for name, (path, _) in contenders.items():
        best = min(seconds[name])
        size_gb = path.stat().st_size / 1e9
        runs = ", ".join(f"{s:.2f}" for s in seconds[name])
        print(f"| {name} | {size_gb:.2f} GB | {best:.3f} | {runs} | {best / best_seqkit:.2f} |")
        rows.append(
            {
                "run": name,
                "file": str(path),
                "bytes": path.stat().st_size,
                "seconds": seconds[name],
                "best_seconds": best,
                "ratio_to_seqkit": best / best_seqkit,
            }
        )
    if args.json:
        args.json.write_text(json.dumps({"size_gb": args.size_gb, "repeat": args.repeat, "results": rows}, indent=2))


if __name__ == "__main__":
    main()
