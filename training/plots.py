"""Figures logged with each candidate: predicted vs measured, relative error per sample (seed 001, Figs 2-5), growth."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from matplotlib.figure import Figure


def pred_vs_actual(actual: np.ndarray, predicted: np.ndarray, title: str) -> Figure:
    """Out-of-fold predicted against measured seconds, log-log when every value is positive (seed Figs 2 and 4)."""
    figure = Figure(figsize=(5, 5), layout="constrained")
    axes = figure.subplots()
    axes.scatter(actual, predicted, s=14, alpha=0.7)
    low = float(min(actual.min(), predicted.min()))
    high = float(max(actual.max(), predicted.max()))
    axes.plot([low, high], [low, high], color="black", linestyle="--", linewidth=1)
    if low > 0:
        axes.set_xscale("log")
        axes.set_yscale("log")
    axes.set(xlabel="measured seconds", ylabel="predicted seconds (out of fold)", title=title)
    return figure


def relative_errors(actual: np.ndarray, predicted: np.ndarray, title: str) -> Figure:
    """Relative error (predicted - measured) / measured of each run, runs ordered by measured time (seed Figs 3 and 5)."""
    positive = actual > 0
    order = np.argsort(actual[positive], kind="stable")
    errors = 100.0 * (predicted[positive] - actual[positive]) / actual[positive]
    figure = Figure(figsize=(7, 4), layout="constrained")
    axes = figure.subplots()
    axes.vlines(np.arange(len(order)), 0.0, errors[order], linewidth=1.0)
    axes.axhline(0.0, color="black", linewidth=1)
    axes.set_yscale("symlog", linthresh=100.0)
    axes.set(xlabel="run (ordered by measured seconds)", ylabel="relative error (%)", title=title)
    return figure


def learning_curve(curve: Mapping[str, np.ndarray], title: str) -> Figure:
    """Training and held-out error against hidden units of a network grown unit by unit."""
    figure = Figure(figsize=(6, 4), layout="constrained")
    axes = figure.subplots()
    units = curve["hidden_units"]
    for key in ("train_mse", "validation_mse"):
        if key in curve and len(curve[key]) == len(units):
            axes.plot(units, curve[key], marker="o", label=key.replace("_", " "))
    axes.set_yscale("log")
    axes.legend()
    axes.set(xlabel="hidden units", ylabel="mean squared error (scaled target)", title=title)
    return figure
