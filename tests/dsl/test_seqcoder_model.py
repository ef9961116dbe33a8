"""A SeqCoder made from scratch: seeded, saved as one folder the Auto classes load, and trainable with TRL's
SFTTrainer on the SeqCoder chats of a corpus (loss on the completion only) until its loss falls."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM
from trl import SFTTrainer

from dsl.seqcoder import to_seqcoder_chat
from dsl.seqcoder_model import SIZES, SeqCoderInit, init_seqcoder, num_parameters
from dsl.seqcoder_tokenizer import vocabulary
from kt_train.cli import main as kt_main
from kt_train.configs import SFTConfig  # TRL's, with bf16 off on CPU (TRL's default is emulated there)


@pytest.fixture(scope="module")
def chats(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    out = tmp_path_factory.mktemp("seqcoder") / "corpus"
    args = ["dsl", "generate", "--num-pairs", "300", "--seed", "1", "--output", str(out), "--quiet", "--workers", "1"]
    assert kt_main(args) == 0
    rows = pq.ParquetDataset(sorted((out / "data").glob("*.parquet"))).read().to_pylist()
    return Dataset.from_list([to_seqcoder_chat(row) for row in rows])


def weights(model: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def test_same_seed_same_weights_and_the_global_rng_untouched() -> None:
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    first, tokenizer = init_seqcoder(SeqCoderInit(seed=5))
    assert torch.equal(torch.rand(3), expected)
    second, _ = init_seqcoder(SeqCoderInit(seed=5))
    other, _ = init_seqcoder(SeqCoderInit(seed=6))
    assert torch.equal(weights(first), weights(second))
    assert not torch.equal(weights(first), weights(other))
    assert first.config.vocab_size == len(tokenizer) == len(vocabulary())
    assert first.get_input_embeddings().weight is first.get_output_embeddings().weight  # tied


def test_sizes_grow() -> None:
    config = SeqCoderInit()
    counts = []
    for size in SIZES:
        model, _ = init_seqcoder(SeqCoderInit(size=size, max_position_embeddings=config.max_position_embeddings))
        counts.append(num_parameters(model))
    assert counts == sorted(counts) and len(set(counts)) == len(counts)
    assert 0.5e6 < counts[0] < 2e6 and 10e6 < counts[-1] < 30e6


def test_numbers_as_digits_make_a_smaller_vocabulary() -> None:
    model, tokenizer = init_seqcoder(SeqCoderInit(seed=5, numbers="digits"))
    assert model.config.vocab_size == len(tokenizer) == len(vocabulary("digits")) < len(vocabulary())
    assert tokenizer.tokenize("250") == ["2", "5", "0"]


def test_bad_settings() -> None:
    with pytest.raises(ValueError, match="size must be one of"):
        SeqCoderInit(size="huge")
    with pytest.raises(ValueError, match="max_position_embeddings"):
        SeqCoderInit(max_position_embeddings=8)
    with pytest.raises(ValueError, match="numbers must be one of"):
        SeqCoderInit(numbers="bytes")


def test_cli_writes_a_folder_the_auto_classes_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "model"
    assert kt_main(["dsl", "init-seqcoder", "--size", "tiny", "--seed", "3", "--output", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["size"] == "tiny" and summary["vocab_size"] == len(vocabulary())
    model = AutoModelForCausalLM.from_pretrained(out)
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert isinstance(model, LlamaForCausalLM) and num_parameters(model) == summary["parameters"]
    made, _ = init_seqcoder(SeqCoderInit(seed=3))
    assert torch.equal(weights(model), weights(made))
    assert tokenizer.decode(tokenizer("output = sequence_2")["input_ids"]) == "output = sequence_2"
    assert kt_main(["dsl", "init-seqcoder", "--output", str(out)]) != 0  # not empty: refused
    assert "not empty" in capsys.readouterr().err


@pytest.mark.slow
def test_sft_lowers_the_loss_then_the_saved_model_reloads_and_generates(chats: Dataset, tmp_path: Path) -> None:
    model, tokenizer = init_seqcoder(SeqCoderInit(size="tiny", seed=0))
    args = SFTConfig(
        output_dir=str(tmp_path / "run"),
        max_steps=30,
        per_device_train_batch_size=8,
        learning_rate=3e-3,
        lr_scheduler_type="constant",
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        max_length=512,
        seed=0,
    )
    trainer = SFTTrainer(model=model, args=args, train_dataset=chats, processing_class=tokenizer)
    row = trainer.train_dataset[0]  # the loss: on the program and </s> only
    start = next(i for i, label in enumerate(row["labels"]) if label != -100)
    assert tokenizer.decode(row["input_ids"][:start]).endswith("<|assistant|>")
    assert row["labels"][start:] == row["input_ids"][start:]
    assert tokenizer.decode(row["input_ids"][start:]) == chats[0]["completion"][0]["content"] + "</s>"
    trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert len(losses) == 30
    assert statistics.mean(losses[-5:]) < statistics.mean(losses[:5]) - 1.0, losses

    out = tmp_path / "trained"
    trainer.save_model(str(out))
    loaded = AutoModelForCausalLM.from_pretrained(out).eval()
    loaded_tokenizer = AutoTokenizer.from_pretrained(out)
    assert torch.equal(weights(loaded), weights(trainer.model))
    prompt = loaded_tokenizer.apply_chat_template(
        chats[1]["prompt"], add_generation_prompt=True, return_dict=True, return_tensors="pt"
    )
    output = loaded.generate(**prompt, max_new_tokens=12, do_sample=False)
    new = output[0, prompt["input_ids"].shape[1] :]
    assert len(new) > 0
    text = loaded_tokenizer.decode(new, skip_special_tokens=True)
    assert text and loaded_tokenizer.decode(loaded_tokenizer(text)["input_ids"]) == text
