"""ZeRO-3 for real: `accelerate launch` with DeepSpeed stage 3 on two CPU processes trains an RTCE adapter; a fresh
process then loads it, finds every tensor whole (the known empty-adapter-under-ZeRO-3 failure) and different
outputs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tracegen.pipeline import CorpusSettings, build_rtce_sft_corpus

from .test_recipe_configs import ROOT

pytestmark = pytest.mark.slow

CHECK = """
import sys, torch
from peft import PeftModel
from kt_train.models import DEFAULT_MODEL, get_model, get_tokenizer
ids = get_tokenizer(DEFAULT_MODEL)("def main_solution(x): return x * 2", return_tensors="pt")
base = get_model(DEFAULT_MODEL, dtype="float32").eval()
with torch.no_grad():
    before = base(**ids).logits
    after = PeftModel.from_pretrained(base, sys.argv[1]).eval()(**ids).logits
print((after - before).abs().max().item())
"""


@pytest.mark.skipif(shutil.which("accelerate") is None and not (Path(sys.executable).parent / "accelerate").exists(),
                    reason="accelerate launcher missing")  # fmt: skip
def test_zero3_two_cpu_processes_train_a_whole_adapter(tmp_path: Path) -> None:
    pytest.importorskip("deepspeed")
    corpus = build_rtce_sft_corpus(tmp_path / "corpus", CorpusSettings(num_inputs=8, template_max_steps=4), 2, False)
    out = tmp_path / "out"
    command = [
        str(Path(sys.executable).parent / "accelerate"), "launch",
        "--config_file", str(ROOT / "accelerate_configs/zero3_cpu.yaml"),
        str(ROOT / "recipes/sft_rtce.py"),
        "--config", str(ROOT / "recipes/smollm2-135m/sft_rtce/config_cpu.yaml"),
        "--dataset_name", str(corpus / "sft"), "--algorithms", "rle", "--output_dir", str(out),
        "--max_steps", "3", "--per_device_train_batch_size", "1", "--learning_rate", "1e-3", "--warmup_steps", "0",
        "--save_strategy", "no", "--report_to", "none", "--eval_after_training", "false", "--max_length", "1024",
    ]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=1500, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((out / "rle" / "train_results.json").read_text())
    assert results["world_size"] == 2  # two ranks, not one process running alone
    state = json.loads((out / "rle" / "trainer_state.json").read_text())
    assert state["global_step"] == 3

    adapter = load_file(out / "rle" / "adapter_model.safetensors")
    assert len(adapter) == 2 * 30 * 7
    assert all(t.numel() > 0 for t in adapter.values())  # no (0,) tensors left by partitioned saving
    assert all(t.abs().sum() > 0 for k, t in adapter.items() if "lora_B" in k)
    check = subprocess.run([sys.executable, "-c", CHECK, str(out / "rle")], capture_output=True, text=True,
                           timeout=600, env=env)  # fmt: skip
    assert check.returncode == 0, check.stderr[-3000:]
    assert float(check.stdout.strip().splitlines()[-1]) > 1e-3
    assert torch.isfinite(torch.tensor(float(check.stdout.strip().splitlines()[-1])))
