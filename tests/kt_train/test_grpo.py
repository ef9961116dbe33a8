"""The GRPO body's checks before any compute: reward options, the columns the rewards read, prompt lengths."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from datasets import Dataset

from kt_train.configs import GRPOConfig, GRPOScriptArguments
from kt_train.models import DEFAULT_MODEL, get_tokenizer
from kt_train.training.grpo import prepare_prompts, reward_funcs_for, reward_means
from kt_train.training.launch import launch

from ..recipes.test_recipe_configs import load_recipe


def _rows(n: int = 3) -> Dataset:
    prompts = [[{"role": "user", "content": "word " * (10 * (i + 1))}] for i in range(n)]
    return Dataset.from_dict({"prompt": prompts, "format_pattern": [".*"] * n})


def test_reward_options_from_json_text_and_bad_options() -> None:
    args = GRPOScriptArguments(reward_funcs=["format"], reward_options='{"format": {"failure_reward": -1}}')
    assert args.reward_options == {"format": {"failure_reward": -1}}
    assert reward_funcs_for(args, ["prompt", "format_pattern"])[0].failure_reward == -1.0
    with pytest.raises(ValueError, match="not valid JSON"):
        GRPOScriptArguments(reward_options="{format: 1")
    with pytest.raises(ValueError, match="mappings of options"):
        GRPOScriptArguments(reward_options={"format": 1})
    with pytest.raises(ValueError, match="at least one reward"):
        GRPOScriptArguments(reward_funcs=[])
    with pytest.raises(ValueError, match="not in reward_funcs"):
        reward_funcs_for(GRPOScriptArguments(reward_options={"kt_compression": {}}), ["prompt", "format_pattern"])
    with pytest.raises(ValueError, match="unknown reward 'nope'"):
        reward_funcs_for(GRPOScriptArguments(reward_funcs=["nope"]), ["prompt"])


def test_a_reward_whose_column_is_missing_fails_before_training() -> None:
    args = GRPOScriptArguments(reward_funcs=["format", "kt_compression"])
    with pytest.raises(ValueError, match=r"kt_compression_reward needs the dataset column\(s\) \['sequence'\]"):
        reward_funcs_for(args, ["prompt", "format_pattern"])


def test_prompts_over_the_limit_are_dropped_then_sampled() -> None:
    tokenizer = get_tokenizer(DEFAULT_MODEL)
    training = GRPOConfig(output_dir="unused", report_to=[], seed=1)
    kept, held_out, dropped = prepare_prompts(_rows(3), GRPOScriptArguments(max_prompt_tokens=50), training, tokenizer)
    assert (len(kept), held_out, dropped) == (2, None, 1)
    sampled, _, _ = prepare_prompts(_rows(3), GRPOScriptArguments(max_train_samples=1), training, tokenizer)
    assert len(sampled) == 1
    with pytest.raises(ValueError, match="no prompts left"):
        prepare_prompts(_rows(3), GRPOScriptArguments(max_prompt_tokens=30), training, tokenizer)
    with pytest.raises(ValueError, match="needs a `prompt` column"):
        prepare_prompts(Dataset.from_dict({"text": ["a"]}), GRPOScriptArguments(), training, tokenizer)


def test_held_out_prompts_never_train() -> None:
    """With evaluation during training, `eval_split_size` prompts are held out before the training rows are drawn."""
    tokenizer = get_tokenizer(DEFAULT_MODEL)
    training = GRPOConfig(output_dir="unused", report_to=[], seed=1, eval_strategy="steps", eval_steps=1)
    args = GRPOScriptArguments(eval_split_size=3, max_eval_samples=2, max_train_samples=4)
    train, held_out, _ = prepare_prompts(_rows(10), args, training, tokenizer)
    assert held_out is not None and (len(train), len(held_out)) == (4, 2)
    texts = {json.dumps(p) for p in train["prompt"]}
    assert texts.isdisjoint(json.dumps(p) for p in held_out["prompt"])
    with pytest.raises(ValueError, match="needs held-out prompts: set eval_split_size"):
        prepare_prompts(_rows(10), GRPOScriptArguments(), training, tokenizer)


def test_reward_means_are_the_last_finite_ones() -> None:
    history = [
        {"rewards/a_reward/mean": 0.5, "rewards/b_reward/mean": 0.1},
        {"rewards/a_reward/mean": None, "rewards/b_reward/mean": math.nan, "rewards/b_reward/std": 0.0},
        {"rewards/b_reward/mean": 0.25, "loss": 0.0},
    ]
    assert reward_means(history) == {"a_reward": 0.5, "b_reward": 0.25}


def test_recipe_with_rows_missing_a_reward_column_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _rows(2).save_to_disk(tmp_path / "rows")  # GRPO rows without the `sequence` kt_compression reads
    recipe = load_recipe("grpo_kt")
    config = Path(__file__).resolve().parents[2] / "recipes/smollm2-135m/grpo_kt/config_cpu.yaml"
    argv = ["--config", str(config), "--dataset_name", str(tmp_path / "rows"), "--output_dir", str(tmp_path / "out")]
    assert launch(recipe.main, recipe.SCRIPT_ARGUMENTS, argv, training_config=recipe.TRAINING_CONFIG) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and "needs the dataset column(s) ['sequence']" in errors[0]
    assert not (tmp_path / "out").exists()  # nothing started
