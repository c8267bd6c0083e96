"""Cascade2's two training phases (as FANN 2.2.0's ``src/fann_cascade.c`` runs them) on cached activations, in
PyTorch.

Activations are kept neuron-major: ``At`` is (neurons x patterns) with the inputs, the
bias (ones) and every installed hidden neuron, so a candidate block's net input is one
matrix product and the frozen part of the network is never evaluated again.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from models._cascade_activations import MAX_NET, Activations

MAX_WEIGHT = 1500.0
MIN_STEP = 1e-4
# FANN caps the TANH error mapping ln((1 + d) / (1 - d)) at this magnitude.
TANH_ERROR_CAP = 17.0


@dataclass(frozen=True)
class Rprop:
    """iRPROP- settings (FANN's defaults)."""

    increase: float = 1.2
    decrease: float = 0.5
    delta_min: float = 0.0
    delta_max: float = 50.0
    delta_zero: float = 0.1


@dataclass(frozen=True)
class Phase:
    """When a phase stops: stagnation (change fraction within patience epochs), minimum and maximum epochs."""

    change_fraction: float = 0.01
    stagnation_epochs: int = 12
    min_epochs: int = 50
    max_epochs: int = 150


class IRpropMinus:
    """iRPROP- over one weight tensor, with FANN's step rule; a zero gradient leaves a weight in place."""

    def __init__(self, weights: Tensor, rprop: Rprop) -> None:
        self.rprop = rprop
        self.steps = torch.full_like(weights, rprop.delta_zero)
        self.previous = torch.zeros_like(weights)

    def step(self, weights: Tensor, gradient: Tensor) -> None:
        """Move ``weights`` (in place) against the sign of ``gradient`` = dE/dw (zeroed where its sign flipped)."""
        r = self.rprop
        same_sign = torch.mul(gradient, self.previous) >= 0.0
        # max(p, 1e-4) * increase capped at delta_max, or * decrease floored at delta_min: one clamp serves both
        # because steps never fall below delta_min once they start at delta_zero >= delta_min.
        factor = torch.where(same_sign, r.increase, r.decrease)
        self.steps.clamp_min_(MIN_STEP).mul_(factor).clamp_(r.delta_min, r.delta_max)
        self.previous.copy_(gradient.mul_(same_sign))
        weights.addcmul_(gradient.sign_(), self.steps, value=-1.0).clamp_(-MAX_WEIGHT, MAX_WEIGHT)


class Stagnation:
    """FANN's patience rule: a value leaving [backslide, target] sets a new goal and extends the patience."""

    def __init__(self, phase: Phase) -> None:
        self.phase = phase
        self.target = 0.0
        self.backslide = -1.0e20
        self.deadline = phase.max_epochs

    def stalled(self, value: float, epoch: int) -> bool:
        """Record ``value`` at ``epoch``; whether the phase should stop now."""
        low, high = min(self.target, self.backslide), max(self.target, self.backslide)
        if not low <= value <= high:
            self.target = value * (1.0 + self.phase.change_fraction)
            self.backslide = value * (1.0 - self.phase.change_fraction)
            self.deadline = epoch + self.phase.stagnation_epochs
        return epoch >= self.deadline and epoch >= self.phase.min_epochs


@dataclass(frozen=True)
class OutputError:
    """How output errors are formed: halved for a symmetric output; optionally FANN's TANH mapping."""

    halve: bool
    tanh: bool

    def residual(self, targets: Tensor, outputs: Tensor) -> Tensor:
        """t - y, halved for a symmetric output activation (what the error sums and candidates fit)."""
        d = targets - outputs
        return d * 0.5 if self.halve else d

    def trained(self, residual: Tensor) -> Tensor:
        """The error back-propagated into the output weights."""
        if not self.tanh:
            return residual
        mapped = torch.log((1.0 + residual) / (1.0 - residual))
        return torch.where(residual.abs() < 0.9999999, mapped, residual.sign() * TANH_ERROR_CAP)


@dataclass(frozen=True)
class OutputPhaseResult:
    """The MSE and SSE of the last epoch (before its step) and the epochs run."""

    mse: float
    sse: float
    epochs: int


Epoch = Callable[[Tensor], tuple[float, Tensor]]


def _direct_epoch(At: Tensor, targets: Tensor, activation: Activations, error: OutputError) -> Epoch:
    """SSE and gradient of the output weights by a forward pass over every pattern."""

    def epoch(weights: Tensor) -> tuple[float, Tensor]:
        outputs, slopes = activation(weights @ At)
        residual = error.residual(targets, outputs)
        return float((residual * residual).sum()), (slopes * error.trained(residual)).neg_() @ At.T

    return epoch


def _gram_epoch(At: Tensor, targets: Tensor, steepness: Tensor) -> Epoch:
    """The same for a linear output and error, from (neurons x neurons) moments: no pass over the patterns.

    With y = s W a: SSE = t.t - 2 s W.(t a') + s^2 W (a a') W' and dSSE/2dW = s^2 W (a a') - s (t a').
    FANN's +-150 clamp of a linear output's s * net is not applied here.
    """
    gram, cross = At @ At.T, targets @ At.T
    tt, s = float((targets * targets).sum()), steepness

    def epoch(weights: Tensor) -> tuple[float, Tensor]:
        wg = weights @ gram
        sse = tt - 2.0 * float((s * weights * cross).sum()) + float((s * s * wg * weights).sum())
        return sse, (s * s) * wg - s * cross

    return epoch


def train_outputs(
    At: Tensor,
    targets: Tensor,
    weights: Tensor,
    activation: Activations,
    error: OutputError,
    phase: Phase,
    rprop: Rprop,
    desired_error: float,
) -> OutputPhaseResult:
    """Train the output neurons' incoming ``weights`` (outputs x neurons, in place) full batch with iRPROP-."""
    linear = activation.is_linear and not error.tanh
    epoch_of = (
        _gram_epoch(At, targets, activation.steepness) if linear else _direct_epoch(At, targets, activation, error)
    )
    optimiser = IRpropMinus(weights, rprop)
    stagnation = Stagnation(phase)
    n_values = targets.numel()
    first = 0.0
    for epoch in range(phase.max_epochs):
        sse, gradient = epoch_of(weights)
        mse = sse / n_values
        optimiser.step(weights, gradient)
        if epoch == 0:
            first = mse
        if mse <= desired_error or (epoch > 0 and stagnation.stalled(first - mse, epoch)):
            return OutputPhaseResult(mse, sse, epoch + 1)
    return OutputPhaseResult(mse, sse, phase.max_epochs)


@dataclass(frozen=True)
class CandidatePhaseResult:
    """The winning candidate's index, its score, and the epochs run."""

    best: int
    score: float
    epochs: int


def initial_candidates(
    n_candidates: int, n_inputs: int, n_hidden: int, n_outputs: int, dtype: torch.dtype, generator: torch.Generator
) -> Tensor:
    """Candidate weights (candidates x (incoming + outputs)) drawn as FANN's semi Widrow-Nguyen rule says."""
    sigma = min(max(2.0 * (0.7 * (n_hidden + 1)) ** (1.0 / n_inputs), 0.5), 8.0)
    n_incoming = n_inputs + 1 + n_hidden
    weights = torch.rand(n_candidates, n_incoming + n_outputs, dtype=dtype, generator=generator) * sigma
    bias = torch.rand(n_candidates, dtype=dtype, generator=generator)
    weights[:, n_inputs] = (2.0 * bias - 1.0) * sigma
    return weights


def train_candidates(
    At: Tensor,
    residual: Tensor,
    sse_last: float,
    weights: Tensor,
    pool: Activations,
    phase: Phase,
    rprop: Rprop,
    candidate_limit: float,
) -> CandidatePhaseResult:
    """Train every candidate's incoming and output ``weights`` (in place) together on the frozen net's residual.

    A candidate's loss is sum_p sum_j (v_p u_j - e_pj)^2; its score is ``sse_last`` minus that
    loss, the error it would remove. The best score of the epoch picks the winner (FANN).
    """
    n_incoming = At.shape[0]
    optimiser = IRpropMinus(weights, rprop)
    stagnation = Stagnation(phase)
    offset = sse_last - float((residual * residual).sum())
    chain = 2.0 * pool.chain
    gradient = torch.empty_like(weights)
    incoming, outgoing = weights[:, :n_incoming], weights[:, n_incoming:]
    incoming_gradient, outgoing_gradient = (gradient[:, :n_incoming], gradient[:, n_incoming:])
    patterns, residual_t = At.T, residual.T
    space = pool.workspace(At.shape[1])
    for epoch in range(phase.max_epochs):
        scaled = incoming * pool.steepness
        if pool.shift is None:
            torch.matmul(scaled, At, out=space.x)
        else:
            torch.addmm(pool.shift, scaled, At, out=space.x)
        space.x.clamp_(-MAX_NET, MAX_NET)
        values, base_slopes = pool.raw(space)
        vv = torch.linalg.vecdot(values, values)[:, None]
        uu = torch.linalg.vecdot(outgoing, outgoing)[:, None]
        ve = values @ residual_t
        # sse_last - loss = offset + 2 u.ve - vv u.u, with loss = vv u.u - 2 u.ve + e.e (no cancellation)
        scores = torch.linalg.vecdot(torch.addcmul(ve, outgoing, vv, value=-0.5), outgoing).mul_(2.0).add_(offset)
        torch.addcmul(ve, outgoing, vv, value=-1.0, out=outgoing_gradient).mul_(-2.0)
        dloss = torch.addmm(values * uu, outgoing, residual, alpha=-1.0).mul_(base_slopes)
        torch.matmul(dloss, patterns, out=incoming_gradient).mul_(chain)
        optimiser.step(weights, gradient)
        score, best = torch.max(scores, 0)
        score_value = float(score)
        if sse_last > 0 and score_value / sse_last > candidate_limit:
            return CandidatePhaseResult(int(best), score_value, epoch + 1)
        if stagnation.stalled(score_value, epoch):
            return CandidatePhaseResult(int(best), score_value, epoch + 1)
    return CandidatePhaseResult(int(best), score_value, phase.max_epochs)


def held_out_errors(outputs: Tensor, targets: Tensor) -> dict[str, float]:
    """Mean squared and mean absolute error over every pattern and output (NaN for no patterns)."""
    if not targets.numel():
        return {"mse": math.nan, "mae": math.nan}
    error = targets - outputs
    return {"mse": float((error * error).mean()), "mae": float(error.abs().mean())}
