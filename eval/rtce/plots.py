"""RTCE plots (matplotlib Agg, PNG, fixed sizes for a given shape of data): Pass@k per task as one polygon per model
(Appendix H), input length vs Pass@k (Appendix I) and mean Pass@k per input category and task (Appendix K)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eval.rtce.report import (
    ALGORITHM_ORDER,
    LENGTH_BINS,
    TASK_ORDER,
    Row,
    algorithm_label,
    length_bin,
    length_bins,
    ordered,
    pass_metric,
    series_keys,
    series_label,
    several_temperatures,
    task_label,
)

DPI = 120


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _percent(value: float | None) -> float:
    return math.nan if value is None else 100 * value


def _save(fig: Any, path: str | Path) -> Path:
    path = Path(path)
    fig.savefig(path, dpi=DPI)
    _pyplot().close(fig)
    return path


def radial_pass_plot(aggregated: Sequence[Row], algorithm: str, path: str | Path, metric: str = "pass@5") -> Path:
    """One axis per task (the paper's four always), one polygon per model (and temperature); gaps where a task has
    no value; a model without any value is left out."""
    plt = _pyplot()
    mine = [r for r in aggregated if r["algorithm"] == algorithm]
    tasks = ordered([*TASK_ORDER, *(r["task"] for r in mine)], TASK_ORDER)
    index = {(r["model"], r["temperature"], r["task"]): r.get(metric) for r in mine}
    angles = [2 * math.pi * i / len(tasks) for i in range(len(tasks))]
    several = several_temperatures(aggregated)
    fig = plt.figure(figsize=(8, 5))
    axis = fig.add_axes((0.08, 0.1, 0.5, 0.8), projection="polar")
    for model, temperature in series_keys(mine):
        values = [_percent(index.get((model, temperature, task))) for task in tasks]
        if all(math.isnan(v) for v in values):
            continue
        axis.plot(
            [*angles, angles[0]], [*values, values[0]], marker="o", label=series_label(model, temperature, several)
        )
    axis.set_theta_offset(math.pi / 2)  # the first task on top, the others clockwise
    axis.set_theta_direction(-1)
    axis.set_xticks(angles, [task_label(t) for t in tasks])
    axis.set_ylim(0, 100)
    axis.set_rlabel_position(45)
    axis.set_title(f"{algorithm_label(algorithm)}: {metric} (%)", pad=20)
    if axis.get_legend_handles_labels()[0]:
        axis.legend(loc="upper left", bbox_to_anchor=(1.15, 1.0), fontsize=8)
    return _save(fig, path)


def _items_per_bin(rows: Sequence[Row], algorithm: str) -> dict[str, int]:
    items: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        if row["algorithm"] == algorithm:
            items[length_bin(int(row["input_length"]))].add(row["item_id"])
    return {label: len(ids) for label, ids in items.items()}


def length_vs_pass_plot(rows: Sequence[Row], path: str | Path, metric: str | None = None) -> Path:
    """Mean pass per input-length bin, a panel per algorithm and a line per model (and temperature); the x labels
    give the number of inputs in each bin."""
    plt = _pyplot()
    metric = metric or pass_metric(rows)
    bins = length_bins(rows, metric)
    algorithms = ordered((r["algorithm"] for r in rows), ALGORITHM_ORDER)
    several = several_temperatures(rows)
    fig, axes = plt.subplots(1, len(algorithms), figsize=(4 * len(algorithms), 3.8), sharey=True, squeeze=False)
    for axis, algorithm in zip(axes[0], algorithms):
        mine = {(b["model"], b["temperature"], b["bin"]): b["mean"] for b in bins if b["algorithm"] == algorithm}
        counts = _items_per_bin(rows, algorithm)
        labels = [label for label in LENGTH_BINS if label in counts]
        for model, temperature in series_keys(b for b in bins if b["algorithm"] == algorithm):
            values = [_percent(mine.get((model, temperature, label))) for label in labels]
            axis.plot(range(len(labels)), values, marker="o", label=series_label(model, temperature, several))
        axis.set_xticks(range(len(labels)), [f"{label}\n(n={counts[label]})" for label in labels], fontsize=8)
        axis.set(title=algorithm_label(algorithm), xlabel="input length (characters)", ylim=(-2, 102))
    axes[0][0].set_ylabel(f"{metric} (%)")
    axes[0][-1].legend(fontsize=8)
    fig.tight_layout()
    return _save(fig, path)


def category_heatmap_plot(difficulty: Sequence[Row], path: str | Path, metric: str = "pass@5") -> Path:
    """Mean pass in % per input category (rows, grouped by family) and task (columns); blank where no data."""
    import numpy as np

    plt = _pyplot()
    categories = list(dict.fromkeys(r["category"] for r in difficulty))
    tasks = ordered((r["task"] for r in difficulty), TASK_ORDER)
    grid = np.full((len(categories), len(tasks)), np.nan)
    for r in difficulty:
        grid[categories.index(r["category"]), tasks.index(r["task"])] = _percent(r["mean"])
    fig, axis = plt.subplots(figsize=(3.0 + 1.3 * len(tasks), 1.4 + 0.28 * len(categories)))
    image = axis.imshow(np.ma.masked_invalid(grid), vmin=0, vmax=100, cmap="RdYlGn", aspect="auto")
    axis.set_xticks(range(len(tasks)), [task_label(t) for t in tasks], fontsize=8)
    axis.set_yticks(range(len(categories)), categories, fontsize=8)
    for (i, j), value in np.ndenumerate(grid):
        if not math.isnan(value):
            axis.text(j, i, f"{value:.0f}", ha="center", va="center", fontsize=7)
    fig.colorbar(image, ax=axis, label=f"mean {metric} (%)")
    axis.set_title(f"Mean {metric} per input category")
    fig.tight_layout()
    return _save(fig, path)


__all__ = ["category_heatmap_plot", "length_vs_pass_plot", "radial_pass_plot"]
