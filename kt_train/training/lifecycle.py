"""What every training run does around `trainer.train()`, whatever the trainer (SFT, GRPO).

Before: seed, glibc's malloc told to keep freed memory on CPU, whether the run may start or go on in its output
directory (`run_settings.py`: same settings, not finished), the W&B environment (the recorded run id, so a resumed run
logs to the same W&B run), the checkpoint to resume from. After: train metrics and trainer state, the adapter (or
model), tokenizer and generation config ending at EOS, a model card, and the W&B run ended.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transformers import Trainer, set_seed

from kt_train.configs import TrainingConfig
from kt_train.training.memory import keep_freed_memory
from kt_train.training.model import check_trainable
from kt_train.training.run_settings import FINISHED_FILE, RunStart, decide, wandb_run_id
from kt_train.training.wandb_logging import finish_wandb, init_wandb_training

logger = logging.getLogger(__name__)


@dataclass
class TrainingRun:
    """What a run left: its train metrics and the trainer (model with adapter, state; None for a run that had
    finished before, and was not trained again)."""

    metrics: dict[str, Any]
    trainer: Trainer | None


def start_run(training_args: TrainingConfig, settings: Mapping[str, Any]) -> RunStart:
    """Seed and CPU memory setting; whether the run with `settings` (`run_settings.run_settings`) may start or go on
    in its output directory (raises SettingsMismatch if not), and from which checkpoint; the W&B environment."""
    set_seed(training_args.seed)
    if training_args.use_cpu:
        keep_freed_memory()
    with training_args.main_process_first(local=False, desc="checking the output directory"):
        start = decide(
            training_args.output_dir, settings, training_args.overwrite_output_dir, training_args.process_index == 0
        )
    if start.finished:
        logger.info("%s holds the finished run with these settings: nothing to train", training_args.output_dir)
        return start
    if training_args.resume_from_checkpoint:
        start = RunStart(str(training_args.resume_from_checkpoint))
    init_wandb_training(training_args, wandb_run_id(training_args.output_dir))
    if start.checkpoint is not None:
        logger.info("resuming from %s", start.checkpoint)
    return start


def finished_run(training_args: TrainingConfig) -> TrainingRun:
    """The run that had finished in `output_dir` before: its recorded train metrics, no trainer."""
    path = Path(training_args.output_dir) / FINISHED_FILE
    return TrainingRun(json.loads(path.read_text(encoding="utf-8")), None)


def train_and_finish(
    trainer: Trainer,
    tokenizer: Any,
    training_args: TrainingConfig,
    checkpoint: str | None,
    data_metrics: Mapping[str, Any],
    *,
    dataset_name: str,
    tags: Sequence[str],
) -> TrainingRun:
    """Check that every layer is trainable, train (resuming from `checkpoint`), then `finish_run` with the train
    metrics and the data figures."""
    check_trainable(trainer.model)
    result = trainer.train(resume_from_checkpoint=checkpoint)
    metrics = {**result.metrics, **data_metrics}
    return finish_run(trainer, tokenizer, training_args, metrics, dataset_name=dataset_name, tags=tags)


def finish_run(
    trainer: Trainer,
    tokenizer: Any,
    training_args: TrainingConfig,
    train_metrics: Mapping[str, Any],
    *,
    dataset_name: str,
    tags: Sequence[str],
) -> TrainingRun:
    """Log and save the metrics (with the world size) and state, save the outputs, end the W&B run."""
    metrics = {**train_metrics, "world_size": training_args.world_size}
    trainer.log_metrics("train", metrics)
    trainer.save_metrics("train", metrics)
    trainer.save_state()
    save_outputs(trainer, tokenizer, training_args, dataset_name=dataset_name, tags=tags)
    finish_wandb()
    return TrainingRun(metrics, trainer)


def save_outputs(
    trainer: Trainer, tokenizer: Any, training_args: TrainingConfig, *, dataset_name: str, tags: Sequence[str]
) -> None:
    """Adapter (or full model) and tokenizer, generation config ending at EOS, model card."""
    output_dir = training_args.output_dir
    trainer.model.generation_config.eos_token_id = tokenizer.eos_token_id
    trainer.save_model(output_dir)
    if trainer.accelerator.is_main_process:
        trainer.model.generation_config.save_pretrained(output_dir)
        trainer.create_model_card(dataset_name=dataset_name, tags=["kt-train", *tags])
        kind = "adapter" if hasattr(trainer.model, "peft_config") else "model"
        base = getattr(trainer.model.config, "_name_or_path", "?")
        logger.info("saved the %s (base %s) to %s", kind, base, output_dir)


__all__ = [
    "TrainingRun",
    "finish_run",
    "finished_run",
    "save_outputs",
    "start_run",
    "train_and_finish",
]
