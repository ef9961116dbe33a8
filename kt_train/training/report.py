"""A short markdown report of one or more training runs in an output folder (train metrics, W&B runs)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

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


def write_report(output_dir: Path | str, names: Sequence[str], title: str, appendix: Path | None = None) -> Path:
    """`output_dir`/report.md: the runs table, then `appendix` (e.g. an evaluation report) if it exists."""
    output = Path(output_dir)
    lines = [f"# {title}", "", *runs_table(output, names), ""]
    if appendix is not None and appendix.is_file():
        lines += [appendix.read_text(encoding="utf-8").replace("# ", "## ", 1)]
    path = output / REPORT_FILE
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
