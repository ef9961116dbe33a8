"""A short markdown report of one or more training runs in an output folder (train metrics, W&B runs, training
curves)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from kt_train.training.curves import CURVES_FILE, training_curves_plot

REPORT_FILE = "report.md"


def wandb_runs(run_dir: Path) -> list[Path]:
    """The W&B run folders (offline or online) a training run left in `run_dir`/wandb."""
    return sorted(p for p in (run_dir / "wandb").glob("*run-*") if p.is_dir())


def _json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def runs_table(output_dir: Path, names: Sequence[str]) -> list[str]:
    """One markdown row per run `output_dir/<name>` with its train metrics."""
    lines = [
        "| run | steps | final train loss | rows | rows over max_length | runtime s | W&B run |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for name in names:
        run_dir = output_dir / name
        metrics, state = _json(run_dir / "train_results.json"), _json(run_dir / "trainer_state.json")
        losses = [entry["loss"] for entry in state.get("log_history", []) if "loss" in entry]
        runs = wandb_runs(run_dir)
        lines.append(
            f"| {name} | {state.get('global_step', '?')} | {losses[-1] if losses else float('nan'):.4f} | "
            f"{metrics.get('train_samples', '?')} | {metrics.get('train_rows_over_max_length', '?')} | "
            f"{metrics.get('train_runtime', float('nan')):.1f} | {runs[-1].relative_to(output_dir) if runs else '-'} |"
        )
    return lines


def curves_section(output_dir: Path, names: Sequence[str]) -> list[str]:
    """Write `output_dir`/training_curves.png; the report lines linking it (none when no run logged a loss)."""
    if training_curves_plot(output_dir, names, output_dir / CURVES_FILE) is None:
        return []
    return [
        f"![training curves]({CURVES_FILE})",
        "",
        "Training loss and held-out eval_loss per step; the same curves are in each run's W&B run (the Trainer logs "
        "loss and eval_loss there).",
        "",
    ]


def write_report(
    output_dir: Path | str, names: Sequence[str], title: str, appendix: Path | None = None, lead: str | None = None
) -> Path:
    """`output_dir`/report.md: `lead` (e.g. whether training helped, in words), the runs table, the training curves
    (`training_curves.png`, when a run logged any), then `appendix` (e.g. an evaluation report) if it exists."""
    output = Path(output_dir)
    lines = [f"# {title}", "", *([lead, ""] if lead else []), "## Training runs", "", *runs_table(output, names), ""]
    lines += curves_section(output, names)
    if appendix is not None and appendix.is_file():
        lines += [appendix.read_text(encoding="utf-8").replace("# ", "## ", 1)]
    path = output / REPORT_FILE
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
