"""The product-limit (Kaplan-Meier) estimate of a distribution from right-censored values, and its quantiles.

A censored value is a lower bound: the true value lies above it. The estimate puts mass only on finished
values; a censored value's share goes, in equal parts, to every value above it (Efron's redistribution to
the right, which is the product-limit estimate). What lies above the largest finished value cannot be
placed: that ``tail`` mass is known only to exceed the largest bound.

Quantiles read the estimate as numpy's ``lower`` and ``higher`` methods read a sample: values in order,
each weighing its mass in runs (1 each when nothing is censored), each at the position of the weight
before it; level q sits at position q (n - 1). With nothing censored that is exactly ``np.quantile``.
The tail mass is put on the largest observed value (a bound): where the curve has not reached a level,
the quantile is that largest value, the least the censored runs are known to have taken. That errs high
against the finished runs alone, which is the safe side for a limit, but low against the truth.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike


@dataclass(frozen=True)
class ProductLimit:
    """Finished ``values`` (ascending) with their ``weights`` in runs; ``tail`` runs' worth lies above them all.

    ``n`` is the number of values estimated from (weights and tail add up to it); ``largest`` the largest of
    them, finished or a bound.
    """

    values: np.ndarray
    weights: np.ndarray
    tail: float
    largest: float
    n: int

    def cdf(self, x: float) -> float:
        """P(value <= x); the tail never counts, as it lies beyond every finished value."""
        return float(self.weights[self.values <= x].sum() / self.n)

    def cdf_below(self, x: float) -> float:
        """P(value < x)."""
        return float(self.weights[self.values < x].sum() / self.n)

    def quantile(self, level: float, side: Literal["lower", "higher"]) -> float:
        """The value at ``level``, rounded down (``lower``) or up (``higher``) to a value, as numpy's methods of those names."""
        values, weights = self.values, self.weights
        if self.tail > 0:
            values, weights = np.append(values, self.largest), np.append(weights, self.tail)
        starts = np.cumsum(weights) - weights
        position = (self.n - 1) * level
        if side == "lower":
            return float(values[np.searchsorted(starts, position, side="right") - 1])
        return float(values[min(int(np.searchsorted(starts, position, side="left")), len(values) - 1)])

    def share_inside(self, bound: float, low: float, high: float) -> float:
        """P(low <= value <= high | value > bound): how likely a run known to exceed ``bound`` lies in [low, high].

        0 where the estimate knows nothing above ``bound`` (no finished value beyond it).
        """
        above = 1.0 - self.cdf(bound)
        start = self.cdf(bound) if bound >= low else self.cdf_below(low)
        inside = self.cdf(high) - start
        return float(min(max(inside / above, 0.0), 1.0)) if above > 0 and inside > 0 else 0.0


def product_limit(values: ArrayLike, censored: ArrayLike | None = None) -> ProductLimit:
    """The product-limit estimate of ``values``, those flagged ``censored`` being lower bounds.

    At equal values finished ones come first (a run stopped at t outlived every run that finished at t).
    Each value starts with a weight of one run; a censored one hands its weight, in equal parts, to the
    values after it, so a value's weight is the product of (m + 1) / m over the censored values before it,
    m being how many values follow each of those. The last value keeps its weight: if it is censored, that
    is the tail.
    """
    x = np.asarray(values, dtype="float64")
    bound = np.zeros(x.shape, dtype=bool) if censored is None else np.asarray(censored, dtype=bool)
    if x.ndim != 1 or bound.shape != x.shape or len(x) == 0:
        raise ValueError(
            f"need a non-empty 1-d array and one censored flag per value, got shapes {x.shape} and {bound.shape}"
        )
    order = np.lexsort((bound, x))
    x, bound = x[order], bound[order]
    following = np.arange(len(x) - 1, -1, -1, dtype="float64")
    passes = bound & (following > 0)
    factor = np.where(passes, (following + 1) / np.where(passes, following, 1.0), 1.0)
    weights = np.concatenate(([1.0], np.cumprod(factor)[:-1]))
    tail = float(weights[-1]) if bound[-1] else 0.0
    return ProductLimit(values=x[~bound], weights=weights[~bound], tail=tail, largest=float(x[-1]), n=len(x))
