"""`kt dsl export-chat`: a KT corpus as SeqCoder chats that `datasets` loads without a warning and stock `trl sft`
trains on (the corpus itself has no `text` or `messages` column: stock TRL failed with KeyError 'text')."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from datasets import load_dataset

from dsl.seqcoder import seqcoder_prompt
from kt_train.cli import main
from kt_train.models import DEFAULT_MODEL, resolve_model_path


@pytest.fixture(scope="module")
def chats(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("kt")
    assert (
        main(["dsl", "generate", "--num-pairs", "12", "--seed", "3", "--output", str(root / "corpus"), "--quiet"]) == 0
    )
    assert main(["dsl", "export-chat", "--corpus", str(root / "corpus"), "--output", str(root / "chats")]) == 0
    return root


def test_the_chats_load_without_a_warning(chats: Path, caplog: pytest.LogCaptureFixture) -> None:
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING):
        warnings.simplefilter("always")
        dataset = load_dataset(str(chats / "chats"), split="train")
    assert not [w for w in caught if "dataset" in str(w.message).lower()] and not caplog.records
    corpus = load_dataset(str(chats / "corpus"), split="train")
    assert dataset.column_names == ["id", "prompt", "completion"] and len(dataset) == len(corpus) == 12
    row, pair = dataset[0], corpus[0]
    assert row["id"] == pair["id"] and row["prompt"] == [
        {"role": "user", "content": seqcoder_prompt(pair["sequence"])}
    ]
    assert row["completion"] == [{"role": "assistant", "content": pair["program"]}]
    card = (chats / "chats" / "README.md").read_text()
    for field in ("license: mit", "size_categories:\n- n<1K", "task_categories:\n- text-generation", "num_bytes:"):
        assert field in card
    assert f"kt dsl export-chat --corpus {chats / 'corpus'}" in card
    assert sorted(p.name for p in (chats / "chats" / "data").iterdir()) == ["train-00000-of-00001.parquet"]


@pytest.mark.slow
def test_stock_trl_sft_trains_on_the_chats(chats: Path) -> None:
    out = chats / "trl-sft"
    trl = str(Path(sys.executable).with_name("trl"))
    command = [
        trl,
        "sft",
        "--model_name_or_path",
        resolve_model_path(DEFAULT_MODEL),
        "--dataset_name",
        str(chats / "chats"),
        "--output_dir",
        str(out),
        "--max_steps",
        "1",
        "--per_device_train_batch_size",
        "2",
        "--max_length",
        "256",
        "--use_peft",
        "--lora_r",
        "4",
        "--report_to",
        "none",
        "--save_strategy",
        "no",
        "--use_cpu",
        "true",
        "--bf16",
        "false",  # TRL's default bf16 is emulated on a CPU without AVX512-BF16: ~10x slower
    ]
    env = os.environ | {"HF_HUB_OFFLINE": "1", "WANDB_DISABLED": "true"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (out / "adapter_model.safetensors").is_file(), done.stderr[-2000:]  # trained one step, saved
