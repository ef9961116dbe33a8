"""One supervised fine-tuning run (the body every SFT recipe shares), in open-r1's shape.

Prepare the data (chats to prompt/completion, optional sampling, rows over `max_length` tokens dropped; evaluation
rows during training from the data's test split or held out of the training rows, as `eval_strategy` asks), load the
model (LoRA/QLoRA from TRL's ModelConfig keys), train with TRL's SFTTrainer resuming from the last checkpoint in
`output_dir`, then save the adapter (or model), tokenizer, generation config with the EOS token, train metrics,
trainer state and a model card.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from datasets import Dataset
from trl import ModelConfig, SFTTrainer, get_peft_config

from kt_train.configs import DataArguments, SFTConfig
from kt_train.training.data import (
    drop_longer_than,
    evaluates,
    hold_out,
    repeated_epochs,
    rows_a_step,
    rows_for_steps,
    take_samples,
    to_prompt_completion,
)
from kt_train.training.lifecycle import TrainingRun, finished_run, run_config, start_run, train_and_finish
from kt_train.training.model import get_training_model, get_training_tokenizer
from kt_train.training.run_settings import run_settings

logger = logging.getLogger(__name__)


def _filtered(
    dataset: Dataset, data_args: DataArguments, training_args: SFTConfig, tokenizer: Any
) -> tuple[Dataset, int]:
    """Prompt/completion rows without those over `max_length` (when `drop_longer`); also the rows dropped."""
    dataset = to_prompt_completion(dataset)
    dropped = 0
    if data_args.drop_longer and training_args.max_length is not None:
        dataset, dropped = drop_longer_than(dataset, tokenizer, training_args.max_length)
    return dataset, dropped


def _sampled(dataset: Dataset, dropped: int, data_args: DataArguments, training_args: SFTConfig) -> Dataset:
    if dropped:
        logger.info("dropped %d rows over max_length=%d tokens", dropped, training_args.max_length)
    dataset = take_samples(dataset, data_args.max_train_samples, training_args.seed)
    if len(dataset) == 0:
        raise ValueError(f"no training rows left (max_length={training_args.max_length}, drop_longer=True)")
    return dataset


def prepare_dataset(
    dataset: Dataset, data_args: DataArguments, training_args: SFTConfig, tokenizer: Any
) -> tuple[Dataset, int]:
    """Prompt/completion rows, length-filtered, then sampled as the data arguments say; also the rows dropped."""
    dataset, dropped = _filtered(dataset, data_args, training_args, tokenizer)
    return _sampled(dataset, dropped, data_args, training_args), dropped


@dataclass
class PreparedRows:
    """The rows a run trains on, those it evaluates on during training (None: no evaluation), the rows dropped."""

    train: Dataset
    eval: Dataset | None
    dropped: int


def prepare_datasets(
    dataset: Dataset, eval_dataset: Dataset | None, data_args: DataArguments, training_args: SFTConfig, tokenizer: Any
) -> PreparedRows:
    """`prepare_dataset`, and when the run evaluates during training its evaluation rows (prompt/completion, the same
    length filter): `eval_dataset` (the data's `dataset_test_split`), else `eval_split_size` rows held out of the
    training rows with the seed, before `max_train_samples` draws from the rest; `max_eval_samples` of them."""
    if not evaluates(training_args):
        if data_args.eval_split_size is not None:
            logger.info("eval_strategy is no: eval_split_size is not used, every row trains")
        train, dropped = prepare_dataset(dataset, data_args, training_args, tokenizer)
        return PreparedRows(train, None, dropped)
    rows, dropped = _filtered(dataset, data_args, training_args, tokenizer)
    if eval_dataset is not None:
        eval_rows, _ = _filtered(eval_dataset, data_args, training_args, tokenizer)
    elif data_args.eval_split_size is not None:
        rows, eval_rows = hold_out(rows, data_args.eval_split_size, training_args.seed)
    else:
        raise ValueError(
            f"eval_strategy {training_args.eval_strategy.value} needs evaluation rows: a "
            f"{data_args.dataset_test_split!r} split in the data (dataset_test_split), or eval_split_size to hold "
            "rows out of the training rows"
        )
    eval_rows = take_samples(eval_rows, data_args.max_eval_samples, training_args.seed)
    if len(eval_rows) == 0:
        raise ValueError(f"no evaluation rows left (max_length={training_args.max_length})")
    return PreparedRows(_sampled(rows, dropped, data_args, training_args), eval_rows, dropped)


SFTRun = TrainingRun  # the name the SFT recipes and tests know


def run_sft(
    dataset: Dataset,
    data_args: DataArguments,
    training_args: SFTConfig,
    model_args: ModelConfig,
    *,
    dataset_name: str,
    tags: Sequence[str] = (),
    eval_dataset: Dataset | None = None,
    arrange_train: Callable[[Dataset], Dataset] | None = None,
) -> SFTRun:
    """Train on `dataset` into `training_args.output_dir` (resuming there only a run with the same settings; a
    finished one is returned as it is), evaluating on `eval_dataset` (the data's test split) or on rows held out
    (`eval_split_size`) when `eval_strategy` says so (`prepare_datasets`). `arrange_train` turns the prepared
    training rows into the rows trained on (e.g. a curriculum put first, `data.ordered_stream`)."""
    tokenizer = get_training_tokenizer(model_args, training_args)
    rows = prepare_datasets(dataset, eval_dataset, data_args, training_args, tokenizer)
    train_dataset = rows.train if arrange_train is None else arrange_train(rows.train)
    step_rows = rows_a_step(training_args)
    if (epochs := repeated_epochs(len(train_dataset), training_args.max_steps, step_rows)) is not None:
        logger.warning(
            "max_steps=%d reads %d rows but %d are left after the length filter and the hold-out: %.3f epochs, rows "
            "repeat",
            training_args.max_steps,
            rows_for_steps(training_args.max_steps, step_rows),
            len(train_dataset),
            epochs,
        )
    world_size = training_args.world_size
    settings = run_settings(data_args, training_args, model_args, dataset=train_dataset, world_size=world_size)
    start = start_run(training_args, settings)
    if start.finished:
        return finished_run(training_args)
    trainer = SFTTrainer(
        model=get_training_model(model_args, training_args),
        args=training_args,
        train_dataset=train_dataset,
        eval_dataset=rows.eval,
        processing_class=tokenizer,
        peft_config=get_peft_config(model_args),
    )
    data_metrics = {"train_samples": len(train_dataset), "train_rows_over_max_length": rows.dropped}
    if rows.eval is not None:
        data_metrics["eval_samples"] = len(rows.eval)
    return train_and_finish(
        trainer,
        tokenizer,
        training_args,
        start.checkpoint,
        data_metrics,
        dataset_name=dataset_name,
        tags=tags,
        run_config=run_config(data_args, model_args),
    )


__all__ = ["PreparedRows", "SFTRun", "evaluates", "prepare_dataset", "prepare_datasets", "run_sft"]
