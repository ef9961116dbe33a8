"""Training resumes bit for bit after kill -9 (issue 38): each recipe command is run once to its end, then killed with
SIGKILL at a random step (or while a checkpoint is being written) and run again with the same arguments; the two
must hold the same per-step log, the same weights (sha256) and, for GRPO, the same prompts, completions and rewards
(`kt_train.training.resume_probe`). The LoRA recipes train a 2-layer model of the embedded model's architecture and
tokenizer (`tiny_model_dir`): whether a resume is exact does not depend on the model's size, and the embedded model's
own LoRA and ZeRO-3 runs are tested in test_recipes_run.py and test_zero3_cpu.py."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from dsl.seqcoder import build_kt_corpus
from kt_train.training.resume_probe import PROBE_ENV, compare_runs, launch_command, probe, probe_config, run_to_end
from tracegen.pipeline import CorpusSettings, build_rtce_sft_corpus

from .test_recipe_configs import ROOT

pytestmark = pytest.mark.slow

ENV = {**os.environ, **PROBE_ENV}
SFT = {"evaluations": []}  # no evaluation after training
RTCE_CONFIG = "recipes/smollm2-135m/sft_rtce/config_cpu.yaml"
RTCE_QUICK = {"algorithms": ["rle"], "max_steps_by_algorithm": {}, "max_steps": 6, "save_steps": 2, **SFT}
RTCE_QUICK |= {"lora_dropout": 0.05, "eval_on_start": False}  # dropout draws from the RNG streams a resume restores


def _config(tmp_path: Path, recipe_config: str, **overrides: object) -> Path:
    return probe_config(ROOT / recipe_config, tmp_path, **overrides)


def _command(recipe: str, config: Path, accelerate_config: str = "cpu.yaml") -> list[str]:
    return launch_command(ROOT / "recipes" / f"{recipe}.py", config, ROOT / "accelerate_configs" / accelerate_config)


def _assert_identical(result: object, kills: int) -> None:
    summary = result.summary()  # type: ignore[attr-defined]
    assert summary["kills"] == kills, summary
    assert summary["identical"], summary["differences"]


def _rtce_corpus(tmp_path: Path) -> Path:
    settings = CorpusSettings(num_inputs=8, template_max_steps=4, input_lengths=(3, 10), completions="answer")
    return build_rtce_sft_corpus(tmp_path / "corpus", settings, 2, False) / "sft"


def test_sft_kt_seqcoder_full_fine_tuning_killed_at_random_steps(tmp_path: Path) -> None:
    corpus = build_kt_corpus(tmp_path / "corpus", num_pairs=200, seed=3, progress=False)
    config = _config(
        tmp_path,
        "recipes/seqcoder-tiny/sft_kt/config_10k.yaml",
        dataset_name=str(corpus),
        max_steps=16,
        save_steps=4,
        gradient_accumulation_steps=4,
        **SFT,
    )
    result = probe(_command("sft_kt", config), tmp_path / "probe", kills=2, seed=0, env=ENV, timeout=600)
    _assert_identical(result, 2)


def test_sft_kt_killed_while_a_checkpoint_is_written_resumes_from_the_one_before(tmp_path: Path) -> None:
    corpus = build_kt_corpus(tmp_path / "corpus", num_pairs=200, seed=3, progress=False)
    config = _config(
        tmp_path,
        "recipes/seqcoder-tiny/sft_kt/config_10k.yaml",
        dataset_name=str(corpus),
        max_steps=16,
        save_steps=4,
        gradient_accumulation_steps=4,
        **SFT,
    )
    result = probe(
        _command("sft_kt", config), tmp_path / "probe", kills=1, seed=0, kill_in_save=True, env=ENV, timeout=600
    )
    _assert_identical(result, 1)
    killed = result.attempts[0]
    assert killed.killed_in_save is not None  # the folder the kill left half-written...
    assert result.attempts[1].resumed_from == killed.killed_after  # ...was not resumed from


def test_sft_rtce_lora_killed_at_a_random_step(tmp_path: Path, tiny_model_dir: str) -> None:
    config = _config(
        tmp_path,
        RTCE_CONFIG,
        dataset_name=str(_rtce_corpus(tmp_path)),
        gradient_accumulation_steps=2,
        model_name_or_path=tiny_model_dir,
        **RTCE_QUICK,
    )
    result = probe(_command("sft_rtce", config), tmp_path / "probe", kills=1, seed=1, env=ENV, timeout=900)
    _assert_identical(result, 1)


def test_sft_rtce_lora_killed_after_its_last_checkpoint_trains_no_more(tmp_path: Path, tiny_model_dir: str) -> None:
    """A kill after the last checkpoint is written and before the outputs are (max_steps ends inside an epoch): the
    rerun resumes from that checkpoint and must finish without training (transformers trained one step more)."""
    config = _config(
        tmp_path,
        RTCE_CONFIG,
        dataset_name=str(_rtce_corpus(tmp_path)),
        gradient_accumulation_steps=2,
        model_name_or_path=tiny_model_dir,
        **RTCE_QUICK,
    )
    command = _command("sft_rtce", config)
    run_to_end(command, tmp_path / "uninterrupted", ENV, timeout=600)
    finished, killed = tmp_path / "uninterrupted" / "rle", tmp_path / "killed" / "rle"
    assert json.loads((finished / "trainer_state.json").read_text())["global_step"] == RTCE_QUICK["max_steps"]
    for name in ("checkpoint-6", "checkpoint-4", "kt_run_settings.json"):  # what the run had left at the kill
        (shutil.copytree if (finished / name).is_dir() else shutil.copy)(finished / name, killed / name)
    run_to_end(command, tmp_path / "killed", ENV, timeout=600)
    assert compare_runs(tmp_path / "uninterrupted", tmp_path / "killed") == []


def test_sft_rtce_lora_under_zero3_killed_at_a_random_step(tmp_path: Path, tiny_model_dir: str) -> None:
    pytest.importorskip("deepspeed")
    config = _config(
        tmp_path,
        RTCE_CONFIG,
        dataset_name=str(_rtce_corpus(tmp_path)),
        gradient_accumulation_steps=1,
        model_name_or_path=tiny_model_dir,
        **RTCE_QUICK,
    )
    command = _command("sft_rtce", config, "zero3_cpu.yaml")
    result = probe(command, tmp_path / "probe", kills=1, seed=1, env=ENV, timeout=1200)
    _assert_identical(result, 1)


def test_grpo_kt_lora_killed_at_a_random_step_samples_and_scores_the_same(tmp_path: Path, tiny_model_dir: str) -> None:
    corpus = build_kt_corpus(tmp_path / "corpus", num_pairs=40, seed=3, progress=False)
    config = _config(
        tmp_path,
        "recipes/smollm2-135m/grpo_kt/config_cpu.yaml",
        dataset_name=str(corpus),
        max_steps=4,
        save_steps=1,
        max_train_samples=8,
        max_completion_length=24,
        log_completions=True,
        model_name_or_path=tiny_model_dir,
    )
    result = probe(_command("grpo_kt", config), tmp_path / "probe", kills=1, seed=2, env=ENV, timeout=900)
    _assert_identical(result, 1)
    assert len(list((tmp_path / "probe" / "killed" / "completions").glob("*.parquet"))) == 4
