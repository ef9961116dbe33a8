"""Plots of the NL round-trip study (matplotlib Agg, PNG), each headed by what it shows, the run and n: the
communication matrix as the paper's Table 1 draws it (the N x N cells as a heatmap; q^E and q^G as bars with their
spread beside and under it; the generators' Leak % and Guard % as annotated rows), accuracy against operator count
and depth per generator (§3.2) and the SHAP shares (Figure 4)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from eval.nl.matrix import CommunicationMatrix, accuracy_by, nl_rows
from eval.nl.predictors import PredictorResult
from eval.plotting import count, figure, heading, joined, save, style

DIRECTION_COLORS = {"up": "tab:green", "down": "tab:red"}
OTHER_COLOR = "tab:gray"
CELL_W, CELL_H = 0.72, 0.42  # inches per matrix cell
MARGIN_W, MARGIN_H, GUARD_H = 2.3, 1.5, 0.55  # inches of the q^E bars, the q^G bars and the two guard rows
BAR_COLOR = "tab:blue"


def _cell_counts(matrix: CommunicationMatrix) -> str:
    counts = matrix.n.to_numpy(dtype=int)
    low, high = (int(counts.min()), int(counts.max())) if counts.size else (0, 0)
    return f"n = {low} expressions per cell" if low == high else f"n = {low}-{high} expressions per cell"


def _percent(value: float) -> str:
    return "-" if np.isnan(value) else f"{value:.1f}"


def matrix_figure(matrix: CommunicationMatrix, source: str = "") -> Any:
    """Extractors as rows, generators as columns (names on top), each cell annotated with its accuracy (%); q^E
    (row mean +- std) as bars to the right, q^G (column mean +- std) as bars underneath, then the rows Leak % (the
    operator-adjacency check, the paper's row) and Guard % (every check) of each generator."""
    cells = matrix.cells.to_numpy(dtype=float)
    n_ext, n_gen = cells.shape
    columns = CELL_W * max(n_gen, 3)  # a matrix of one or two generators keeps room for its labels
    fig = figure((columns + MARGIN_W + 2.4, CELL_H * n_ext + MARGIN_H + GUARD_H + 2.4))
    grid = fig.add_gridspec(3, 2, height_ratios=[CELL_H * n_ext, MARGIN_H, GUARD_H], width_ratios=[columns, MARGIN_W])
    ax = fig.add_subplot(grid[0, 0])
    ax_e = fig.add_subplot(grid[0, 1], sharey=ax)
    ax_g = fig.add_subplot(grid[1, 0], sharex=ax)
    ax_guard = fig.add_subplot(grid[2, 0], sharex=ax)
    image = ax.imshow(np.ma.masked_invalid(cells), cmap="viridis", vmin=0, vmax=100, aspect="auto")
    for (i, j), value in np.ndenumerate(cells):
        color = "white" if value < 60 else "black"  # NaN (no rows): "-" in black on the blank cell
        ax.text(j, i, _percent(value), ha="center", va="center", fontsize=7, color=color)
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.set_xticks(range(n_gen), matrix.generators, rotation=45, ha="left", fontsize=8)
    ax.set_yticks(range(n_ext), matrix.extractors, fontsize=8)
    ax.set_xlabel("generator")
    ax.set_ylabel("extractor")
    corner = fig.add_subplot(grid[1, 1])
    corner.axis("off")
    bar = fig.colorbar(image, cax=corner.inset_axes((0.08, 0.55, 0.84, 0.1)), orientation="horizontal")
    bar.set_label("cell colour: round-trip accuracy (%)", fontsize=8)

    q_e, e_std = matrix.extraction_quality.to_numpy(float), matrix.extraction_std.to_numpy(float)
    ax_e.barh(range(n_ext), q_e, xerr=e_std, color=BAR_COLOR, alpha=0.7, height=0.6, capsize=2, ecolor="grey")
    for i, (value, spread) in enumerate(zip(q_e, e_std)):
        ax_e.text(104, i, f"{_percent(value)} ± {_percent(spread)}", va="center", fontsize=7)
    ax_e.set_xlim(0, 175)
    ax_e.set_xticks([0, 50, 100])
    ax_e.axvline(100, color="lightgrey", linewidth=0.8)
    ax_e.tick_params(axis="y", labelleft=False)
    ax_e.set_title(r"$q^E$: row mean ± std (%)", fontsize=9)

    q_g, g_std = matrix.generation_quality.to_numpy(float), matrix.generation_std.to_numpy(float)
    ax_g.bar(range(n_gen), q_g, yerr=g_std, color=BAR_COLOR, alpha=0.7, width=0.6, capsize=2, ecolor="grey")
    for j, (value, spread) in enumerate(zip(q_g, g_std)):
        ax_g.text(j, 104, f"{_percent(value)}\n±{_percent(spread)}", ha="center", va="bottom", fontsize=7)
    ax_g.set_ylim(0, 140)
    ax_g.set_yticks([0, 50, 100])
    ax_g.axhline(100, color="lightgrey", linewidth=0.8)
    ax_g.tick_params(axis="x", labelbottom=False)
    ax_g.set_ylabel(r"$q^G$ (%)" + "\ncolumn mean ± std", fontsize=8)

    rows = {"Leak %": matrix.leak_pass, "Guard %": matrix.guard_pass}
    for i, values in enumerate(rows.values()):
        for j, value in enumerate(values.reindex(matrix.generators).to_numpy(dtype=float)):
            ax_guard.text(j, i, _percent(value), ha="center", va="center", fontsize=8)
    ax_guard.set_ylim(len(rows) - 0.5, -0.5)
    ax_guard.set_yticks(range(len(rows)), list(rows), fontsize=8)
    ax_guard.tick_params(length=0, labelbottom=False)
    for spine in ax_guard.spines.values():
        spine.set_visible(False)
    note = "guard failures count as errors; Leak %: operator-adjacency check passed, Guard %: every check passed"
    heading(
        fig, "NL round trip: communication matrix, round-trip accuracy (%)", joined([source, _cell_counts(matrix)])
    )
    fig.text(0.5, 0.0, note, ha="center", va="top", fontsize=7, color="dimgrey")
    return fig


def heatmap(matrix: CommunicationMatrix, path: str | Path, source: str = "") -> Path:
    """`matrix_figure` as a PNG."""
    return save(matrix_figure(matrix, source), path)


def accuracy_figure(df: pd.DataFrame, by: Sequence[str], source: str = "") -> Any:
    """One panel per column of `by` (e.g. ["k", "d"]): accuracy (%) of each NL generator (over every extractor)
    against that column; the x labels give the expressions at each value."""
    by = list(by)
    if not by:
        raise ValueError("by names no column")
    expressions = nl_rows(df).drop_duplicates("expr_id")
    fig = figure((4.6 * len(by) + 1.8, 4.2))
    axes = fig.subplots(1, len(by), squeeze=False)[0]
    for ax, column in zip(axes, by):
        table = accuracy_by(df, [column], "generator")
        for i, (generator, group) in enumerate(table.groupby("generator", sort=False)):
            ax.plot(group[column], group["accuracy"], markersize=5, label=str(generator), **style(i))
        counts = expressions[column].value_counts().sort_index()
        ax.set_xticks(list(counts.index), [f"{value}\n(n={n})" for value, n in counts.items()], fontsize=8)
        ax.set_xlabel({"k": "operator count k", "d": "tree depth d"}.get(column, column))
        ax.set_ylabel("round-trip accuracy (%)")
        ax.set_ylim(-3, 103)
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside right upper", fontsize=8, title="generator")
    n = f"n = {count(len(expressions), 'expression')}, each read by every extractor"
    heading(fig, f"NL round trip: accuracy by {' and '.join(by)}, a line per generator", joined([source, n]))
    return fig


def accuracy_curve(df: pd.DataFrame, by: Sequence[str], path: str | Path, source: str = "") -> Path:
    """`accuracy_figure` as a PNG."""
    return save(accuracy_figure(df, by, source), path)


def shap_figure(result: PredictorResult, source: str = "") -> Any:
    """Horizontal bars of each feature's share of mean |SHAP| (%), green when higher values push toward success, red
    when toward failure, grey otherwise (categorical features)."""
    from matplotlib.patches import Patch

    if result.skipped:
        raise ValueError(f"no SHAP values to plot: {result.skipped_reason}")
    table = result.importance.iloc[::-1]
    fig = figure((7.0, max(3.0, 0.3 * len(table) + 1.6)))
    ax = fig.subplots()
    colors = [DIRECTION_COLORS.get(d, OTHER_COLOR) for d in table["direction"]]
    ax.barh(table["feature"].astype(str), table["shap_pct"], color=colors)
    for y, (value, direction) in enumerate(zip(table["shap_pct"], table["direction"])):
        mark = {"up": "↑", "down": "↓"}.get(direction, "")
        ax.text(value, y, f" {value:.1f}% {mark}", va="center", fontsize=7)
    ax.set_xlim(0, 1.2 * max([1.0, *table["shap_pct"]]))
    ax.set_xlabel("share of mean |SHAP| (%)")
    legend = [
        Patch(color="tab:green", label="↑ higher value: success"),
        Patch(color="tab:red", label="↓ higher value: failure"),
        Patch(color=OTHER_COLOR, label="categorical"),
    ]
    ax.legend(handles=legend, loc="lower right", fontsize=7, framealpha=0.9)
    auc = None if result.auc is None else f"CV ROC AUC {result.auc:.3f}"
    n = f"n = {count(result.n_rows, 'round trip')} ({result.n_success} correct)"
    heading(fig, "NL round trip: failure predictors (gradient boosting, SHAP)", joined([source, n, auc]))
    return fig


def shap_bar(result: PredictorResult, path: str | Path, source: str = "") -> Path:
    """`shap_figure` as a PNG."""
    return save(shap_figure(result, source), path)


__all__ = [
    "accuracy_curve",
    "accuracy_figure",
    "heatmap",
    "matrix_figure",
    "shap_bar",
    "shap_figure",
]
