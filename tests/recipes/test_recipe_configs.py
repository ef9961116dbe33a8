"""Every recipe YAML parses with its recipe's parser; unknown keys and broken configs fail with one line."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from kt_train.training.launch import recipe_parser

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "recipes").glob("*/*/config_*.yaml"))


def load_recipe(task: str) -> ModuleType:
    """recipes/<task>.py as a module (recipes are scripts, not a package)."""
    name = f"recipe_{task}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "recipes" / f"{task}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def script_arguments(config: Path) -> type:
    return load_recipe(config.parent.name).SCRIPT_ARGUMENTS


def test_there_are_configs_for_every_recipe() -> None:
    tasks = {c.parent.name for c in CONFIGS}
    recipes = {p.stem for p in (ROOT / "recipes").glob("sft_*.py")}
    assert recipes and tasks == recipes
    assert (ROOT / "recipes/QwQ-32B/sft_rtce/config_paper.yaml") in CONFIGS
    assert (ROOT / "recipes/smollm2-135m/sft_rtce/config_cpu.yaml") in CONFIGS


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: str(p.relative_to(ROOT / "recipes")))
def test_recipe_yaml_parses(config: Path) -> None:
    values = yaml.safe_load(config.read_text())
    # GPU configs (bf16) are parsed here on a CPU machine: transformers only accepts bf16 on CPU with use_cpu.
    extra = ["--use_cpu", "true"] if values.get("bf16") else []
    _, training_args, model_args = recipe_parser(script_arguments(config)).parse_args_and_config(
        ["--config", str(config), *extra]
    )
    assert training_args.output_dir == values["output_dir"]
    assert model_args.model_name_or_path == values["model_name_or_path"]
    if values.get("use_peft"):
        assert model_args.use_peft and model_args.lora_r == values["lora_r"]


def test_paper_config_matches_appendix_d() -> None:
    config = ROOT / "recipes/QwQ-32B/sft_rtce/config_paper.yaml"
    _, training, model = recipe_parser(script_arguments(config)).parse_args_and_config(
        ["--config", str(config), "--use_cpu", "true"]
    )
    assert (model.lora_r, model.lora_target_modules) == (8, "all-linear")
    assert (training.num_train_epochs, training.per_device_train_batch_size) == (3, 1)
    assert (training.gradient_accumulation_steps, training.learning_rate) == (8, 1e-4)
    assert (str(training.lr_scheduler_type.value), training.warmup_steps) == ("cosine", 0.1)
    assert (training.max_length, training.bf16) == (2048, True)


def test_unknown_yaml_key_fails(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("output_dir: out\nlora_rank: 8\n")  # TRL's key is lora_r
    with pytest.raises(ValueError, match="lora_rank"):
        recipe_parser(script_arguments(CONFIGS[0])).parse_args_and_config(["--config", str(config)])


def test_broken_config_gives_one_error_line(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("output_dir: out\nlearning_rate_typo: 1\n")
    done = subprocess.run(
        [sys.executable, str(ROOT / "recipes/sft_rtce.py"), "--config", str(config)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "learning_rate_typo" in errors[0]
    assert "Traceback" not in done.stderr
