"""One GRPO run with verifiable rewards (the body every GRPO recipe shares), in open-r1's shape.

Prompt rows (a conversational `prompt` plus the columns the rewards read) are length-filtered and sampled as the
data arguments say; every reward checks its columns before any compute. The model is loaded as for SFT (full, LoRA
or QLoRA from TRL's ModelConfig keys; `init_adapter`, e.g. an SFT adapter, merged in first) and trained with TRL's
GRPOTrainer, which generates `num_generations` completions per prompt (vLLM when `use_vllm`, on GPUs; the policy's
own `generate` otherwise, as on CPU), scores them with the rewards and logs `rewards/<name>/mean` and each reward's
verdict shares (with `credit_assignment: step`, its subclass that credits each verified step,
`kt_train.training.step_credit`). The run resumes from the last checkpoint in `output_dir` and saves what an SFT
run saves (`kt_train.training.lifecycle`); the rewards' sandbox pools are stopped at the end, even on failure.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from datasets import Dataset
from trl import GRPOTrainer, ModelConfig, get_peft_config

from kt_train.configs import GRPOConfig, GRPOScriptArguments
from kt_train.rewards import Reward, get_reward_funcs
from kt_train.training.data import drop_longer_than, evaluates, hold_out, take_samples
from kt_train.training.lifecycle import TrainingRun, finished_run, run_config, start_run, train_and_finish
from kt_train.training.model import get_training_model, get_training_tokenizer, merge_adapter
from kt_train.training.report import wandb_runs
from kt_train.training.run_settings import run_settings
from kt_train.training.step_credit import StepCreditGRPOTrainer

logger = logging.getLogger(__name__)


def prepare_prompts(
    dataset: Dataset, script_args: GRPOScriptArguments, training_args: GRPOConfig, tokenizer: Any
) -> tuple[Dataset, Dataset | None, int]:
    """Rows with a `prompt`, those over `max_prompt_tokens` dropped; when the run evaluates during training,
    `eval_split_size` of them held out with the seed (never trained on; `max_eval_samples` of them kept), then the
    training rows sampled. Returns (training rows, held-out rows or None, rows dropped)."""
    if "prompt" not in dataset.column_names:
        raise ValueError(f"GRPO needs a `prompt` column, got {dataset.column_names}")
    dropped = 0
    if script_args.max_prompt_tokens is not None:
        dataset, dropped = drop_longer_than(dataset, tokenizer, script_args.max_prompt_tokens)
        if dropped:
            logger.info("dropped %d prompts over %d tokens", dropped, script_args.max_prompt_tokens)
    held_out = None
    if evaluates(training_args):
        if script_args.eval_split_size is None:
            raise ValueError(
                f"eval_strategy {training_args.eval_strategy.value} needs held-out prompts: set eval_split_size"
            )
        dataset, held_out = hold_out(dataset, script_args.eval_split_size, training_args.seed)
        held_out = take_samples(held_out, script_args.max_eval_samples, training_args.seed)
    dataset = take_samples(dataset, script_args.max_train_samples, training_args.seed)
    if len(dataset) == 0:
        raise ValueError(f"no prompts left (max_prompt_tokens={script_args.max_prompt_tokens})")
    return dataset, held_out, dropped


def reward_funcs_for(script_args: GRPOScriptArguments, column_names: Sequence[str]) -> list[Reward]:
    """The configured rewards, each checked against the dataset's columns (ValueError, one line, if one is missing)."""
    rewards = get_reward_funcs(script_args.reward_funcs, script_args.reward_options)  # type: ignore[arg-type]
    for reward in rewards:
        reward.check_columns(column_names)
    return rewards


def reward_means(log_history: Sequence[dict[str, Any]]) -> dict[str, float]:
    """The last logged mean of every reward (`rewards/<name>/mean`), by reward name; a step where a reward applied to
    no row logs None (NaN), which is skipped."""
    means = {}
    for entry in log_history:
        for key, value in entry.items():
            if key.startswith("rewards/") and key.endswith("/mean") and value is not None and math.isfinite(value):
                means[key.split("/")[1]] = float(value)
    return means


def print_summary(run: TrainingRun, output_dir: str) -> None:
    """Where the adapter and the W&B runs are, and the rewards last logged."""
    means = reward_means(run.trainer.state.log_history)
    print(
        f"saved to {output_dir}; last logged rewards: "
        + (", ".join(f"{name} {value:.3f}" for name, value in sorted(means.items())) or "none")
    )
    runs = wandb_runs(Path(output_dir))
    if runs:
        print(f"W&B runs (sync with `wandb sync DIR` when offline): {', '.join(map(str, runs))}")


def run_grpo(
    dataset: Dataset,
    script_args: GRPOScriptArguments,
    training_args: GRPOConfig,
    model_args: ModelConfig,
    *,
    dataset_name: str,
    tags: Sequence[str] = (),
) -> TrainingRun:
    """Train on the prompts of `dataset` with the configured rewards into `training_args.output_dir`."""
    rewards = reward_funcs_for(script_args, dataset.column_names)
    try:
        tokenizer = get_training_tokenizer(model_args, training_args)
        train_dataset, eval_dataset, dropped = prepare_prompts(dataset, script_args, training_args, tokenizer)
        settings = run_settings(
            script_args, training_args, model_args, dataset=train_dataset, world_size=training_args.world_size
        )
        start = start_run(training_args, settings)
        if start.finished:
            return finished_run(training_args)
        model = get_training_model(model_args, training_args)
        if script_args.init_adapter is not None:
            model = merge_adapter(model, script_args.init_adapter)
        trainer_class: Any = GRPOTrainer
        if script_args.credit_assignment == "step":
            trainer_class = partial(StepCreditGRPOTrainer, positive_only=script_args.step_credit_positive_only)
        trainer = trainer_class(
            model=model,
            reward_funcs=list(rewards),
            args=training_args,
            train_dataset=train_dataset,
            eval_dataset=eval_dataset,
            processing_class=tokenizer,
            peft_config=get_peft_config(model_args),
        )
        data_metrics = {"train_prompts": len(train_dataset), "train_prompts_over_max": dropped}
        data_metrics |= {"eval_prompts": len(eval_dataset)} if eval_dataset is not None else {}
        run = train_and_finish(
            trainer,
            tokenizer,
            training_args,
            start.checkpoint,
            data_metrics,
            dataset_name=dataset_name,
            tags=tags,
            run_config=run_config(script_args, model_args),
        )
        if trainer.accelerator.is_main_process:
            print_summary(run, training_args.output_dir)
        return run
    finally:
        for reward in rewards:
            reward.close()


__all__ = ["prepare_prompts", "print_summary", "reward_funcs_for", "reward_means", "run_grpo"]
