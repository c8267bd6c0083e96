"""Cascade2's outer loop: train outputs, train a candidate pool, install the winner; stop on FANN's rules or held-out error."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import Tensor

from models._cascade_activations import Activations, by_base, is_symmetric
from models._cascade_train import (
    OutputError,
    Phase,
    Rprop,
    held_out_errors,
    initial_candidates,
    train_candidates,
    train_outputs,
)


@dataclass(frozen=True)
class Growth:
    """Every setting of one Cascade2 run."""

    max_hidden: int
    desired_error: float
    n_iter_no_change: int
    validation_metric: str
    candidate_activations: tuple[str, ...]
    candidate_steepnesses: tuple[float, ...]
    candidate_groups: int
    weight_multiplier: float
    candidate_limit: float
    output_activation: str
    output_steepness: float
    tanh_error: bool
    output_phase: Phase
    candidate_phase: Phase
    rprop: Rprop


@dataclass
class Curve:
    """Training MSE, held-out MSE and MAE (scaled targets) after each output phase of the loop, by hidden units."""

    hidden_units: list[int] = field(default_factory=list)
    train_mse: list[float] = field(default_factory=list)
    validation_mse: list[float] = field(default_factory=list)
    validation_mae: list[float] = field(default_factory=list)
    epochs: list[int] = field(default_factory=list)


@dataclass
class Network:
    """A shortcut network: frozen hidden units (each fed by inputs, bias and earlier units) and output weights."""

    n_inputs: int
    hidden_weights: list[Tensor]
    hidden_activations: list[str]
    hidden_steepnesses: list[float]
    output_weights: Tensor
    output: Activations

    def activations(self, X: Tensor, capacity: int | None = None) -> Tensor:
        """Neuron-major activations of patterns ``X``: inputs, bias, hidden units (rows to ``capacity``)."""
        n_neurons = self.n_inputs + 1 + len(self.hidden_weights)
        At = X.new_empty(max(capacity or 0, n_neurons), X.shape[0])
        At[: self.n_inputs] = X.T
        At[self.n_inputs] = 1.0
        for k in range(len(self.hidden_weights)):
            self.install_row(At, k)
        return At

    def install_row(self, At: Tensor, k: int) -> None:
        """Fill hidden unit ``k``'s row of ``At`` from the rows before it."""
        row = self.n_inputs + 1 + k
        unit = Activations.build([self.hidden_activations[k]], [self.hidden_steepnesses[k]], At.dtype)
        At[row] = unit(self.hidden_weights[k][None, :] @ At[:row])[0][0]

    def outputs(self, At: Tensor) -> Tensor:
        """Output values (outputs x patterns) from activations with at least this network's rows."""
        return self.output(self.output_weights @ At[: self.output_weights.shape[1]])[0]


def _pool(settings: Growth) -> tuple[list[str], list[float]]:
    """Candidates activation x steepness x group (FANN's order), regrouped by base function."""
    names, steepnesses = [], []
    for name in settings.candidate_activations:
        for steepness in settings.candidate_steepnesses:
            names += [name] * settings.candidate_groups
            steepnesses += [float(steepness)] * settings.candidate_groups
    order = by_base(names)
    return [names[i] for i in order], [steepnesses[i] for i in order]


def grow(
    X: Tensor, T: Tensor, X_val: Tensor, T_val: Tensor, settings: Growth, generator: torch.Generator
) -> tuple[Network, Curve]:
    """Grow a network on patterns ``X`` (patterns x inputs) with targets ``T`` (patterns x outputs).

    With held-out rows, growth stops after ``n_iter_no_change`` units without a lower
    held-out error (``validation_metric``); the best size is restored and its outputs
    retrained on all rows.
    """
    n_inputs, n_outputs, dtype = X.shape[1], T.shape[1], X.dtype
    names, steepnesses = _pool(settings)
    pool = Activations.build(names, steepnesses, dtype)
    output = Activations.build([settings.output_activation] * n_outputs, [settings.output_steepness] * n_outputs, dtype)
    error = OutputError(halve=is_symmetric(settings.output_activation), tanh=settings.tanh_error)
    initial = torch.rand(n_outputs, n_inputs + 1, dtype=dtype, generator=generator) * 0.2 - 0.1
    net = Network(n_inputs, [], [], [], initial, output)
    capacity = n_inputs + 1 + settings.max_hidden
    At, At_val = net.activations(X, capacity), net.activations(X_val, capacity)
    targets, targets_val = T.T.contiguous(), T_val.T.contiguous()
    held_out = T_val.numel() > 0
    curve, snapshots = Curve(), []
    best_hidden, best_error, epochs = 0, math.inf, 0

    while True:
        hidden = len(net.hidden_weights)
        n_neurons = n_inputs + 1 + hidden
        last = hidden == settings.max_hidden
        desired = 0.0 if last and not held_out else settings.desired_error
        phase = train_outputs(
            At[:n_neurons], targets, net.output_weights, output, error, settings.output_phase, settings.rprop, desired
        )
        epochs += phase.epochs
        validation = held_out_errors(net.outputs(At_val), targets_val)
        curve.hidden_units.append(hidden)
        curve.train_mse.append(phase.mse)
        curve.validation_mse.append(validation["mse"])
        curve.validation_mae.append(validation["mae"])
        curve.epochs.append(epochs)
        if held_out:
            snapshots.append(net.output_weights.clone())
            if validation[settings.validation_metric] < best_error:
                best_hidden, best_error = hidden, validation[settings.validation_metric]
        patience_over = held_out and hidden - best_hidden >= settings.n_iter_no_change
        if last or phase.mse <= settings.desired_error or patience_over:
            break

        residual = error.residual(targets, net.outputs(At))
        candidates = initial_candidates(len(names), n_inputs, hidden, n_outputs, dtype, generator)
        winner = train_candidates(
            At[:n_neurons],
            residual,
            phase.sse,
            candidates,
            pool,
            settings.candidate_phase,
            settings.rprop,
            settings.candidate_limit,
        )
        epochs += winner.epochs
        net.hidden_weights.append(candidates[winner.best, :n_neurons].clone())
        net.hidden_activations.append(names[winner.best])
        net.hidden_steepnesses.append(steepnesses[winner.best])
        net.install_row(At, hidden)
        net.install_row(At_val, hidden)
        outgoing = settings.weight_multiplier * candidates[winner.best, n_neurons:]
        net.output_weights = torch.cat([net.output_weights, outgoing[:, None]], 1)

    if held_out:
        del (
            net.hidden_weights[best_hidden:],
            net.hidden_activations[best_hidden:],
            net.hidden_steepnesses[best_hidden:],
        )
        net.output_weights = snapshots[best_hidden]
        n_neurons = n_inputs + 1 + best_hidden
        every = torch.cat([At[:n_neurons], At_val[:n_neurons]], 1)
        train_outputs(
            every,
            torch.cat([targets, targets_val], 1),
            net.output_weights,
            output,
            error,
            settings.output_phase,
            settings.rprop,
            0.0,
        )
    elif not last:
        train_outputs(
            At[:n_neurons], targets, net.output_weights, output, error, settings.output_phase, settings.rprop, 0.0
        )
    return net, curve
