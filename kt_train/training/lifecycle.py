"""What every training run does around `trainer.train()`, whatever the trainer (SFT, GRPO).

Before: seed, glibc's malloc told to keep freed memory on CPU, the W&B environment, the checkpoint to resume from.
After: train metrics and trainer state, the adapter (or model), tokenizer and generation config ending at EOS, a model
card, and the W&B run ended.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from transformers import Trainer, set_seed
from transformers.trainer_utils import get_last_checkpoint

from kt_train.configs import TrainingConfig
from kt_train.training.memory import keep_freed_memory
from kt_train.training.model import check_trainable
from kt_train.training.wandb_logging import finish_wandb, init_wandb_training

logger = logging.getLogger(__name__)


@dataclass
class TrainingRun:
    """What a run left: its train metrics and the trainer (model with adapter, state)."""

    metrics: dict[str, Any]
    trainer: Trainer


def last_checkpoint(output_dir: str) -> str | None:
    """The newest checkpoint-N directory in `output_dir`, if any."""
    return get_last_checkpoint(output_dir) if os.path.isdir(output_dir) else None


def start_run(training_args: TrainingConfig) -> str | None:
    """Seed, CPU memory setting and W&B environment; return the checkpoint to resume from (None: start afresh)."""
    set_seed(training_args.seed)
    if training_args.use_cpu:
        keep_freed_memory()
    init_wandb_training(training_args)
    checkpoint = training_args.resume_from_checkpoint or last_checkpoint(training_args.output_dir)
    if checkpoint is not None:
        logger.info("resuming from %s", checkpoint)
    return checkpoint


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
    "last_checkpoint",
    "save_outputs",
    "start_run",
    "train_and_finish",
]
