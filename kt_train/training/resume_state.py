"""What the Trainer does not restore on resume, made to (issue 38; measured with `resume_probe`).

- TRL's running token count (`num_tokens` in the SFT log): an attribute of the trainer, not of its state, so a resumed
  run counted from 0 again. `ResumeCounters` writes it into each checkpoint (`COUNTERS_FILE`) and sets it back when a
  run resumes from that checkpoint.
- `train_loss` in `train_results.json`: the Trainer averages the loss of the steps trained since its last start only.
  `whole_run_train_loss` averages the logged losses of every step of the run instead, in one order, so an
  uninterrupted run and a resumed one report the same bits.
- A run killed after its last checkpoint and before its outputs: resumed from that checkpoint, transformers 5.19 skips
  the batches the epoch has trained and trains one more step when max_steps ends inside an epoch (it looks for the end
  only after a step). `train_resumed` gives such a run no batches, so it finishes as the uninterrupted run did.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from transformers import TrainerCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

COUNTERS_FILE = "kt_trainer_counters.json"
COUNTERS = ("_total_train_tokens",)  # TRL trainers' running counts that their logs show


class ResumeCounters(TrainerCallback):
    """Saves the trainer's running counters with each checkpoint; restores them from `resume_from` at the start."""

    def __init__(self, trainer: Any, resume_from: str | None) -> None:
        self.trainer = trainer
        self.resume_from = resume_from

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        path = Path(self.resume_from) / COUNTERS_FILE if self.resume_from else None
        if path is not None and path.is_file():
            for name, value in json.loads(path.read_text(encoding="utf-8")).items():
                if name in COUNTERS and hasattr(self.trainer, name):
                    setattr(self.trainer, name, value)

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        folder = Path(args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
        if state.is_world_process_zero and folder.is_dir():
            counters = {name: getattr(self.trainer, name) for name in COUNTERS if hasattr(self.trainer, name)}
            (folder / COUNTERS_FILE).write_text(json.dumps(counters), encoding="utf-8")


def train_resumed(trainer: Any, checkpoint: str | None) -> Any:
    """`trainer.train(resume_from_checkpoint=checkpoint)`, with no step trained past `max_steps` (see the module)."""
    state = Path(checkpoint) / "trainer_state.json" if checkpoint else None
    done = state is not None and 0 < trainer.args.max_steps <= json.loads(state.read_text())["global_step"]
    if not done:
        return trainer.train(resume_from_checkpoint=checkpoint)
    trainer.get_batch_samples = lambda *args, **kwargs: ([], None)  # the epoch's loop runs out without a step
    try:
        return trainer.train(resume_from_checkpoint=checkpoint)
    finally:
        del trainer.get_batch_samples


def whole_run_train_loss(log_history: Sequence[dict[str, Any]]) -> float | None:
    """The mean loss per optimizer step over the run's logged steps (each logged loss is the mean of the steps since
    the previous log); None when no loss was logged."""
    total, steps, last = 0.0, 0, 0
    for entry in log_history:
        if "loss" in entry and "step" in entry and math.isfinite(entry["loss"]):
            window = entry["step"] - last
            total += entry["loss"] * window
            steps += window
            last = entry["step"]
    return total / steps if steps else None


__all__ = ["COUNTERS_FILE", "ResumeCounters", "train_resumed", "whole_run_train_loss"]
