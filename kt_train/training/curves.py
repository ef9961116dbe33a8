"""Training curves of the runs in an output folder: training loss and held-out eval_loss against step, read from each
run's `trainer_state.json` (the same values the Trainer logs to W&B), one panel per run, as a PNG."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

CURVES_FILE = "training_curves.png"
DPI = 120


def log_history(run_dir: Path) -> list[dict[str, Any]]:
    """The `log_history` of `run_dir/trainer_state.json` (empty when the file or the key is missing)."""
    path = run_dir / "trainer_state.json"
    if not path.is_file():
        return []
    return list(json.loads(path.read_text(encoding="utf-8")).get("log_history", []))


def series(history: Sequence[Mapping[str, Any]], key: str) -> tuple[list[int], list[float]]:
    """(steps, values) of the entries that have both `step` and `key`."""
    points = [(int(e["step"]), float(e[key])) for e in history if key in e and "step" in e]
    return [s for s, _ in points], [v for _, v in points]


def _draw_run(axis: Any, name: str, history: Sequence[Mapping[str, Any]]) -> None:
    for key, label, style in (("loss", "training loss", "o-"), ("eval_loss", "held-out eval_loss", "s--")):
        steps, values = series(history, key)
        if steps:
            axis.plot(steps, values, style, markersize=3, label=label)
    last = max((int(e["step"]) for e in history if "step" in e), default=0)
    axis.set(title=f"{name}: {last} steps", xlabel="step", ylabel="loss")
    axis.grid(alpha=0.3)
    if axis.get_lines():
        axis.legend(fontsize=8)


def training_curves_plot(output_dir: Path, names: Sequence[str], path: Path) -> Path | None:
    """Training loss and eval_loss against step, a panel per run `output_dir/<name>` that has a log history, written
    to `path`; None (and no file) when no run has one."""
    histories = {name: log_history(Path(output_dir) / name) for name in names}
    histories = {name: history for name, history in histories.items() if history}
    if not histories:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(4.2 * len(histories), 3.6), layout="constrained")
    axes = fig.subplots(1, len(histories), squeeze=False)[0]
    for axis, (name, history) in zip(axes, histories.items()):
        _draw_run(axis, name, history)
    fig.suptitle(f"Training curves ({len(histories)} run{'s' if len(histories) > 1 else ''})", fontsize=10)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return path


__all__ = ["CURVES_FILE", "log_history", "series", "training_curves_plot"]
