"""Fold plans: which runs each fold trains on and which it scores, saved so peer tools can use the very same folds.

Two schemes. *Forward* plans (:meth:`FoldPlan.forward_chain`, what training judges by) cut time into windows by the
runs' submissions: the runs submitted before the first cut only train, and fold ``k`` scores the runs submitted in
window ``k`` with a fit on every run that had *ended* by the window's start. That is the question production asks of
a model (how will it do on the jobs that come next?), asked as production asks it: a job is estimated at its
submission, from the runs that had ended by then; no run that ended after a scored job was submitted can leak into
the fit that scores it. *Shuffled* plans (:meth:`FoldPlan.create`) are the classic k-fold
of Weka's tables: every run is scored once, by a fit on all the others, earlier and later alike; benchmarks keep them
to compare the two choices.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from sklearn.model_selection import KFold

MIN_ROWS = 3
# runs a forward plan's first fold trains on, at least
MIN_TRAIN = 2
# share of the runs (the earliest) a forward plan only trains on
FORWARD_START = 0.5
# the fold id of a run no fold scores (a forward plan's first stretch)
UNSCORED = -1
FORWARD_COLUMNS = ("run_id", "fold", "scheme", "trains_from")
Scheme = Literal["forward", "shuffled"]


@dataclass(frozen=True)
class FoldPlan:
    """The fold (0-based) that scores each run, in the training set's row order, and how folds train.

    ``folds`` is :data:`UNSCORED` for runs no fold scores. A shuffled plan's fold ``k`` trains on every run outside it;
    a forward plan's on the runs whose ``trains_from`` (the first fold whose window began after the run ended) is at
    most ``k``.
    """

    run_ids: list[str]
    folds: np.ndarray
    scheme: Scheme = "shuffled"
    trains_from: np.ndarray | None = None

    @classmethod
    def create(
        cls, run_ids: Sequence[str], n_folds: int, seed: int, groups: Sequence[Hashable] | None = None
    ) -> FoldPlan:
        """Shuffled k-fold over ``run_ids``; k shrinks to the group count for tiny sets, fewer than 3 rows are refused.

        Runs with equal ``groups`` (repeats of one job) share a fold, so no model is scored on a job
        whose own repeat it trained on; without groups every run is its own.
        """
        n_rows = len(run_ids)
        _check_size(n_rows, n_folds)
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

    @classmethod
    def forward_chain(
        cls,
        run_ids: Sequence[str],
        ended: Sequence[float] | np.ndarray,
        n_folds: int,
        start: float = FORWARD_START,
        submitted: Sequence[float] | np.ndarray | None = None,
        finished: Sequence[bool] | np.ndarray | None = None,
    ) -> FoldPlan:
        """Windows of the runs' ``submitted`` times (their end times when not given): the first ``start`` share of the
        runs (and enough that :data:`MIN_TRAIN` of them had ended) only train; the rest is cut into up to ``n_folds``
        consecutive windows of about equal size, each scored by a fit on the runs that had ended by its start.

        Runs submitted at the same instant stay in one window; only when every run was submitted at one instant are
        ties broken by row order (and the runs taken to end in that order). When the runs overlap so much that no
        window can open (fewer than :data:`MIN_TRAIN` had ended before the last ones were submitted: runs recorded
        together, their submissions unknown), each is taken as submitted when it ended; when their end times alone
        cannot open one either (most ended at one instant), row order serves. ``finished`` marks the runs a fit learns
        from (a censored run's time is only a bound): only they count towards a window's :data:`MIN_TRAIN`.
        """
        n_rows = len(run_ids)
        _check_size(n_rows, n_folds)
        ends = np.asarray(ended, dtype="float64")
        subs = ends if submitted is None else np.minimum(np.asarray(submitted, dtype="float64"), ends)
        if ends.shape != (n_rows,) or subs.shape != (n_rows,) or not np.isfinite(np.r_[ends, subs]).all():
            raise ValueError(f"need one finite end (and submission) time per run, for {n_rows} runs")
        if not 0.0 < start < 1.0:
            raise ValueError(f"the trained-only share must lie in (0, 1), got {start}")
        # one instant for every run: row order decides
        if np.all(subs == subs[0]):
            subs = ends = np.arange(n_rows, dtype="float64")
        order = np.lexsort((np.arange(n_rows), subs))
        ordered = subs[order]
        first = min(max(MIN_TRAIN, math.ceil(start * n_rows)), n_rows - 1)
        first = _after_ties(ordered, first)
        learned = ends if finished is None else ends[np.asarray(finished, dtype=bool)]
        while first < n_rows and (learned <= ordered[first - 1]).sum() < MIN_TRAIN:
            first = _after_ties(ordered, first + 1)
        if first >= n_rows:
            if submitted is not None:
                return cls.forward_chain(run_ids, ended, n_folds, start, finished=finished)
            if finished is not None and np.count_nonzero(np.asarray(finished, dtype=bool)[:-1]) < MIN_TRAIN:
                raise ValueError(f"need {MIN_TRAIN} finished runs before the last to open a window")
            return cls.forward_chain(run_ids, np.arange(n_rows, dtype="float64"), n_folds, start, finished=finished)
        k = min(n_folds, n_rows - first)
        cuts = [first + round(i * (n_rows - first) / k) for i in range(k)]
        snapped = sorted({_after_ties(ordered, c) for c in cuts} - {n_rows})
        folds = np.full(n_rows, UNSCORED, dtype="int64")
        starts = []
        for fold, (a, b) in enumerate(zip(snapped, [*snapped[1:], n_rows], strict=True)):
            folds[order[a:b]] = fold
            # the window opens after the last submission before it
            starts.append(ordered[a - 1])
        trains_from = np.searchsorted(np.asarray(starts), ends, side="left")  # the first window starting at or after
        return cls(run_ids=[str(r) for r in run_ids], folds=folds, scheme="forward", trains_from=trains_from)

    @property
    def n_folds(self) -> int:
        return int(self.folds.max()) + 1

    @property
    def scored(self) -> np.ndarray:
        """Rows some fold scores (every row of a shuffled plan)."""
        return self.folds != UNSCORED

    def train_rows(self, fold: int) -> np.ndarray:
        """Mask of the rows fold ``fold`` fits on."""
        if self.trains_from is not None:
            return self.trains_from <= fold
        return self.folds != fold

    def test_rows(self, fold: int) -> np.ndarray:
        """Mask of the rows fold ``fold`` scores."""
        return self.folds == fold

    def splits(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(train row indices, test row indices) per fold, in fold order."""
        for fold in range(self.n_folds):
            yield np.flatnonzero(self.train_rows(fold)), np.flatnonzero(self.test_rows(fold))

    def save(self, path: str | Path) -> Path:
        """Write the plan as CSV with columns run_id, fold, scheme and, for a forward plan, trains_from."""
        path = Path(path)
        table = pd.DataFrame({"run_id": self.run_ids, "fold": self.folds, "scheme": self.scheme})
        if self.trains_from is not None:
            table["trains_from"] = self.trains_from
        table.to_csv(path, index=False)
        return path

    @classmethod
    def load(cls, path: str | Path) -> FoldPlan:
        """Read a plan written by :meth:`save` (or by a peer tool in the same format; no scheme column: shuffled)."""
        table = pd.read_csv(path, dtype={"run_id": str, "fold": "int64", "scheme": str, "trains_from": "int64"})
        if list(table.columns) not in (["run_id", "fold"], ["run_id", "fold", "scheme"], [*FORWARD_COLUMNS]):
            raise ValueError(
                f"{path}: a fold plan has columns run_id, fold[, scheme[, trains_from]]; got {', '.join(table.columns)}"
            )
        schemes = set(table["scheme"]) if "scheme" in table else {"shuffled"}
        if len(schemes) != 1 or not schemes <= {"forward", "shuffled"}:
            raise ValueError(f"{path}: the scheme is one of forward, shuffled for every row; got {sorted(schemes)}")
        scheme: Scheme = "forward" if schemes == {"forward"} else "shuffled"
        folds = table["fold"].to_numpy()
        used = sorted(set(folds.tolist()) - {UNSCORED})
        if not used or used != list(range(len(used))) or (scheme == "shuffled" and UNSCORED in folds):
            raise ValueError(f"{path}: fold ids must be 0..k-1, each used at least once (-1 only in a forward plan)")
        if (scheme == "forward") != ("trains_from" in table):
            raise ValueError(f"{path}: a forward plan, and only one, says from which fold each run trains")
        trains_from = table["trains_from"].to_numpy() if "trains_from" in table else None
        return cls(run_ids=table["run_id"].tolist(), folds=folds, scheme=scheme, trains_from=trains_from)


def _check_size(n_rows: int, n_folds: int) -> None:
    """Refuse plans of too few runs or folds."""
    if n_rows < MIN_ROWS:
        raise ValueError(f"cross-validation needs at least {MIN_ROWS} runs, got {n_rows}")
    if n_folds < 2:
        raise ValueError(f"cross-validation needs at least 2 folds, got {n_folds}")


def _after_ties(ordered: np.ndarray, cut: int) -> int:
    """``cut`` moved forward past the runs that ended at the same instant as the one just before it."""
    while 0 < cut < len(ordered) and ordered[cut] == ordered[cut - 1]:
        cut += 1
    return cut
