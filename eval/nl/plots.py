"""Plots of the NL round-trip study (matplotlib Agg, PNG): the communication matrix as an annotated heatmap with its
marginals (Table 1), accuracy against operator count and depth per generator (§3.2) and the SHAP shares (Figure 4)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from eval.nl.matrix import CommunicationMatrix, accuracy_by
from eval.nl.predictors import PredictorResult

DPI = 120
DIRECTION_COLORS = {"up": "tab:green", "down": "tab:red"}
OTHER_COLOR = "tab:gray"


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    _pyplot().close(fig)
    return path


def heatmap(matrix: CommunicationMatrix, path: str | Path) -> Path:
    """Extractors as rows, generators as columns, each cell annotated with its accuracy (%); the last column is q^E
    (row mean), the last rows q^G (column mean) and the generators' Leak %."""
    plt = _pyplot()
    cells = matrix.cells.to_numpy(dtype=float)
    n_ext, n_gen = cells.shape
    grid = np.full((n_ext + 2, n_gen + 1), np.nan)
    grid[:n_ext, :n_gen] = cells
    grid[:n_ext, n_gen] = matrix.extraction_quality.to_numpy(dtype=float)
    grid[n_ext, :n_gen] = matrix.generation_quality.to_numpy(dtype=float)
    grid[n_ext + 1, :n_gen] = matrix.leak_pass.reindex(matrix.generators).to_numpy(dtype=float)
    size = (max(4.0, 0.7 * (n_gen + 1) + 2.5), max(3.0, 0.5 * (n_ext + 2) + 1.5))
    fig, ax = plt.subplots(figsize=size)
    image = ax.imshow(np.ma.masked_invalid(grid), cmap="viridis", vmin=0, vmax=100, aspect="auto")
    for (i, j), value in np.ndenumerate(grid):
        if not np.isnan(value):
            ax.text(j, i, f"{value:.1f}", ha="center", va="center", fontsize=7, color="white" if value < 60 else "k")
    ax.axhline(n_ext - 0.5, color="white", linewidth=2)
    ax.axvline(n_gen - 0.5, color="white", linewidth=2)
    ax.set_xticks(range(n_gen + 1), [*matrix.generators, "q^E"], rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(n_ext + 2), [*matrix.extractors, "q^G", "Leak %"], fontsize=8)
    ax.set_xlabel("generator")
    ax.set_ylabel("extractor")
    ax.set_title("Round-trip accuracy (%)")
    fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
    return _save(fig, path)


def accuracy_curve(df: pd.DataFrame, by: Sequence[str], path: str | Path) -> Path:
    """One panel per column of `by` (e.g. ["k", "d"]): accuracy (%) of each NL generator against that column."""
    plt = _pyplot()
    from matplotlib.ticker import MaxNLocator

    by = list(by)
    if not by:
        raise ValueError("by names no column")
    fig, axes = plt.subplots(1, len(by), figsize=(5 * len(by), 4), squeeze=False)
    for ax, column in zip(axes[0], by):
        table = accuracy_by(df, [column], "generator")
        for generator, group in table.groupby("generator", sort=False):
            ax.plot(group[column], group["accuracy"], marker="o", label=str(generator))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel(column)
        ax.set_ylabel("accuracy (%)")
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=7, title="generator")
    fig.suptitle("Accuracy by complexity per generator")
    fig.tight_layout()
    return _save(fig, path)


def shap_bar(result: PredictorResult, path: str | Path) -> Path:
    """Horizontal bars of each feature's share of mean |SHAP| (%), green when higher values push toward success, red
    when toward failure, grey otherwise (categorical features)."""
    if result.skipped:
        raise ValueError(f"no SHAP values to plot: {result.skipped_reason}")
    plt = _pyplot()
    table = result.importance.iloc[::-1]
    fig, ax = plt.subplots(figsize=(6, max(2.5, 0.3 * len(table) + 1)))
    colors = [DIRECTION_COLORS.get(d, OTHER_COLOR) for d in table["direction"]]
    ax.barh(table["feature"].astype(str), table["shap_pct"], color=colors)
    for y, (value, direction) in enumerate(zip(table["shap_pct"], table["direction"])):
        mark = {"up": "↑", "down": "↓"}.get(direction, "")
        ax.text(value, y, f" {value:.1f}% {mark}", va="center", fontsize=7)
    ax.set_xlabel("share of mean |SHAP| (%)")
    title = "Failure predictors"
    if result.auc is not None:
        title += f" (CV ROC AUC {result.auc:.3f})"
    ax.set_title(title)
    return _save(fig, path)


__all__ = ["DPI", "accuracy_curve", "heatmap", "shap_bar"]
