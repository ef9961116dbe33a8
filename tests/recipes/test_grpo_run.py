"""The GRPO recipes train for real on CPU with the embedded model: generation, sandboxed rewards, LoRA updates, W&B
offline logs of the rewards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from dsl.expr.suite import SuiteConfig, build_suite
from dsl.seqcoder import build_kt_corpus
from kt_train.training.launch import launch
from tracegen.benchmark import build_benchmark

from .test_recipe_configs import ROOT, load_recipe

GRPO_QUICK = ["--max_steps", "2", "--num_generations", "4", "--max_completion_length", "24", "--save_strategy", "no"]
GRPO_QUICK += ["--log_completions", "false"]


def grpo_quickly(task: str, data: Path, out: Path, extra: tuple[str, ...] = (), dataset: bool = True) -> list[dict]:
    """GRPO steps of recipes/<task>.py with its CPU config on `data` (or its default data); the log history."""
    recipe = load_recipe(task)
    config = ROOT / f"recipes/smollm2-135m/{task}/config_cpu.yaml"
    data_args = ["--dataset_name", str(data)] if dataset else []
    argv = ["--config", str(config), *data_args, "--output_dir", str(out), *GRPO_QUICK, *extra]
    assert launch(recipe.main, recipe.SCRIPT_ARGUMENTS, argv, training_config=recipe.TRAINING_CONFIG) == 0
    lora_b = [v for k, v in load_file(out / "adapter_model.safetensors").items() if "lora_B" in k]
    assert len(lora_b) == 30 * 7
    return json.loads((out / "trainer_state.json").read_text())["log_history"]


def _logged(history: list[dict], key: str) -> list[float]:
    return [entry[key] for entry in history if key in entry]


@pytest.mark.slow
def test_grpo_kt_trains_and_logs_rewards_to_wandb_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    corpus = build_kt_corpus(tmp_path / "corpus", num_pairs=40, seed=3, progress=False)
    out = tmp_path / "out"
    held_out = ("--eval_strategy", "steps", "--eval_steps", "1", "--eval_split_size", "4", "--max_eval_samples", "2")
    history = grpo_quickly("grpo_kt", corpus, out, ("--report_to", "wandb", "--max_train_samples", "8", *held_out))
    rewards = _logged(history, "rewards/kt_compression_reward/mean")
    assert len(rewards) == 2 and all(0.0 <= r <= 1.0 for r in rewards)
    assert len(_logged(history, "rewards/format_reward/mean")) == 2
    verdicts = [k for entry in history for k in entry if k.startswith("kt_compression_reward/")]
    assert verdicts  # the verdict shares of every step
    for key in ("accuracy", "compression_rate", "hack_rate"):  # the task's measures on held-out prompts, each step
        assert len(_logged(history, f"eval_kt_compression_reward/{key}")) == 2, key
        assert len(_logged(history, f"kt_compression_reward/{key}")) == 2, key
    assert all(0.0 <= a <= 1.0 for a in _logged(history, "eval_kt_compression_reward/accuracy"))
    results = json.loads((out / "train_results.json").read_text())
    assert results["train_prompts"] == 8 and results["eval_prompts"] == 2 and results["world_size"] == 1
    runs = sorted((out / "wandb").glob("offline-run-*"))
    assert len(runs) == 1
    logged = b"".join(path.read_bytes() for path in runs[0].glob("*.wandb"))  # protobuf records: keys are plain text
    for key in ("rewards/kt_compression_reward/mean", "rewards/format_reward/mean", verdicts[0]):
        assert logged.count(key.encode()) >= 2  # one history record per step


@pytest.mark.slow
def test_grpo_rtce_scores_answers_and_round_trips_on_held_out_free_prompts(tmp_path: Path) -> None:
    benchmark = tmp_path / "benchmark"
    build_benchmark(benchmark, seed=5, num_inputs=6, progress=False)
    held_out = json.loads((benchmark / "rtce.json").read_text())[0]["id"]
    (tmp_path / "eval_ids.json").write_text(json.dumps([held_out]))
    recipe = load_recipe("grpo_rtce")
    args = recipe.SCRIPT_ARGUMENTS(dataset_name=str(benchmark), eval_ids=str(tmp_path / "eval_ids.json"))
    rows = recipe.prompt_rows(args)
    assert held_out not in {row_id.split("/")[0] for row_id in rows["id"]}
    assert set(rows["task"]) == {"output_pred", "input_pred", "roundtrip"}
    extra = ("--eval_ids", str(tmp_path / "eval_ids.json"), "--report_to", "none", "--max_train_samples", "8")
    extra += ("--max_steps", "1")  # RTCE prompts are long: a step of 4 completions takes a minute on CI's CPU
    history = grpo_quickly("grpo_rtce", benchmark, tmp_path / "out", extra)
    logged = {k for entry in history for k in entry if k.startswith("rewards/")}
    assert {"rewards/rtce_answer_reward/mean", "rewards/format_reward/mean"} <= logged
    assert torch.isfinite(torch.tensor(_logged(history, "loss"))).all()


@pytest.mark.slow
def test_grpo_nl_with_a_model_extractor_on_a_training_suite(tmp_path: Path) -> None:
    recipe = load_recipe("grpo_nl")
    rows = recipe.prompt_rows(recipe.SCRIPT_ARGUMENTS())
    evaluation = {row["sexpr"] for row in build_suite(SuiteConfig()).rows}
    assert len(rows) > 2000 and not evaluation & set(rows["expression"])
    extra = ("--report_to", "none", "--max_train_samples", "4", "--max_steps", "1", "--max_completion_length", "32")
    history = grpo_quickly("grpo_nl", tmp_path / "no-such-dataset", tmp_path / "out", extra, dataset=False)
    verdicts = {k for entry in history for k in entry if k.startswith("nl_roundtrip_reward/")}
    assert verdicts and len(_logged(history, "rewards/nl_roundtrip_reward/mean")) == 1


@pytest.mark.slow
def test_grpo_kt_with_step_credit_trains_and_logs_its_credit(tmp_path: Path, tiny_model_dir: str) -> None:
    """`credit_assignment: step` swaps in the step-credit trainer: the run trains and logs what its steps credited."""
    corpus = build_kt_corpus(tmp_path / "corpus", num_pairs=20, seed=3, progress=False)
    recipe = load_recipe("grpo_kt")
    out = tmp_path / "out"
    argv = [
        "--config",
        str(ROOT / "recipes/smollm2-135m/grpo_kt/config_cpu.yaml"),
        "--dataset_name",
        str(corpus),
        "--output_dir",
        str(out),
        "--model_name_or_path",
        tiny_model_dir,
        "--use_peft",
        "false",
        "--credit_assignment",
        "step",
        "--max_train_samples",
        "4",
        "--report_to",
        "none",
        *GRPO_QUICK,
    ]
    assert launch(recipe.main, recipe.SCRIPT_ARGUMENTS, argv, training_config=recipe.TRAINING_CONFIG) == 0
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    for key in ("step_credit/steps", "step_credit/credited_steps", "step_credit/credited_tokens"):
        values = _logged(history, key)
        assert len(values) == 2 and all(v >= 0.0 for v in values), key
    assert all(0.0 <= v <= 1.0 for v in _logged(history, "step_credit/credited_tokens"))
