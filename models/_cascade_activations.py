"""FANN's activation functions, evaluated for a block of neurons at once with their derivatives."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from models._cascade_values import AFFINE, CANDIDATE_ACTIVATIONS, MAX_NET

__all__ = ["AFFINE", "CANDIDATE_ACTIVATIONS", "MAX_NET", "Activations", "by_base", "is_symmetric", "value_range"]


def _tanh(x: Tensor, g: Tensor, dg: Tensor) -> None:
    """tanh(x) and 1 - tanh(x)^2."""
    torch.tanh(x, out=g)
    torch.mul(g, g, out=dg).neg_().add_(1.0)


def _gauss(x: Tensor, g: Tensor, dg: Tensor) -> None:
    """exp(-x^2) and x exp(-x^2): the derivative's factor -2 is kept in the table below."""
    torch.mul(x, x, out=g).neg_().exp_()
    torch.mul(x, g, out=dg)


def _elliot(x: Tensor, g: Tensor, dg: Tensor) -> None:
    """x / (1 + |x|) and 1 / (1 + |x|)^2."""
    torch.abs(x, out=dg).add_(1.0)
    torch.div(x, dg, out=g)
    dg.mul_(dg).reciprocal_()


def _trig(x: Tensor, g: Tensor, dg: Tensor) -> None:
    """sin(x) and cos(x)."""
    torch.sin(x, out=g)
    torch.cos(x, out=dg)


def _linear(x: Tensor, g: Tensor, dg: Tensor) -> None:
    """x and 1."""
    g.copy_(x)
    dg.fill_(1.0)


# A base function writes g(x) and g'(x) / k into its two output tensors; the table gives k and g's range.
Base = Callable[[Tensor, Tensor, Tensor], None]
_BASES: dict[str, tuple[Base, float, float, float]] = {
    "tanh": (_tanh, 1.0, -1.0, 1.0),
    "gauss": (_gauss, -2.0, 0.0, 1.0),
    "elliot": (_elliot, 1.0, -1.0, 1.0),
    "trig": (_trig, 1.0, -1.0, 1.0),
    "linear": (_linear, 1.0, float("-inf"), float("inf")),
}


def is_symmetric(name: str) -> bool:
    """Whether FANN halves the output error of a neuron with this activation."""
    return name.endswith("_symmetric")


def value_range(name: str) -> tuple[float, float]:
    """The interval an activation's values lie in."""
    base, a, b, _ = AFFINE[name]
    low, high = _BASES[base][2:]
    return a * low + b, a * high + b


def by_base(names: Sequence[str]) -> list[int]:
    """Positions of ``names`` reordered (stably) so that neurons sharing a base function are contiguous."""
    order = list(_BASES)
    return sorted(range(len(names)), key=lambda i: order.index(AFFINE[names[i]][0]))


@dataclass(frozen=True)
class Activations:
    """The activation and steepness of each of a block of neurons (rows), grouped by base function."""

    groups: tuple[tuple[Base, slice], ...]
    steepness: Tensor
    chain: Tensor
    scale: Tensor | None
    offset: Tensor | None
    shift: Tensor | None

    @classmethod
    def build(cls, names: Sequence[str], steepnesses: Sequence[float], dtype: torch.dtype) -> Activations:
        """Activations of neurons named ``names`` (already ordered by :func:`by_base`) with ``steepnesses``."""
        groups: list[tuple[Base, slice]] = []
        start = 0
        for i in range(1, len(names) + 1):
            if i == len(names) or AFFINE[names[i]][0] != AFFINE[names[start]][0]:
                groups.append((_BASES[AFFINE[names[start]][0]][0], slice(start, i)))
                start = i

        def column(values: Sequence[float]) -> Tensor:
            return torch.tensor(list(values), dtype=dtype).reshape(-1, 1)

        def unless(neutral: float, values: list[float]) -> Tensor | None:
            return None if all(v == neutral for v in values) else column(values)

        return cls(
            groups=tuple(groups),
            steepness=column(steepnesses),
            chain=column([_BASES[AFFINE[n][0]][1] * AFFINE[n][1] * s for n, s in zip(names, steepnesses, strict=True)]),
            scale=unless(1.0, [AFFINE[n][1] for n in names]),
            offset=unless(0.0, [AFFINE[n][2] for n in names]),
            shift=unless(0.0, [AFFINE[n][3] for n in names]),
        )

    @property
    def is_linear(self) -> bool:
        """Whether every neuron is LINEAR."""
        return len(self.groups) == 1 and self.groups[0][0] is _linear

    def workspace(self, n_patterns: int) -> Workspace:
        """Buffers for :meth:`raw` over ``n_patterns``, with each group's rows pre-sliced."""
        x = self.steepness.new_empty(self.steepness.shape[0], n_patterns)
        g, dg = torch.empty_like(x), torch.empty_like(x)
        views = tuple((base, x[rows], g[rows], dg[rows]) for base, rows in self.groups)
        return Workspace(x, g, dg, views)

    def raw(self, space: Workspace) -> tuple[Tensor, Tensor]:
        """Values a * g(x) + b and g'(x) / k at ``space.x`` = steepness * net + shift, clamped (``chain`` = a k s)."""
        for base, x, g, dg in space.views:
            base(x, g, dg)
        if self.scale is not None:
            space.g.mul_(self.scale)
        if self.offset is not None:
            space.g.add_(self.offset)
        return space.g, space.dg

    def __call__(self, net: Tensor) -> tuple[Tensor, Tensor]:
        """Values f(s * net) and derivatives d f / d net of each row of ``net`` (neurons x patterns)."""
        space = self.workspace(net.shape[1])
        torch.mul(net, self.steepness, out=space.x)
        if self.shift is not None:
            space.x.add_(self.shift)
        space.x.clamp_(-MAX_NET, MAX_NET)
        values, slopes = self.raw(space)
        return values, slopes.mul_(self.chain)


@dataclass(frozen=True)
class Workspace:
    """Preallocated arguments, values and derivatives of a block of neurons, and their per-group views."""

    x: Tensor
    g: Tensor
    dg: Tensor
    views: tuple[tuple[Base, Tensor, Tensor, Tensor], ...]
