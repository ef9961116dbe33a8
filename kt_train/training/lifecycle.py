"""What every training run does around `trainer.train()`, whatever the trainer (SFT, GRPO).

Before: seed, glibc's malloc told to keep freed memory on CPU, whether the run may start or go on in its output
directory (`run_settings.py`: same settings, not finished), the W&B environment (the recorded run id, so a resumed run
logs to the same W&B run), the checkpoint to resume from. After: train metrics and trainer state, the adapter (or
model) checked to be the trained weights (`saved_weights.py`), tokenizer and generation config ending at EOS, a
model card, and the W&B run ended.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transformers import Trainer, TrainerCallback, set_seed

from kt_train.configs import TrainingConfig
from kt_train.training.checkpoints import CheckpointComplete
from kt_train.training.memory import keep_freed_memory
from kt_train.training.model import check_trainable
from kt_train.training.model_card import record_base_model, write_model_card
from kt_train.training.resume_state import ResumeCounters, train_resumed, whole_run_train_loss
from kt_train.training.run_settings import FINISHED_FILE, RunStart, decide, wandb_run_id
from kt_train.training.saved_weights import (
    RELOAD_MAX_PARAMETERS,
    check_reloads,
    check_reloads_fresh,
    check_saved_weights,
    dtype_name,
    probe_inputs,
    probe_logits,
)
from kt_train.training.wandb_logging import finish_wandb, init_wandb_training

logger = logging.getLogger(__name__)


@dataclass
class TrainingRun:
    """What a run left: its train metrics and the trainer (model with adapter, state; None for a run that had
    finished before, and was not trained again)."""

    metrics: dict[str, Any]
    trainer: Trainer | None


def run_config(script_args: Any, model_args: Any) -> dict[str, Any]:
    """The script and model arguments of a run, as plain values (for its W&B config)."""
    plain = {"script_args": dataclasses.asdict(script_args), "model_args": dataclasses.asdict(model_args)}
    return json.loads(json.dumps(plain, default=str))


class WandbRunConfig(TrainerCallback):
    """Adds a run's script and model arguments to its W&B config once the Trainer's W&B callback has started it."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = dict(config)

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        wandb = sys.modules.get("wandb")  # loaded by the W&B callback when the run reports to W&B
        if state.is_world_process_zero and wandb is not None and wandb.run is not None:
            wandb.config.update(self.config, allow_val_change=True)


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
    training_args.run_name = training_args.run_name or Path(training_args.output_dir).resolve().name
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
    run_config: Mapping[str, Any] | None = None,
) -> TrainingRun:
    """Check that every layer is trainable, train (resuming from `checkpoint`), then `finish_run` with the train
    metrics and the data figures. `run_config` (the script and model arguments) goes into the W&B run's config
    beside the training arguments the Trainer logs."""
    check_trainable(trainer.model)
    config = {"dataset_name": dataset_name, **data_metrics, **(run_config or {})}
    trainer.add_callback(WandbRunConfig(config))
    trainer.add_callback(ResumeCounters(trainer, checkpoint))  # before CheckpointComplete: saved inside the checkpoint
    trainer.add_callback(CheckpointComplete())
    result = train_resumed(trainer, checkpoint)
    metrics = {**result.metrics, **data_metrics}
    if (train_loss := whole_run_train_loss(trainer.state.log_history)) is not None:
        metrics["train_loss"] = train_loss  # the whole run's, not only the steps since the last start
        for entry in trainer.state.log_history:
            if "train_loss" in entry:
                entry["train_loss"] = train_loss
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
    """Log the metrics (with the world size), save the state and the outputs, then the metrics (`train_results.json`
    last: a run killed before it is not finished, and its rerun resumes from the last checkpoint), end the W&B run."""
    metrics = {**train_metrics, "world_size": training_args.world_size}
    trainer.log_metrics("train", metrics)
    trainer.save_state()
    save_outputs(trainer, tokenizer, training_args, dataset_name=dataset_name, tags=tags, metrics=metrics)
    trainer.save_metrics("train", metrics)
    finish_wandb()
    return TrainingRun(metrics, trainer)


def save_outputs(
    trainer: Trainer,
    tokenizer: Any,
    training_args: TrainingConfig,
    *,
    dataset_name: str,
    tags: Sequence[str],
    metrics: Mapping[str, Any] | None = None,
) -> None:
    """Adapter (or full model) naming its base by hub id where it has one, tokenizer, generation config ending at
    EOS, model card (`model_card.py`)."""
    output_dir = training_args.output_dir
    trainer.model.generation_config.eos_token_id = tokenizer.eos_token_id
    trainer.save_model(output_dir)
    quantized = getattr(trainer.model, "is_loaded_in_4bit", False)
    adapter = hasattr(trainer.model, "peft_config")
    local_base = getattr(trainer.model.config, "_name_or_path", None)
    reload_base = local_base if adapter else None  # the saved weights reload onto it
    if trainer.is_deepspeed_enabled and not quantized:  # every rank: the probe's forward is collective
        inputs = probe_inputs(tokenizer)
        expected = probe_logits(trainer.model, inputs)
    if trainer.accelerator.is_main_process:
        check_saved_weights(Path(output_dir))
        if trainer.is_deepspeed_enabled and not quantized:
            device = str(trainer.accelerator.device)
            check_reloads_fresh(expected, inputs, Path(output_dir), reload_base, dtype_name(trainer.model), device)
        elif not quantized and trainer.model.num_parameters() <= RELOAD_MAX_PARAMETERS:
            check_reloads(trainer.model, tokenizer, Path(output_dir), reload_base)
        trainer.model.generation_config.save_pretrained(output_dir)
        base = record_base_model(output_dir, local_base)
        write_model_card(
            output_dir,
            base=base,
            local_base=local_base,
            adapter=adapter,
            dataset_name=dataset_name,
            tags=tags,
            metrics=metrics or {},
            trainer_name=getattr(trainer, "_name", type(trainer).__name__),
            hub_model_id=training_args.hub_model_id,
        )
        logger.info("saved the %s (base %s) to %s", "adapter" if adapter else "model", base, output_dir)


__all__ = [
    "TrainingRun",
    "finish_run",
    "finished_run",
    "run_config",
    "save_outputs",
    "start_run",
    "train_and_finish",
]
