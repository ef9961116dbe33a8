"""RTCE plots (matplotlib Agg, PNG): Pass@k per task as one polygon per model (Appendix H), input length vs Pass@k
(Appendix I), mean Pass@k per input category and task (Appendix K) and held-out EM / ES against training step. Each
figure is headed by what it shows and a caption (model, benchmark, scoring, n); series differ in colour, dash and
marker, and legends sit outside the data."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eval.plotting import count, figure, heading, joined, save, style
from eval.rtce.learning import checkpoint_points
from eval.rtce.vocabulary import (
    LENGTH_BINS,
    PAPER_ORDER,
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

FILL_ALPHA = 0.08
DODGE = 0.07  # x offset between the series of the length plot, so coinciding points stay apart


def source(title: str, settings: Mapping[str, Any]) -> str:
    """The caption's start: who answered (the model, or the predictions file; the report's title otherwise), the
    benchmark and the scoring mode (each figure adds its n)."""
    if settings.get("model"):
        who = str(settings["model"])
    elif settings.get("predictions"):
        who = f"predictions {Path(str(settings['predictions'])).name}"
    else:
        who = title
    data = f"benchmark {Path(str(settings['benchmark'])).name}" if settings.get("benchmark") else None
    scoring = f"{settings['scoring']} scoring" if settings.get("scoring") else None
    return joined([who, data, scoring])


def _percent(value: float | None) -> float:
    return math.nan if value is None else 100 * value


def radial_pass_figure(aggregated: Sequence[Row], algorithm: str, metric: str = "pass@5", source: str = "") -> Any:
    """One axis per task (the paper's four always), one translucent polygon per model (and temperature); gaps where
    a task has no value; a model without any value is left out."""
    mine = [r for r in aggregated if r["algorithm"] == algorithm]
    tasks = ordered([*TASK_ORDER, *(r["task"] for r in mine)], TASK_ORDER)
    index = {(r["model"], r["temperature"], r["task"]): r.get(metric) for r in mine}
    angles = [2 * math.pi * i / len(tasks) for i in range(len(tasks))]
    several = several_temperatures(aggregated)
    fig = figure((6.4, 6.4))
    axis = fig.add_subplot(projection="polar")
    shown = 0
    for model, temperature in series_keys(mine):
        values = [_percent(index.get((model, temperature, task))) for task in tasks]
        if all(math.isnan(v) for v in values):
            continue
        line = style(shown)
        shown += 1
        axis.plot(
            [*angles, angles[0]],
            [*values, values[0]],
            linewidth=1.6,
            markersize=5,
            **line,
            label=series_label(model, temperature, several),
        )
        points = [(a, v) for a, v in zip(angles, values) if not math.isnan(v)]
        axis.fill([a for a, _ in points], [v for _, v in points], color=line["color"], alpha=FILL_ALPHA)
    axis.set_theta_offset(math.pi / 2)  # the first task on top, the others clockwise
    axis.set_theta_direction(-1)
    axis.set_xticks(angles, [task_label(t) for t in tasks])
    for angle, label in zip(angles, axis.get_xticklabels()):  # labels beside the circle, never across it
        side = math.sin(angle)  # clockwise from the top: > 0 on the right
        label.set_horizontalalignment("left" if side > 0.1 else "right" if side < -0.1 else "center")
    axis.tick_params(axis="x", pad=6)
    axis.set_ylim(0, 104)
    axis.set_yticks([20, 40, 60, 80, 100], ["20", "40", "60", "80", "100%"], fontsize=7, color="grey")
    axis.set_rlabel_position(45)
    if shown:
        fig.legend(loc="outside lower center", ncols=min(shown, 4), fontsize=8)
    items = max((int(r.get("n_items") or 0) for r in mine), default=0)
    title = f"RTCE {algorithm_label(algorithm)}: {metric} per task (%), a polygon per model"
    heading(fig, title, joined([source, f"n = {count(items, 'input')} per task"]))
    return fig


def radial_pass_plot(
    aggregated: Sequence[Row], algorithm: str, path: str | Path, metric: str = "pass@5", source: str = ""
) -> Path:
    return save(radial_pass_figure(aggregated, algorithm, metric, source), path)


def _items_per_bin(rows: Sequence[Row], algorithm: str) -> dict[str, int]:
    items: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        if row["algorithm"] == algorithm:
            items[length_bin(int(row["input_length"]))].add(row["item_id"])
    return {label: len(ids) for label, ids in items.items()}


def length_vs_pass_figure(rows: Sequence[Row], metric: str | None = None, source: str = "") -> Any:
    """Mean pass per input-length bin, a panel per algorithm and a line per model (and temperature), the series
    dodged apart a little; the x labels give the number of inputs in each bin."""
    metric = metric or pass_metric(rows)
    bins = length_bins(rows, metric)
    algorithms = ordered((r["algorithm"] for r in rows), PAPER_ORDER)
    several = several_temperatures(rows)
    series = series_keys(bins)
    fig = figure((3.7 * len(algorithms) + 1.6, 4.2))
    axes = fig.subplots(1, len(algorithms), sharey=True, squeeze=False)[0]
    for axis, algorithm in zip(axes, algorithms):
        mine = {(b["model"], b["temperature"], b["bin"]): b["mean"] for b in bins if b["algorithm"] == algorithm}
        counts = _items_per_bin(rows, algorithm)
        labels = [label for label in LENGTH_BINS if label in counts]
        for i, (model, temperature) in enumerate(series):
            values = [_percent(mine.get((model, temperature, label))) for label in labels]
            offset = (i - (len(series) - 1) / 2) * DODGE
            axis.plot(
                [x + offset for x in range(len(labels))],
                values,
                markersize=5,
                **style(i),
                label=series_label(model, temperature, several),
            )
        axis.set_xticks(range(len(labels)), [f"{label}\n(n={counts[label]})" for label in labels], fontsize=7)
        axis.set(title=algorithm_label(algorithm), xlabel="input length (characters)", ylim=(-3, 103))
        axis.grid(alpha=0.3)
    axes[0].set_ylabel(f"{metric} (%)")
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside right upper", fontsize=8)
    inputs = len({r["item_id"] for r in rows})
    n = f"n = {count(inputs, 'input')} (per bin under each label)"
    heading(fig, f"RTCE: {metric} by input length, a panel per algorithm", joined([source, n]))
    return fig


def length_vs_pass_plot(rows: Sequence[Row], path: str | Path, metric: str | None = None, source: str = "") -> Path:
    return save(length_vs_pass_figure(rows, metric, source), path)


def category_heatmap_figure(difficulty: Sequence[Row], metric: str = "pass@5", source: str = "") -> Any:
    """Mean pass in % per input category (rows, grouped by family; n inputs each) and task (columns); blank where
    no data."""
    import numpy as np

    categories = list(dict.fromkeys((r["family"], r["category"]) for r in difficulty))
    tasks = ordered((r["task"] for r in difficulty), TASK_ORDER)
    grid = np.full((len(categories), len(tasks)), np.nan)
    items: dict[tuple[str, str], int] = defaultdict(int)
    for r in difficulty:
        key = (r["family"], r["category"])
        grid[categories.index(key), tasks.index(r["task"])] = _percent(r["mean"])
        items[key] = max(items[key], int(r["items"]))
    fig = figure((3.6 + 1.3 * len(tasks), 1.8 + 0.3 * len(categories)))
    axis = fig.subplots()
    image = axis.imshow(np.ma.masked_invalid(grid), vmin=0, vmax=100, cmap="RdYlGn", aspect="auto")
    axis.set_xticks(range(len(tasks)), [task_label(t) for t in tasks], fontsize=8)
    labels = [f"{family} / {category} (n={items[(family, category)]})" for family, category in categories]
    axis.set_yticks(range(len(categories)), labels, fontsize=8)
    for (i, j), value in np.ndenumerate(grid):
        if not math.isnan(value):
            color = "white" if value < 15 or value > 85 else "black"  # dark red and dark green cells
            axis.text(j, i, f"{value:.0f}", ha="center", va="center", fontsize=7, color=color)
    fig.colorbar(image, ax=axis, label=f"mean {metric} (%)")
    n = f"n = {count(sum(items.values()), 'input')}"
    title = f"RTCE: mean {metric} per input category and task (%)"
    heading(fig, title, joined([source, n, "mean over models, temperatures and algorithms"]))
    return fig


def category_heatmap_plot(
    difficulty: Sequence[Row], path: str | Path, metric: str = "pass@5", source: str = ""
) -> Path:
    return save(category_heatmap_figure(difficulty, metric, source), path)


def _item_counts(points: Sequence[Row]) -> str:
    """'40', or '12-40' when the points count different numbers of items ('' without points)."""
    counts = sorted({int(p["n"]) for p in points})
    return "" if not counts else str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"


def checkpoint_curve_figure(aggregated: Sequence[Row], steps: Mapping[str, int], source: str = "") -> Any:
    """Held-out EM and ES (%) against training step, a panel per algorithm and two series (EM, ES) per task: the
    base at step 0, each adapter / checkpoint label of the algorithm at `steps[label]` (`checkpoint_points`)."""
    from matplotlib.ticker import MaxNLocator

    points = checkpoint_points(aggregated, steps)
    algorithms = list(dict.fromkeys(p["algorithm"] for p in points))
    tasks = ordered((p["task"] for p in points), TASK_ORDER)  # one style per task and metric in every panel
    fig = figure((3.9 * max(1, len(algorithms)) + 1.8, 4.2))
    axes = fig.subplots(1, max(1, len(algorithms)), sharey=True, squeeze=False)[0]
    for axis, algorithm in zip(axes, algorithms):
        mine = [p for p in points if p["algorithm"] == algorithm]
        for task in dict.fromkeys(p["task"] for p in mine):
            series = sorted((p for p in mine if p["task"] == task), key=lambda p: p["step"])
            for m, (metric, name) in enumerate((("em", "EM"), ("es", "ES"))):
                label = f"{task_label(task)} {name}"
                values = [_percent(p[metric]) for p in series]
                axis.plot(
                    [p["step"] for p in series], values, markersize=5, label=label, **style(2 * tasks.index(task) + m)
                )
        axis.set(
            title=f"{algorithm_label(algorithm)} (n={_item_counts(mine)})", xlabel="training step", ylim=(-3, 103)
        )
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
        axis.grid(alpha=0.3)
    if not algorithms:
        axes[0].text(
            0.5, 0.5, "no adapter with a training step", ha="center", va="center", transform=axes[0].transAxes
        )
    axes[0].set_ylabel("held-out EM / ES (%)")
    legend = {label: handle for axis in axes for handle, label in zip(*axis.get_legend_handles_labels())}
    if legend:
        fig.legend(
            list(legend.values()), list(legend), loc="outside lower center", ncols=min(len(legend), 4), fontsize=8
        )
    temperature = min((r["temperature"] for r in aggregated), default=None)
    lowest = None if temperature is None else f"T={temperature:g}"
    title = "RTCE: held-out EM / ES (%) by training step, base at step 0"
    heading(fig, title, joined([source, f"n = {_item_counts(points) or 0} inputs per task", lowest]))
    return fig


def checkpoint_curve_plot(aggregated: Sequence[Row], steps: Mapping[str, int], source: str, path: str | Path) -> Path:
    return save(checkpoint_curve_figure(aggregated, steps, source), path)


__all__ = [
    "category_heatmap_figure",
    "category_heatmap_plot",
    "checkpoint_curve_figure",
    "checkpoint_curve_plot",
    "length_vs_pass_figure",
    "length_vs_pass_plot",
    "radial_pass_figure",
    "radial_pass_plot",
    "source",
]
