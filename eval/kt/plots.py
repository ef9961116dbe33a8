"""The KT evaluation's plots (matplotlib Agg, PNG): CompressionRate and Accuracy per sequence-length bucket, and the
distribution of the longest correct prefix. Each is headed by what it shows, the model, the set and n."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eval.plotting import count, figure, heading, joined, save


def caption(settings: Mapping[str, Any], modality: str, num_items: int) -> str:
    """Who made the programs (model + adapter, or the predictions file), the set, the mode and n."""
    if settings.get("model"):
        who = str(settings["model"]) + (
            f" + adapter {Path(settings['adapter']).name}" if settings.get("adapter") else ""
        )
    else:
        who = f"predictions {Path(str(settings.get('predictions'))).name}"
    data = f"set {Path(str(settings.get('dataset'))).name} ({modality})"
    mode = f"{settings['mode']} mode" if settings.get("mode") else None
    return joined([who, data, mode, f"n = {count(num_items, 'sequence')}"])


def _value(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _bars(axis: Any, labels: list[str], values: list[float], color: str, digits: int = 2) -> None:
    axis.bar(range(len(labels)), values, color=color, alpha=0.85)
    for x, value in enumerate(values):
        if not math.isnan(value):
            axis.annotate(
                f"{value:.{digits}f}",
                (x, value),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=8,
            )
    axis.set_xticks(range(len(labels)), labels, fontsize=8)


def length_figure(metrics: Mapping[str, Any], caption_text: str) -> Any:
    """Two panels over the length buckets (x labels give n per bucket): CompressionRate (lower is better; Repeat's
    1.0 and the set's overall rate as lines) and Accuracy (the set's overall accuracy as a line)."""
    buckets = metrics["by_length"]
    labels = [f"{b['bucket']}\n(n={b['n']})" for b in buckets]
    fig = figure((9.5, 4.2))
    left, right = fig.subplots(1, 2)
    rates = [_value(b["compression_rate"]) for b in buckets]
    _bars(left, labels, rates, "tab:blue")
    left.axhline(1.0, color="grey", linestyle="--", linewidth=1, label="Repeat (1.0)")
    if metrics.get("compression_rate") is not None:
        overall = metrics["compression_rate"]
        left.axhline(overall, color="tab:blue", linestyle=":", linewidth=1.2, label=f"whole set ({overall:.2f})")
    top = max([1.0, *(r for r in rates if not math.isnan(r))])
    left.set(title="CompressionRate (lower is better)", xlabel="sequence length (elements)", ylim=(0, 1.18 * top))
    left.legend(loc="upper right", fontsize=8, framealpha=0.8)
    accuracies = [_value(b["accuracy"]) for b in buckets]
    _bars(right, labels, accuracies, "tab:green")
    if metrics.get("accuracy") is not None:
        overall = metrics["accuracy"]
        right.axhline(overall, color="tab:green", linestyle=":", linewidth=1.2, label=f"whole set ({overall:.2f})")
        right.legend(loc="upper right", fontsize=8, framealpha=0.8)
    right.set(title="Accuracy (share of sequences reproduced)", xlabel="sequence length (elements)", ylim=(0, 1.18))
    heading(fig, "KT: CompressionRate and Accuracy by sequence length", caption_text)
    return fig


def prefix_figure(rows: Sequence[Mapping[str, Any]], caption_text: str) -> Any:
    """The longest correct prefix of each sequence's kept program, stacked by whether the program reproduces the
    whole sequence; the mean as a line."""
    fig = figure((6.5, 4.2))
    axis = fig.subplots()
    correct = [r["correct_prefix"] for r in rows if r.get("correct")]
    other = [r["correct_prefix"] for r in rows if not r.get("correct")]
    top = max([1, *correct, *other])
    bins = [top * i / 32 for i in range(33)]
    axis.hist(
        [other, correct],
        bins=bins,
        stacked=True,
        color=["tab:red", "tab:green"],
        alpha=0.85,
        label=[f"wrong or no program ({len(other)})", f"correct program ({len(correct)})"],
    )
    if rows:
        mean = sum(r["correct_prefix"] for r in rows) / len(rows)
        axis.axvline(mean, color="black", linestyle=":", linewidth=1.2, label=f"mean ({mean:.1f})")
    axis.set(xlabel="longest correct prefix (elements)", ylabel="sequences")
    axis.legend(loc="upper right", fontsize=8, framealpha=0.8)
    heading(fig, "KT: longest correct prefix per sequence", caption_text)
    return fig


def write_plots(
    rows: Sequence[Mapping[str, Any]],
    metrics: Mapping[str, Any],
    output: Path,
    caption_text: str,
    names: Sequence[str],
) -> list[Path]:
    """The length plot and the prefix plot as `names[0]` and `names[1]` under `output`."""
    return [
        save(length_figure(metrics, caption_text), output / names[0]),
        save(prefix_figure(rows, caption_text), output / names[1]),
    ]


__all__ = ["caption", "length_figure", "prefix_figure", "write_plots"]
