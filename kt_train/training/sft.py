"""One supervised fine-tuning run (the body every SFT recipe shares), in open-r1's shape.

Prepare the data (chats to prompt/completion, optional sampling, rows over `max_length` tokens dropped), load the
model (LoRA/QLoRA from TRL's ModelConfig keys), train with TRL's SFTTrainer resuming from the last checkpoint in
`output_dir`, then save the adapter (or model), tokenizer, generation config with the EOS token, train metrics,
trainer state and a model card.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from datasets import Dataset
from transformers import set_seed
from transformers.trainer_utils import get_last_checkpoint
from trl import ModelConfig, SFTTrainer, get_peft_config

from kt_train.configs import DataArguments, SFTConfig
from kt_train.training.data import drop_longer_than, take_samples, to_prompt_completion
from kt_train.training.memory import keep_freed_memory
from kt_train.training.model import check_trainable, get_training_model, get_training_tokenizer
from kt_train.training.wandb_logging import init_wandb_training

logger = logging.getLogger(__name__)


def prepare_dataset(
    dataset: Dataset, data_args: DataArguments, training_args: SFTConfig, tokenizer: Any
) -> tuple[Dataset, int]:
    """Prompt/completion rows, length-filtered, then sampled as the data arguments say; also the rows dropped."""
    dataset = to_prompt_completion(dataset)
    dropped = 0
    if data_args.drop_longer and training_args.max_length is not None:
        dataset, dropped = drop_longer_than(dataset, tokenizer, training_args.max_length)
        if dropped:
            logger.info("dropped %d rows over max_length=%d tokens", dropped, training_args.max_length)
    dataset = take_samples(dataset, data_args.max_train_samples, training_args.seed)
    if len(dataset) == 0:
        raise ValueError(f"no training rows left (max_length={training_args.max_length}, drop_longer=True)")
    return dataset, dropped


def last_checkpoint(output_dir: str) -> str | None:
    """The newest checkpoint-N directory in `output_dir`, if any."""
    return get_last_checkpoint(output_dir) if os.path.isdir(output_dir) else None


@dataclass
class SFTRun:
    """What a run left: its train metrics and the trainer (model with adapter, state)."""

    metrics: dict[str, Any]
    trainer: SFTTrainer


def run_sft(
    dataset: Dataset,
    data_args: DataArguments,
    training_args: SFTConfig,
    model_args: ModelConfig,
    *,
    dataset_name: str,
    tags: Sequence[str] = (),
) -> SFTRun:
    """Train on `dataset` into `training_args.output_dir`."""
    set_seed(training_args.seed)
    if training_args.use_cpu:
        keep_freed_memory()
    init_wandb_training(training_args)
    tokenizer = get_training_tokenizer(model_args, training_args)
    train_dataset, dropped = prepare_dataset(dataset, data_args, training_args, tokenizer)
    checkpoint = training_args.resume_from_checkpoint or last_checkpoint(training_args.output_dir)
    if checkpoint is not None:
        logger.info("resuming from %s", checkpoint)
    trainer = SFTTrainer(
        model=get_training_model(model_args, training_args),
        args=training_args,
        train_dataset=train_dataset,
        processing_class=tokenizer,
        peft_config=get_peft_config(model_args),
    )
    check_trainable(trainer.model)
    result = trainer.train(resume_from_checkpoint=checkpoint)
    metrics = {
        **result.metrics,
        "train_samples": len(train_dataset),
        "train_rows_over_max_length": dropped,
        "world_size": training_args.world_size,
    }
    trainer.log_metrics("train", metrics)
    trainer.save_metrics("train", metrics)
    trainer.save_state()
    save_outputs(trainer, tokenizer, training_args, dataset_name=dataset_name, tags=tags)
    _finish_wandb()
    return SFTRun(metrics, trainer)


def save_outputs(
    trainer: SFTTrainer, tokenizer: Any, training_args: SFTConfig, *, dataset_name: str, tags: Sequence[str]
) -> None:
    """Adapter (or full model) and tokenizer, generation config ending at EOS, model card."""
    output_dir = training_args.output_dir
    trainer.model.generation_config.eos_token_id = tokenizer.eos_token_id
    trainer.save_model(output_dir)
    if trainer.accelerator.is_main_process:
        trainer.model.generation_config.save_pretrained(output_dir)
        trainer.create_model_card(dataset_name=dataset_name, tags=["kt-train", *tags])
        kind = "adapter" if _is_peft(trainer) else "model"
        logger.info("saved the %s (base %s) to %s", kind, _base(trainer), output_dir)


def _is_peft(trainer: SFTTrainer) -> bool:
    return hasattr(trainer.model, "peft_config")


def _base(trainer: SFTTrainer) -> str:
    return getattr(trainer.model.config, "_name_or_path", "?")


def _finish_wandb() -> None:
    """End the W&B run of this training (the next run in the same process gets its own)."""
    try:
        import wandb
    except ImportError:
        return
    if wandb.run is not None:
        wandb.finish()
    wandb.teardown()  # the next run re-reads WANDB_DIR (the W&B singleton keeps the first run's settings)


__all__ = ["SFTRun", "last_checkpoint", "prepare_dataset", "run_sft", "save_outputs"]
