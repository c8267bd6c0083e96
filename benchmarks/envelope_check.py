"""Per-call time of the training envelope's check (every served prediction runs it), on one row and on 1,000.

    python benchmarks/envelope_check.py
    git worktree add /tmp/base 4c38f43 && PYTHONPATH=/tmp/base python benchmarks/envelope_check.py   # the check before its bounds were kept

An envelope is fitted on 300 seeded jobs of 10 features; ``check`` is timed on one of them and on 1,000 drawn
from them, best of 5 rounds of 2,000 (one row) or 200 (1,000 rows) calls, and the answers' digest is printed so
two revisions can be seen to agree. ``predictor`` is imported from ``PYTHONPATH`` when set: the same command
times an older revision side by side.
"""

from __future__ import annotations

import hashlib
import timeit

import numpy as np
import pandas as pd

from predictor.envelope import TrainingEnvelope


def main() -> None:
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.lognormal(2, 1, (300, 10)), columns=[f"f{i}" for i in range(10)])
    envelope = TrainingEnvelope.fit(X, rng.lognormal(1, 1, 300))
    digest = hashlib.sha256()
    for label, rows, calls in (
        ("1 row", X.iloc[[5]].to_numpy(), 2000),
        ("1,000 rows", X.sample(1000, replace=True, random_state=1).to_numpy(), 200),
    ):
        check = envelope.check(rows)
        digest.update(check.outside.tobytes() + check.excess.tobytes() + repr(check.out_of_range).encode())
        best = min(timeit.repeat(lambda rows=rows: envelope.check(rows), number=calls, repeat=5)) / calls
        print(f"{label:10s} {best * 1e6:8.1f} us per call")
    print(f"answers {digest.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
