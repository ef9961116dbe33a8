"""ZeRO-3 for real: `accelerate launch` with DeepSpeed stage 3 on two CPU processes trains an RTCE SFT adapter and a
KT GRPO adapter (generation from the partitioned model, rewards, gathered rewards); a fresh process then loads each,
finds every tensor whole (the known empty-adapter-under-ZeRO-3 failure) and different outputs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from datasets import Dataset
from safetensors.torch import load_file

from dsl.seqcoder import build_kt_corpus, to_seqcoder_rl_row
from kt_train.models import DEFAULT_MODEL
from tracegen.pipeline import CorpusSettings, build_rtce_sft_corpus

from .test_recipe_configs import ROOT

pytestmark = pytest.mark.slow

CHECK = """
import sys, torch
from peft import PeftModel
from kt_train.models import get_model, get_tokenizer
ids = get_tokenizer(sys.argv[2])("def main_solution(x): return x * 2", return_tensors="pt")
base = get_model(sys.argv[2], dtype="float32").eval()
with torch.no_grad():
    before = base(**ids).logits
    after = PeftModel.from_pretrained(base, sys.argv[1]).eval()(**ids).logits
print((after - before).abs().max().item())
"""


ACCELERATE = Path(sys.executable).parent / "accelerate"
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}


def assert_whole_adapter_that_changes_outputs(
    adapter_dir: Path, min_change: float, base: str = DEFAULT_MODEL, layers: int = 30
) -> None:
    adapter = load_file(adapter_dir / "adapter_model.safetensors")
    assert len(adapter) == 2 * layers * 7  # A and B of the 7 linear layers of each block
    assert all(t.numel() > 0 for t in adapter.values())  # no (0,) tensors left by partitioned saving
    assert all(t.abs().sum() > 0 for k, t in adapter.items() if "lora_B" in k)
    check = subprocess.run(
        [sys.executable, "-c", CHECK, str(adapter_dir), base], capture_output=True, text=True, timeout=600, env=ENV
    )
    assert check.returncode == 0, check.stderr[-3000:]
    change = float(check.stdout.strip().splitlines()[-1])
    assert torch.isfinite(torch.tensor(change)) and change > min_change


@pytest.mark.skipif(
    shutil.which("accelerate") is None and not (Path(sys.executable).parent / "accelerate").exists(),
    reason="accelerate launcher missing",
)
def test_zero3_two_cpu_processes_train_a_whole_adapter(tmp_path: Path) -> None:
    pytest.importorskip("deepspeed")
    settings = CorpusSettings(num_inputs=8, template_max_steps=4, input_lengths=(3, 10), completions="answer")
    corpus = build_rtce_sft_corpus(tmp_path / "corpus", settings, 2, False)  # the demo config's kind of rows
    out = tmp_path / "out"
    command = [
        str(ACCELERATE),
        "launch",
        "--config_file",
        str(ROOT / "accelerate_configs/zero3_cpu.yaml"),
        str(ROOT / "recipes/sft_rtce.py"),
        "--config",
        str(ROOT / "recipes/smollm2-135m/sft_rtce/config_cpu.yaml"),
        "--dataset_name",
        str(corpus / "sft"),
        "--algorithms",
        "rle",
        "--output_dir",
        str(out),
        "--max_steps",
        "3",
        "--per_device_train_batch_size",
        "1",
        "--learning_rate",
        "1e-3",
        "--warmup_steps",
        "0",
        "--save_strategy",
        "no",
        "--report_to",
        "none",
        "--max_length",
        "1024",
        "--gradient_accumulation_steps",
        "1",
        "--eval_steps",
        "2",
        "--eval_backend",
        "transformers",
        "--eval_tasks",
        "output_pred",
        "--eval_max_new_tokens",
        "48",
        "--eval_on_start",
        "false",
        "--eval_items",
        "2",
        "--eval_checkpoints",
        "false",
        "--max_steps_by_algorithm",
        "{}",  # the config's RLE steps would outrun max_steps
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1500, env=ENV, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((out / "rle" / "train_results.json").read_text())
    assert results["world_size"] == 2  # two ranks, not one process running alone
    state = json.loads((out / "rle" / "trainer_state.json").read_text())
    assert state["global_step"] == 3
    assert any("eval_loss" in row for row in state["log_history"])  # held-out rows scored under ZeRO-3

    assert_whole_adapter_that_changes_outputs(out / "rle", min_change=1e-3)


@pytest.mark.skipif(not ACCELERATE.exists(), reason="accelerate launcher missing")
def test_zero3_two_cpu_processes_train_a_grpo_adapter(tmp_path: Path, tiny_model_dir: str) -> None:
    """On a 2-layer model of the embedded architecture (the SFT test above trains the embedded model itself)."""
    pytest.importorskip("deepspeed")
    corpus = build_kt_corpus(tmp_path / "corpus", num_pairs=24, seed=3, progress=False)
    rows = Dataset.from_parquet(str(corpus / "data" / "*.parquet")).map(to_seqcoder_rl_row)
    # A reward that varies between the sampled completions of one prompt (even length), so that the advantages and
    # the update are not zero: the base model never writes a correct program.
    rows.map(lambda row: {"format_pattern": "(?:..)*"}).save_to_disk(tmp_path / "rows")
    out = tmp_path / "out"
    command = [
        str(ACCELERATE),
        "launch",
        "--config_file",
        str(ROOT / "accelerate_configs/zero3_cpu.yaml"),
        str(ROOT / "recipes/grpo_kt.py"),
        "--config",
        str(ROOT / "recipes/smollm2-135m/grpo_kt/config_cpu.yaml"),
        "--dataset_name",
        str(tmp_path / "rows"),
        "--output_dir",
        str(out),
        "--model_name_or_path",
        tiny_model_dir,
        "--reward_funcs",
        "format",
        "--reward_options",
        "{}",
        "--reward_weights",
        "1.0",
        "--max_steps",
        "2",
        "--max_completion_length",
        "16",
        "--learning_rate",
        "1e-3",
        "--max_train_samples",
        "8",
        "--save_strategy",
        "no",
        "--report_to",
        "none",
        "--log_completions",
        "false",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1500, env=ENV, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((out / "train_results.json").read_text())
    assert results["world_size"] == 2 and results["train_prompts"] == 8
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    assert len([e for e in history if "rewards/format_reward/mean" in e]) == 2
    assert any(e.get("reward_std", 0) > 0 for e in history)  # some group had different rewards
    assert_whole_adapter_that_changes_outputs(out, min_change=1e-5, base=tiny_model_dir, layers=2)
