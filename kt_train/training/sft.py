"""One supervised fine-tuning run (the body every SFT recipe shares), in open-r1's shape.

Prepare the data (chats to prompt/completion, optional sampling, rows over `max_length` tokens dropped), load the
model (LoRA/QLoRA from TRL's ModelConfig keys), train with TRL's SFTTrainer resuming from the last checkpoint in
`output_dir`, then save the adapter (or model), tokenizer, generation config with the EOS token, train metrics,
trainer state and a model card.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from datasets import Dataset
from trl import ModelConfig, SFTTrainer, get_peft_config

from kt_train.configs import DataArguments, SFTConfig
from kt_train.training.data import drop_longer_than, take_samples, to_prompt_completion
from kt_train.training.lifecycle import TrainingRun, finished_run, run_config, start_run, train_and_finish
from kt_train.training.model import get_training_model, get_training_tokenizer
from kt_train.training.run_settings import run_settings

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


SFTRun = TrainingRun  # the name the SFT recipes and tests know


def run_sft(
    dataset: Dataset,
    data_args: DataArguments,
    training_args: SFTConfig,
    model_args: ModelConfig,
    *,
    dataset_name: str,
    tags: Sequence[str] = (),
) -> SFTRun:
    """Train on `dataset` into `training_args.output_dir` (resuming there only a run with the same settings; a
    finished one is returned as it is)."""
    tokenizer = get_training_tokenizer(model_args, training_args)
    train_dataset, dropped = prepare_dataset(dataset, data_args, training_args, tokenizer)
    world_size = training_args.world_size
    settings = run_settings(data_args, training_args, model_args, dataset=train_dataset, world_size=world_size)
    start = start_run(training_args, settings)
    if start.finished:
        return finished_run(training_args)
    trainer = SFTTrainer(
        model=get_training_model(model_args, training_args),
        args=training_args,
        train_dataset=train_dataset,
        processing_class=tokenizer,
        peft_config=get_peft_config(model_args),
    )
    data_metrics = {"train_samples": len(train_dataset), "train_rows_over_max_length": dropped}
    return train_and_finish(trainer, tokenizer, training_args, start.checkpoint, data_metrics,
                            dataset_name=dataset_name, tags=tags,
                            run_config=run_config(data_args, model_args))  # fmt: skip


__all__ = ["SFTRun", "prepare_dataset", "run_sft"]
