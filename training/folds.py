"""Fold plans: a seeded, saved assignment of each run to a cross-validation fold, reusable by peer tools."""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import KFold

MIN_ROWS = 3


@dataclass(frozen=True)
class FoldPlan:
    """Fold id (0-based) of each run, in the training set's row order."""

    run_ids: list[str]
    folds: np.ndarray

    @classmethod
    def create(
        cls, run_ids: Sequence[str], n_folds: int, seed: int, groups: Sequence[Hashable] | None = None
    ) -> FoldPlan:
        """Shuffled k-fold over ``run_ids``; k shrinks to the group count for tiny sets, fewer than 3 rows are refused.

        Runs with equal ``groups`` (repeats of one job) share a fold, so no model is scored on a job
        whose own repeat it trained on; without groups every run is its own.
        """
        n_rows = len(run_ids)
        if n_rows < MIN_ROWS:
            raise ValueError(f"cross-validation needs at least {MIN_ROWS} runs, got {n_rows}")
        if n_folds < 2:
            raise ValueError(f"cross-validation needs at least 2 folds, got {n_folds}")
        if groups is not None and len(groups) != n_rows:
            raise ValueError(f"{len(groups)} groups for {n_rows} runs")
        group_of_row = np.arange(n_rows) if groups is None else pd.factorize(pd.Series(list(groups)))[0]
        n_groups = int(group_of_row.max()) + 1
        if n_groups < 2:
            raise ValueError("cross-validation needs at least 2 distinct jobs, got 1")
        group_folds = np.empty(n_groups, dtype="int64")
        splitter = KFold(n_splits=min(n_folds, n_groups), shuffle=True, random_state=seed)
        for fold, (_, test) in enumerate(splitter.split(np.zeros(n_groups))):
            group_folds[test] = fold
        return cls(run_ids=[str(r) for r in run_ids], folds=group_folds[group_of_row])

    @property
    def n_folds(self) -> int:
        return int(self.folds.max()) + 1

    def splits(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(train row indices, test row indices) per fold, in fold order."""
        for fold in range(self.n_folds):
            yield np.flatnonzero(self.folds != fold), np.flatnonzero(self.folds == fold)

    def save(self, path: str | Path) -> Path:
        """Write the plan as CSV with columns run_id, fold."""
        path = Path(path)
        pd.DataFrame({"run_id": self.run_ids, "fold": self.folds}).to_csv(path, index=False)
        return path

    @classmethod
    def load(cls, path: str | Path) -> FoldPlan:
        """Read a plan written by :meth:`save` (or by a peer tool in the same format)."""
        table = pd.read_csv(path, dtype={"run_id": str, "fold": "int64"})
        if list(table.columns) != ["run_id", "fold"]:
            raise ValueError(f"{path}: a fold plan has columns run_id, fold; got {', '.join(table.columns)}")
        folds = table["fold"].to_numpy()
        if len(folds) == 0 or sorted(set(folds.tolist())) != list(range(folds.max() + 1)):
            raise ValueError(f"{path}: fold ids must be 0..k-1, each used at least once")
        return cls(run_ids=table["run_id"].tolist(), folds=folds)
