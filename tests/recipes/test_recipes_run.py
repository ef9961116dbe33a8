"""The SeqCoder and NL recipes train for real on small generated data; QLoRA trains every layer's adapter."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM
from trl import ModelConfig, get_quantization_config

from dsl.seqcoder import build_kt_corpus
from kt_train.cli import main as kt_main
from kt_train.configs import SFTConfig
from kt_train.models import DEFAULT_MODEL, get_tokenizer, resolve_model_path
from kt_train.stages import adapter_hash
from kt_train.training.launch import launch
from kt_train.training.model import check_trainable, get_training_model
from tests.wandb_records import run_records

from .test_recipe_configs import ROOT, load_recipe

# One step of 2 rows, not the configs' 8-16 accumulated: a SmolLM2 row takes seconds on one core, and CI runs
# these three times over.
QUICK = ["--max_steps", "1", "--warmup_steps", "0", "--per_device_train_batch_size", "2", "--report_to", "none"]
QUICK += ["--gradient_accumulation_steps", "1"]
QUICK += ["--save_strategy", "no", "--eval_strategy", "no"]


def train_quickly(
    task: str, config: str, data: Path, out: Path, extra: tuple[str, ...] = ()
) -> dict[str, torch.Tensor]:
    """One optimizer step of recipes/<task>.py with `config` on `data`; the LoRA B matrices it saved (all trained)."""
    recipe = load_recipe(task)
    argv = ["--config", str(ROOT / config), "--dataset_name", str(data), "--output_dir", str(out), *QUICK, *extra]
    assert launch(recipe.main, recipe.SCRIPT_ARGUMENTS, argv) == 0
    lora_b = {k: v for k, v in load_file(out / "adapter_model.safetensors").items() if "lora_B" in k}
    assert len(lora_b) == 30 * 7 and all(v.abs().sum() > 0 for v in lora_b.values())
    return lora_b


@pytest.mark.slow
def test_sft_kt_on_a_small_corpus_then_kt_eval_of_the_adapter(tmp_path: Path) -> None:
    corpus = build_kt_corpus(tmp_path / "corpus", num_pairs=40, seed=3, progress=False)
    out = tmp_path / "out"
    evaluation = ("--eval_set_bytes", "300", "--eval_items", "2", "--eval_max_new_tokens", "24")
    train_quickly("sft_kt", "recipes/smollm2-135m/sft_kt/config_10k.yaml", corpus, out, evaluation)
    results = json.loads((out / "train_results.json").read_text())
    # 1 step of 2 rows reads 2 of the 40 pairs: 3 are prepared (2% spare for the length filter, rounded up)
    assert results["train_samples"] + results["train_rows_over_max_length"] == 3
    summary = json.loads((out / "kt_eval" / "summary.json").read_text())  # written by `kt eval kt` in a subprocess
    assert summary["settings"]["adapter"] == str(out) and summary["settings"]["mode"] == "dsl"
    assert summary["metrics"]["num_items"] == 2 and summary["program_prior"] == "uniform"
    assert json.loads((out / "kt.config.json").read_text())["max_new_tokens"] == 24  # the evaluation's --config
    training = {tuple(s) for s in pq.read_table(corpus / "data").column("sequence").to_pylist()}
    held_out = pq.read_table(out / "kt_eval_set" / "data")
    assert not training & {tuple(s) for s in held_out.column("sequence").to_pylist()}

    # The same command again: the training had finished (not trained further), the evaluation is the same one.
    train_quickly("sft_kt", "recipes/smollm2-135m/sft_kt/config_10k.yaml", corpus, out, evaluation)
    assert json.loads((out / "kt_eval" / "summary.json").read_text())["settings"] == summary["settings"]
    # Trained afresh with another learning rate: a new adapter, so its evaluation is made again, not reused.
    again = (*evaluation, "--overwrite_output_dir", "true", "--learning_rate", "0.05")
    train_quickly("sft_kt", "recipes/smollm2-135m/sft_kt/config_10k.yaml", corpus, out, again)
    settings = json.loads((out / "kt_eval" / "summary.json").read_text())["settings"]
    assert settings["adapter_sha256"] != summary["settings"]["adapter_sha256"]
    assert settings["adapter_sha256"] == adapter_hash(out)


@pytest.mark.slow
def test_sft_kt_post_training_evaluation_logs_beside_the_training_run(tmp_path: Path) -> None:
    """The training run and its `kt eval kt` run (a separate process) are two W&B runs of the same project and group
    (was: the evaluation was not logged at all); the training run's config holds the script and model arguments, and
    eval_loss of rows held out during training is in its history."""
    corpus = build_kt_corpus(tmp_path / "corpus", num_pairs=40, seed=3, progress=False)
    out = tmp_path / "out"
    recipe = load_recipe("sft_kt")
    argv = [
        "--config",
        str(ROOT / "recipes/smollm2-135m/sft_kt/config_10k.yaml"),
        "--dataset_name",
        str(corpus),
        "--output_dir",
        str(out),
        "--max_steps",
        "1",
        "--warmup_steps",
        "0",
        "--save_strategy",
        "no",
        "--gradient_accumulation_steps",
        "1",
        "--eval_steps",
        "1",
        "--eval_split_size",
        "4",
        "--wandb_project",
        "kt-test",
        "--wandb_run_group",
        "g1",
        "--wandb_offline",
        "true",
        "--eval_set_bytes",
        "300",
        "--eval_items",
        "2",
        "--eval_max_new_tokens",
        "24",
    ]
    assert launch(recipe.main, recipe.SCRIPT_ARGUMENTS, argv) == 0
    (training_dir,) = (out / "wandb").glob("offline-run-*")
    (evaluation_dir,) = (out / "kt_eval" / "wandb").glob("offline-run-*")
    training, evaluation = run_records(training_dir), run_records(evaluation_dir)
    assert training["run"]["project"] == evaluation["run"]["project"] == "kt-test"
    assert training["run"]["group"] == evaluation["run"]["group"] == "g1"
    assert training["run"]["id"] != evaluation["run"]["id"] and evaluation["run"]["job_type"] == "kt-eval"
    assert evaluation["summary"]["accuracy"] is not None and evaluation["config"]["adapter"] == str(out)
    assert training["config"]["script_args"]["corpus_size"] == 10000 and training["config"]["run_name"] == "out"
    assert training["config"]["model_args"]["lora_r"] == 16 and training["config"]["torch_threads"] == 1
    assert [row["eval/loss"] for row in training["history"] if "eval/loss" in row]  # held-out rows, step 1
    assert json.loads((out / "kt.config.json").read_text())["wandb_group"] == "g1"


@pytest.mark.slow
def test_sft_nl_qlora_on_ft_data_then_the_round_trip(tmp_path: Path) -> None:
    data = tmp_path / "ft"
    argv = ["nl", "ft-data", "--output", str(data), "--pairs-per-depth", "5", "--depths", "2", "3"]
    assert kt_main(argv) == 0
    out = tmp_path / "out"
    evaluation = ("--eval_expressions", "2", "--eval_generator_tokens", "24", "--eval_extractor_tokens", "12")
    train_quickly("sft_nl", "recipes/smollm2-135m/sft_nl/config_qlora_cpu.yaml", data, out, evaluation)
    assert json.loads((out / "adapter_config.json").read_text())["r"] == 32
    results = pd.read_parquet(out / "nl_eval" / "results.parquet")  # written by `kt nl run` in a subprocess
    assert set(results["generator"]) == {"base", "ft", "sexpr", "procedural"}
    assert set(results["extractor"]) == {"base", "ft", "parser"}
    assert results["expr_id"].nunique() == 2 and len(results) == 2 * 4 * 3
    parsed = results[(results["extractor"] == "parser") & results["generator"].isin(["sexpr", "procedural"])]
    assert parsed["correct"].all()  # the deterministic references round-trip exactly
    assert (out / "nl_eval" / "report.md").is_file()


def _grads_after_generate(model: torch.nn.Module) -> tuple[int, int]:
    """Generate without gradients (the pitfall), then one backward through LoRA: (B matrices, B with a gradient)."""
    from peft import LoraConfig, get_peft_model

    tokenizer = get_tokenizer(DEFAULT_MODEL)
    ids = tokenizer("Sam has 3 apples and buys 2 more.", return_tensors="pt")
    model.eval()
    with torch.no_grad():
        model.generate(**ids, max_new_tokens=2, do_sample=False)
    peft_model = get_peft_model(model, LoraConfig(r=8, target_modules="all-linear"))
    peft_model.train()
    peft_model(**ids, labels=ids["input_ids"]).loss.backward()
    grads = [p.grad for n, p in peft_model.named_parameters() if "lora_B" in n]
    return len(grads), sum(g is not None and bool(g.abs().sum() > 0) for g in grads)


@pytest.mark.slow
def test_generate_before_qlora_training_is_guarded() -> None:
    model_args = ModelConfig(model_name_or_path=DEFAULT_MODEL, load_in_4bit=True, use_bnb_nested_quant=True)
    training_args = SFTConfig(output_dir="unused", use_cpu=True, report_to=[])
    model = get_training_model(model_args, training_args)  # turns the CPU repacking of 4-bit weights off
    total, with_grad = _grads_after_generate(model)
    assert total == 210 and with_grad == total
    check_trainable(model)

    raw = AutoModelForCausalLM.from_pretrained(  # a plain load, as without get_training_model
        resolve_model_path(DEFAULT_MODEL), quantization_config=get_quantization_config(model_args), dtype="float32"
    )
    if not any(getattr(m, "support_avx512bf16_for_cpu", False) for m in raw.modules()):
        pytest.skip("bitsandbytes does not repack 4-bit weights on this CPU (no AVX512-BF16)")
    raw.eval()
    with torch.no_grad():
        raw.generate(**get_tokenizer(DEFAULT_MODEL)("hi", return_tensors="pt"), max_new_tokens=1)
    with pytest.raises(RuntimeError, match="repacked for CPU inference"):
        check_trainable(raw)
