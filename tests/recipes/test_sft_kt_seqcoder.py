"""The SeqCoder recipe trains a model made from scratch (recipes/seqcoder-tiny): made once in the kt-train cache,
trained whole, saved as a plain transformers folder and evaluated as itself, in its own chat template."""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
import torch
from datasets import Dataset
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer

from dsl.copy_curriculum import CopyPhase
from dsl.seqcoder import build_kt_corpus, seqcoder_prompt, to_seqcoder_chat
from dsl.seqcoder_model import FORMAT_VERSION, SeqCoderInit, init_seqcoder, seqcoder_model_dir
from dsl.seqcoder_tokenizer import CHAT_TEMPLATE
from kt_train.configs import SFTConfig
from kt_train.generation import get_backend
from kt_train.training.launch import launch

from .test_recipe_configs import ROOT, load_recipe

CONFIG = ROOT / "recipes/seqcoder-tiny/sft_kt/config_10k.yaml"
QUICK = ["--max_steps", "3", "--warmup_steps", "0", "--gradient_accumulation_steps", "4", "--report_to", "none"]
QUICK += ["--save_strategy", "no", "--eval_split_size", "4", "--eval_steps", "3", "--copy_curriculum", "10:5:4"]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A kt-train cache of the test's own (the evaluation's process inherits it); torch threads restored after."""
    monkeypatch.setenv("KT_TRAIN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", "1"))  # torch_threads: 1 sets it
    threads = torch.get_num_threads()
    yield tmp_path / "cache"
    torch.set_num_threads(threads)


def test_the_cached_model_is_made_once_with_its_seed(cache: Path) -> None:
    folder = seqcoder_model_dir("tiny", 0)
    assert folder == cache / "models" / f"seqcoder-tiny-seed0-v{FORMAT_VERSION}"
    made = (folder / "model.safetensors").stat().st_mtime_ns
    assert seqcoder_model_dir("tiny", 0) == folder and (folder / "model.safetensors").stat().st_mtime_ns == made
    expected, _ = init_seqcoder(SeqCoderInit(size="tiny", seed=0))
    saved = load_file(folder / "model.safetensors")
    assert all(torch.equal(saved[name], value) for name, value in expected.state_dict().items() if name in saved)
    other = load_file(seqcoder_model_dir("tiny", 1) / "model.safetensors")
    assert not torch.equal(other["model.embed_tokens.weight"], saved["model.embed_tokens.weight"])
    digits = seqcoder_model_dir("tiny", 0, "digits")
    assert digits == cache / "models" / f"seqcoder-tiny-digits-seed0-v{FORMAT_VERSION}"
    assert AutoTokenizer.from_pretrained(digits).tokenize("250") == ["2", "5", "0"]
    assert not list((cache / "models").glob(".seqcoder-*"))  # no work folder left


@pytest.mark.slow
def test_seqcoder_tiny_trains_from_scratch_then_kt_eval_of_the_model(cache: Path, tmp_path: Path) -> None:
    corpus = build_kt_corpus(tmp_path / "corpus", num_pairs=40, seed=3, progress=False)
    out = tmp_path / "out"
    evaluation = ["--eval_set_bytes", "300", "--eval_items", "2", "--eval_max_new_tokens", "32"]
    argv = ["--config", str(CONFIG), "--dataset_name", str(corpus), "--output_dir", str(out), *QUICK, *evaluation]
    recipe = load_recipe("sft_kt")
    assert launch(recipe.main, recipe.SCRIPT_ARGUMENTS, argv) == 0

    initial = seqcoder_model_dir("tiny", 0)  # made by the recipe, found here
    assert not (out / "adapter_config.json").exists()  # trained whole: a plain transformers folder
    model = AutoModelForCausalLM.from_pretrained(out)
    assert model.config.model_type == "llama" and model.num_parameters() == 1_147_136
    before, after = load_file(initial / "model.safetensors"), load_file(out / "model.safetensors")
    assert before.keys() == after.keys() and all(not torch.equal(before[k], after[k]) for k in before)
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert tokenizer.chat_template == CHAT_TEMPLATE  # kept as the DSL template, not replaced by ChatML
    state = json.loads((out / "trainer_state.json").read_text())
    assert state["global_step"] == 3 and any("eval_loss" in entry for entry in state["log_history"])
    settings = json.loads((out / "kt_run_settings.json").read_text())["settings"]  # 4 copies, then 8 corpus rows
    assert (settings["copy_curriculum"], settings["train_sampling_strategy"]) == (["10:5:4"], "sequential")

    config = json.loads((out / "kt.config.json").read_text())  # the evaluation: the model itself, no adapter
    assert (config["model"], config["adapter"], config["max_new_tokens"]) == (str(out), None, 32)
    summary = json.loads((out / "kt_eval" / "summary.json").read_text())  # written by `kt eval kt` in a subprocess
    assert summary["settings"]["model"] == str(out) and summary["settings"]["adapter"] is None
    assert summary["metrics"]["num_items"] == 2 and (out / "kt_eval" / "report.md").is_file()
    # ... prompted as in training: the sequence alone, in the template saved with the model
    backend = get_backend("transformers", str(out), dtype="float32")
    chat = to_seqcoder_chat({"sequence": [3, 4, 250], "program": "unused"})
    assert backend._format(seqcoder_prompt([3, 4, 250])) == "<s><|user|>3 4 250<|assistant|>"
    assert backend._format(seqcoder_prompt([3, 4, 250])) == tokenizer.apply_chat_template(
        chat["prompt"], tokenize=False, add_generation_prompt=True
    )


CONTRADICTIONS = {
    "model_name_or_path: smollm2-135m-instruct\n": "set one of them",
    "use_peft: true\n": "trains every weight",
    "load_in_4bit: true\n": "trains every weight",
}


@pytest.mark.parametrize(("line", "expected"), CONTRADICTIONS.items(), ids=["model", "lora", "4bit"])
def test_seqcoder_with_another_model_or_lora_is_refused_in_one_line(
    line: str, expected: str, cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(f"output_dir: {tmp_path / 'out'}\nseqcoder_size: tiny\n{line}")
    recipe = load_recipe("sft_kt")
    assert launch(recipe.main, recipe.SCRIPT_ARGUMENTS, ["--config", str(config)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "seqcoder_size" in err[0] and expected in err[0], err
    assert not (cache / "models").exists()  # refused before anything was made


def test_an_unknown_size_is_refused(tmp_path: Path) -> None:
    recipe = load_recipe("sft_kt")
    with pytest.raises(SystemExit):
        launch(recipe.main, recipe.SCRIPT_ARGUMENTS, ["--output_dir", str(tmp_path), "--seqcoder_size", "huge"])


@pytest.mark.slow
def test_feed_ex_trains_on_programs_with_values_and_evaluates_with_the_interpreter(
    cache: Path, tmp_path: Path
) -> None:
    corpus = build_kt_corpus(tmp_path / "corpus", num_pairs=40, seed=3, progress=False)
    out = tmp_path / "out"
    feedback = ["--execution_feedback", "feed_ex", "--feedback_max_values", "4"]
    evaluation = ["--eval_set_bytes", "300", "--eval_items", "2", "--eval_max_new_tokens", "16"]
    argv = ["--config", str(CONFIG), "--dataset_name", str(corpus), "--output_dir", str(out), *QUICK, *feedback]
    recipe = load_recipe("sft_kt")
    assert launch(recipe.main, recipe.SCRIPT_ARGUMENTS, [*argv, *evaluation]) == 0
    config = json.loads((out / "kt.config.json").read_text())
    assert (config["execution_feedback"], config["feedback_max_values"]) == (True, 4)
    summary = json.loads((out / "kt_eval" / "summary.json").read_text())
    assert summary["settings"]["execution_feedback"] is True and summary["metrics"]["num_items"] == 2
    settings = json.loads((out / "kt_run_settings.json").read_text())
    assert settings["settings"]["execution_feedback"] == "feed_ex"  # a rerun without it is refused, never mixed


def test_feedback_chats_carry_the_values_of_every_line() -> None:
    program = "sequence_1 = range_func_up(1, 6)\nsequence_2 = reverse_list(sequence_1)\noutput = sequence_2"
    chat = to_seqcoder_chat({"sequence": [6, 5, 4, 3, 2, 1], "program": program}, feedback_max_values=4)
    assert chat["completion"][0]["content"] == (
        "sequence_1 = range_func_up(1, 6) # [1, 2, 3, 4, ...]\n"
        "sequence_2 = reverse_list(sequence_1) # [6, 5, 4, 3, ...]\n"
        "output = sequence_2 # [6, 5, 4, 3, ...]"
    )
    assert to_seqcoder_chat({"sequence": [1], "program": program})["completion"][0]["content"] == program


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--execution_feedback", "feed_ex", "--eval_backend", "vllm"], "eval_backend transformers"),
        (["--feedback_max_values", "0"], "feedback_max_values must be >= 1"),
    ],
)
def test_feedback_settings_that_cannot_work_are_refused_in_one_line(
    extra: list[str], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recipe = load_recipe("sft_kt")
    assert launch(recipe.main, recipe.SCRIPT_ARGUMENTS, ["--output_dir", str(tmp_path), *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0], err


def test_the_copy_curriculum_comes_first_and_in_order(tmp_path: Path) -> None:
    recipe = load_recipe("sft_kt")
    args = SFTConfig(
        output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=1, gradient_accumulation_steps=4
    )
    to_chat = partial(to_seqcoder_chat, feedback_max_values=None)
    corpus = [
        {"sequence": [1, 2, 3], "program": f"sequence_1 = range_func_up(1, {i})\noutput = sequence_1"}
        for i in range(9)
    ]
    arrange = recipe.copies_first([CopyPhase.parse("10:5:3")], to_chat, args)
    stream = arrange(Dataset.from_list([to_chat(row) for row in corpus]))
    programs = [row["completion"][0]["content"] for row in stream]
    assert len(programs) == 8 and all("set_list" in p for p in programs[:3]) and "set_list" not in programs[3]
    assert args.train_sampling_strategy == "sequential"  # the trainer reads them in that order


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--max_steps", "-1", "--copy_curriculum", "10:8:4"], "copy_curriculum needs max_steps"),
        (["--train_sampling_strategy", "group_by_length", "--copy_curriculum", "10:8:4"], "not by group_by_length"),
        (["--copy_curriculum", "10:8"], "VALUES:MAX_LENGTH:ROWS"),
    ],
)
def test_a_copy_curriculum_that_cannot_work_is_refused_before_any_corpus_is_built(
    extra: list[str], expected: str, cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--config", str(CONFIG), "--output_dir", str(tmp_path / "out"), *extra]
    recipe = load_recipe("sft_kt")
    assert launch(recipe.main, recipe.SCRIPT_ARGUMENTS, argv) == 2
    err = capsys.readouterr().err
    assert expected in err.strip().splitlines()[-1] and "Traceback" not in err, err  # one line, after the logs
    assert not (cache / "data").exists()


@pytest.mark.parametrize(
    ("evaluation", "expected"),
    [({"eval_strategy": "steps", "eval_steps": 500}, 114_440), ({"eval_strategy": "no"}, 114_240)],
)
def test_a_run_prepares_only_the_corpus_rows_its_steps_read(
    evaluation: dict[str, object], expected: int, tmp_path: Path
) -> None:
    recipe = load_recipe("sft_kt")
    script_args = recipe.SCRIPT_ARGUMENTS(corpus_size=1_000_000, eval_split_size=200)
    steps = SFTConfig(
        output_dir=str(tmp_path),
        max_steps=7000,
        per_device_train_batch_size=1,
        gradient_accumulation_steps=16,
        **evaluation,
    )
    assert recipe.rows_to_prepare(script_args, steps) == expected  # 7,000 x 16, 2% spare, eval_loss rows
    epochs = SFTConfig(output_dir=str(tmp_path), num_train_epochs=1, max_steps=-1)
    assert recipe.rows_to_prepare(script_args, epochs) is None  # a run in epochs reads the whole corpus
    # feedback comments put 9.3% of the rows over max_length: a 2% spare made a 2,230-step feed run read 33,005
    # rows 1.081 times; 15% covers them
    feed = recipe.SCRIPT_ARGUMENTS(corpus_size=100_000, eval_split_size=200, execution_feedback="feed")
    steps.max_steps = 2230
    assert recipe.rows_to_prepare(feed, steps) == math.ceil(2230 * 16 * 1.15) + expected - 114_240
    # numbers as digits put 2.75% of the chats over 1,024 tokens: a 5% spare
    digits = recipe.SCRIPT_ARGUMENTS(
        corpus_size=100_000, eval_split_size=200, seqcoder_size="tiny", seqcoder_numbers="digits"
    )
    assert recipe.rows_to_prepare(digits, steps) == math.ceil(2230 * 16 * 1.05) + expected - 114_240


@pytest.mark.slow
def test_a_run_whose_steps_read_more_rows_than_are_left_says_so(
    cache: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    corpus = build_kt_corpus(tmp_path / "corpus", num_pairs=10, seed=3, progress=False)
    config = tmp_path / "config.yaml"
    config.write_text(
        f"seqcoder_size: tiny\ndataset_name: {corpus}\noutput_dir: {tmp_path / 'out'}\nuse_cpu: true\nmax_steps: 2\n"
        "per_device_train_batch_size: 1\ngradient_accumulation_steps: 8\nsave_strategy: 'no'\nreport_to: []\n"
    )
    argv = ["--config", str(config)]
    recipe = load_recipe("sft_kt")
    with caplog.at_level(logging.WARNING, logger="kt_train.training.sft"):
        assert launch(recipe.main, recipe.SCRIPT_ARGUMENTS, argv) == 0
    assert "max_steps=2 reads 16 rows but 10 are left after the length filter and the hold-out: 1.600 epochs" in (
        caplog.text
    )
