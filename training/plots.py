"""Figures logged with each candidate: predicted vs measured, relative error per sample (as in Figs 2-5 of
Brandstätter-Müller et al. (2011), *Improving job scheduling on a heterogeneous cluster by predicting job execution
times using heuristics*), growth."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FormatStrFormatter, NullLocator


def save(figure: Figure, path: Path) -> Path:
    """Write ``figure`` as SVG with its text kept as text: a third cheaper than PNG, sharp at any zoom, shown by MLflow's UI."""
    with rc_context({"svg.fonttype": "none"}):
        figure.savefig(path, format="svg")
    return path


def _figure(width: float, height: float, title: str) -> tuple[Figure, Axes]:
    """A figure of one titled axes with fixed margins and title place.

    Every candidate of a training session gets these figures, so they are drawn cheaply: a
    constrained layout, an automatically placed title and the minor ticks of log axes would
    triple the time to save one.
    """
    figure = Figure(figsize=(width, height))
    figure.subplots_adjust(left=1.0 / width, right=1 - 0.2 / width, bottom=0.6 / height, top=1 - 0.4 / height)
    axes = figure.subplots()
    axes.set_title(title, y=1.0)
    return figure, axes


def _plain_log_ticks(axes: Axes) -> None:
    """Major ticks only, labelled as plain numbers (0.01, 1, 100): typesetting 10^k labels is slow."""
    for axis in (axes.xaxis, axes.yaxis):
        axis.set_minor_locator(NullLocator())
        axis.set_major_formatter(FormatStrFormatter("%g"))


def pred_vs_actual(actual: np.ndarray, predicted: np.ndarray, title: str) -> Figure:
    """Out-of-fold predicted against measured seconds, log-log when every value is positive (seed Figs 2 and 4)."""
    figure, axes = _figure(5, 5, title)
    axes.scatter(actual, predicted, s=14, alpha=0.7)
    low = float(min(actual.min(), predicted.min()))
    high = float(max(actual.max(), predicted.max()))
    axes.plot([low, high], [low, high], color="black", linestyle="--", linewidth=1)
    if low > 0:
        axes.set_xscale("log")
        axes.set_yscale("log")
        _plain_log_ticks(axes)
    axes.set(xlabel="measured seconds", ylabel="predicted seconds (out of fold)")
    return figure


def relative_errors(actual: np.ndarray, predicted: np.ndarray, title: str) -> Figure:
    """Relative error (predicted - measured) / measured of each run, runs ordered by measured time (seed Figs 3 and 5)."""
    positive = actual > 0
    order = np.argsort(actual[positive], kind="stable")
    errors = 100.0 * (predicted[positive] - actual[positive]) / actual[positive]
    figure, axes = _figure(7, 4, title)
    # one stem per run, as a single path broken by NaN (800 paths are slow)
    stems = np.full((len(order), 3), np.nan)
    stems[:, 0], stems[:, 1] = 0.0, errors[order]
    axes.plot(np.repeat(np.arange(len(order)), 3), stems.ravel(), linewidth=1.0)
    axes.axhline(0.0, color="black", linewidth=1)
    if np.abs(errors).max(initial=0.0) > 100.0:
        # linear within +-100 %, logarithmic beyond
        axes.set_yscale("symlog", linthresh=100.0)
        _plain_log_ticks(axes)
    axes.set(xlabel="run (ordered by measured seconds)", ylabel="relative error (%)")
    return figure


def learning_curves(curves: Sequence[Mapping[str, np.ndarray]], title: str) -> Figure:
    """Error against hidden units of a network grown unit by unit, one line per cross-validation fold.

    Each fold's held-out error is drawn (its training error where it kept no rows aside): where a
    line turns up is where that fold's network stopped growing usefully.
    """
    figure, axes = _figure(6, 4, title)
    for fold, curve in enumerate(curves):
        key = "validation_mse" if len(curve.get("validation_mse", [])) == len(curve["hidden_units"]) else "train_mse"
        axes.plot(curve["hidden_units"], curve[key], marker="o", markersize=3, linewidth=1, label=f"fold {fold + 1}")
    axes.set_yscale("log")
    _plain_log_ticks(axes)
    axes.legend(fontsize="small", ncol=2)
    axes.set(xlabel="hidden units", ylabel="held-out mean squared error (scaled target)")
    return figure
