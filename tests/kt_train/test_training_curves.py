"""Training curves from trainer_state.json: a PNG with a panel per run that logged, none without, and the link in the
training report."""

from __future__ import annotations

import json
from pathlib import Path

from kt_train.training.curves import log_history, series, training_curves_plot
from kt_train.training.report import write_report

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _state(run_dir: Path, log: list[dict]) -> None:
    run_dir.mkdir(parents=True)
    state = {"global_step": max((e["step"] for e in log), default=0), "log_history": log}
    (run_dir / "trainer_state.json").write_text(json.dumps(state), encoding="utf-8")


LOG = [
    {"loss": 2.5, "learning_rate": 1e-4, "epoch": 0.5, "step": 5},
    {"eval_loss": 2.4, "eval_runtime": 1.0, "epoch": 0.5, "step": 5},
    {"loss": 1.75, "learning_rate": 5e-5, "epoch": 1.0, "step": 10},
    {"eval_loss": 2.0, "eval_runtime": 1.0, "epoch": 1.0, "step": 10},
    {"train_loss": 2.1, "train_runtime": 9.0, "epoch": 1.0, "step": 10},  # the final summary: not a curve point
]


def test_training_curves_plot_draws_loss_and_eval_loss_per_run(tmp_path: Path) -> None:
    _state(tmp_path / "lzw", LOG)
    _state(tmp_path / "rle", LOG[:1])
    assert series(log_history(tmp_path / "lzw"), "loss") == ([5, 10], [2.5, 1.75])
    assert series(log_history(tmp_path / "lzw"), "eval_loss") == ([5, 10], [2.4, 2.0])
    path = training_curves_plot(tmp_path, ["lzw", "rle", "missing"], tmp_path / "curves.png")
    assert path == tmp_path / "curves.png"
    assert path.read_bytes().startswith(PNG_SIGNATURE) and path.stat().st_size > 5_000


def test_training_curves_plot_returns_none_without_a_log_history(tmp_path: Path) -> None:
    _state(tmp_path / "lzw", [])
    assert training_curves_plot(tmp_path, ["lzw", "missing"], tmp_path / "curves.png") is None
    assert not (tmp_path / "curves.png").exists()


def test_training_report_links_the_curves_after_the_runs_table(tmp_path: Path) -> None:
    _state(tmp_path / "lzw", LOG)
    report = write_report(tmp_path, ["lzw"], "RTCE SFT").read_text(encoding="utf-8")
    assert (tmp_path / "training_curves.png").is_file()
    lines = report.splitlines()
    link = lines.index("![training curves](training_curves.png)")
    assert lines[link - 2].startswith("| lzw | 10 | 1.7500 |")  # the runs table's last row, then a blank line
    assert "W&B run" in lines[link + 2]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "training curves" not in write_report(empty, ["lzw"], "nothing").read_text(encoding="utf-8")
