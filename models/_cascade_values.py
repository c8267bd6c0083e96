"""FANN's activations as plain values in NumPy, and the forward pass of a grown network: all a fitted cascade network
needs to predict. Growing one needs torch (:mod:`models._cascade_activations` and the modules beside it); predicting
does not, so a service that loads such a model (a champion) does not import torch for it."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

# FANN clamps steepness * sum to this range before applying the activation.
MAX_NET = 150.0

# FANN activation name -> (base g, scale a, offset b, shift c): f = a * g(x + c) + b with x = steepness * sum,
# so that sigmoid and tanh share tanh, and sin and cos share one sine. FANN's clamp to +-150 applies to x + c
# here, which differs from FANN only for cos beyond |x| = 148.4.
AFFINE: dict[str, tuple[str, float, float, float]] = {
    "sigmoid": ("tanh", 0.5, 0.5, 0.0),
    "sigmoid_symmetric": ("tanh", 1.0, 0.0, 0.0),
    "gaussian": ("gauss", 1.0, 0.0, 0.0),
    "gaussian_symmetric": ("gauss", 2.0, -1.0, 0.0),
    "elliot": ("elliot", 0.5, 0.5, 0.0),
    "elliot_symmetric": ("elliot", 1.0, 0.0, 0.0),
    "sin_symmetric": ("trig", 1.0, 0.0, 0.0),
    "cos_symmetric": ("trig", 1.0, 0.0, math.pi / 2),
    "sin": ("trig", 0.5, 0.5, 0.0),
    "cos": ("trig", 0.5, 0.5, math.pi / 2),
    "linear": ("linear", 1.0, 0.0, 0.0),
}
# FANN's default candidate activations (every one but LINEAR), in FANN's order.
CANDIDATE_ACTIVATIONS: tuple[str, ...] = tuple(name for name in AFFINE if name != "linear")

# The base functions' values (training's torch versions also give their derivatives).
VALUES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "tanh": np.tanh,
    "gauss": lambda x: np.exp(-x * x),
    "elliot": lambda x: x / (1.0 + np.abs(x)),
    "trig": np.sin,
    "linear": lambda x: x,
}


def activate(names: Sequence[str], steepnesses: Sequence[float], net: np.ndarray) -> np.ndarray:
    """f(steepness * net) for each row of ``net`` (neurons x patterns), row k with activation ``names[k]``."""
    out = np.empty_like(net)
    for k, (name, steepness) in enumerate(zip(names, steepnesses, strict=True)):
        base, scale, offset, shift = AFFINE[name]
        x = np.clip(net[k] * float(steepness) + shift, -MAX_NET, MAX_NET)
        out[k] = VALUES[base](x) * scale + offset
    return out


def forward(
    X: np.ndarray,
    hidden_weights: Sequence[np.ndarray],
    hidden_activations: Sequence[str],
    hidden_steepnesses: Sequence[float],
    output_weights: np.ndarray,
    output_activation: str,
    output_steepness: float,
) -> np.ndarray:
    """Outputs (outputs x patterns) of a shortcut network for patterns ``X`` (patterns x inputs): each hidden unit is fed
    by the inputs, a bias and the units before it, the outputs by all of them."""
    n_inputs = X.shape[1]
    At = np.empty((n_inputs + 1 + len(hidden_weights), X.shape[0]), dtype=X.dtype)
    At[:n_inputs] = X.T
    At[n_inputs] = 1.0
    for k, weights in enumerate(hidden_weights):
        row = n_inputs + 1 + k
        At[row] = activate([hidden_activations[k]], [hidden_steepnesses[k]], weights[None, :] @ At[:row])[0]
    n_outputs = output_weights.shape[0]
    return activate(
        [output_activation] * n_outputs, [output_steepness] * n_outputs, output_weights @ At[: output_weights.shape[1]]
    )
