"""Every recipe YAML parses with its recipe's parser; unknown keys and broken configs fail with one line."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
import yaml

from kt_train.configs import SFTConfig
from kt_train.rewards import get_reward_funcs
from kt_train.training.launch import launch, recipe_parser

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


def parser_for(config: Path) -> Any:
    """The recipe's parser: its script arguments with its training config (SFTConfig unless it says otherwise)."""
    recipe = load_recipe(config.parent.name)
    return recipe_parser(recipe.SCRIPT_ARGUMENTS, getattr(recipe, "TRAINING_CONFIG", SFTConfig))


def test_there_are_configs_for_every_recipe() -> None:
    tasks = {c.parent.name for c in CONFIGS}
    recipes = {p.stem for p in (ROOT / "recipes").glob("*.py")}
    assert recipes and tasks == recipes
    assert (ROOT / "recipes/QwQ-32B/sft_rtce/config_paper.yaml") in CONFIGS
    assert (ROOT / "recipes/smollm2-135m/sft_rtce/config_cpu.yaml") in CONFIGS
    for task in ("grpo_kt", "grpo_rtce"):
        assert (ROOT / f"recipes/smollm2-135m/{task}/config_cpu.yaml") in CONFIGS
        assert (ROOT / f"recipes/Llama-3.1-8B-Instruct/{task}/config_zero3.yaml") in CONFIGS


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: str(p.relative_to(ROOT / "recipes")))
def test_recipe_yaml_parses(config: Path) -> None:
    values = yaml.safe_load(config.read_text())
    # GPU configs (bf16) are parsed here on a CPU machine: transformers only accepts bf16 on CPU with use_cpu, and
    # vLLM needs a GPU (checked on its own below).
    extra = ["--use_cpu", "true"] if values.get("bf16") else []
    extra += ["--use_vllm", "false"] if values.get("use_vllm") else []
    script_args, training_args, model_args = parser_for(config).parse_args_and_config(
        ["--config", str(config), *extra]
    )
    assert training_args.output_dir == values["output_dir"]
    assert model_args.model_name_or_path == values["model_name_or_path"]
    if values.get("use_peft"):
        assert model_args.use_peft and model_args.lora_r == values["lora_r"]
    if "reward_funcs" in values:  # GRPO: every reward exists and takes its options; one weight per reward
        rewards = get_reward_funcs(script_args.reward_funcs, script_args.reward_options)
        assert len(rewards) == len(training_args.reward_weights or rewards)
        assert training_args.generation_batch_size % training_args.num_generations == 0


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message given without a GPU")
@pytest.mark.parametrize("task", ["grpo_kt", "grpo_rtce"])
def test_vllm_config_without_a_gpu_is_one_error_line(task: str, capsys: pytest.CaptureFixture[str]) -> None:
    recipe = load_recipe(task)
    config = ROOT / f"recipes/Llama-3.1-8B-Instruct/{task}/config_zero3.yaml"
    argv = ["--config", str(config), "--use_cpu", "true"]
    assert launch(recipe.main, recipe.SCRIPT_ARGUMENTS, argv, training_config=recipe.TRAINING_CONFIG) == 2
    assert "use_vllm needs a CUDA GPU" in capsys.readouterr().err


def test_paper_config_matches_appendix_d() -> None:
    config = ROOT / "recipes/QwQ-32B/sft_rtce/config_paper.yaml"
    _, training, model = parser_for(config).parse_args_and_config(["--config", str(config), "--use_cpu", "true"])
    assert (model.lora_r, model.lora_target_modules) == (8, "all-linear")
    assert (training.num_train_epochs, training.per_device_train_batch_size) == (3, 1)
    assert (training.gradient_accumulation_steps, training.learning_rate) == (8, 1e-4)
    assert (str(training.lr_scheduler_type.value), training.warmup_steps) == ("cosine", 0.1)
    assert (training.max_length, training.bf16, training.gradient_checkpointing) == (2048, True, True)


def test_unknown_yaml_key_fails(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("output_dir: out\nlora_rank: 8\n")  # TRL's key is lora_r
    with pytest.raises(ValueError, match="lora_rank"):
        parser_for(CONFIGS[0]).parse_args_and_config(["--config", str(config)])


@pytest.mark.slow
def test_broken_config_gives_one_error_line(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("output_dir: out\nlearning_rate_typo: 1\n")
    done = subprocess.run(
        [sys.executable, str(ROOT / "recipes/sft_rtce.py"), "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "learning_rate_typo" in errors[0]
    assert "Traceback" not in done.stderr


def test_debug_shows_the_traceback_behind_the_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--debug` (anywhere) or KT_DEBUG=1 on a recipe: the same error line, with the traceback before it."""
    monkeypatch.setenv("KT_DEBUG", "0")  # --debug sets it to 1 for child processes: undone after the test
    config = tmp_path / "config.yaml"
    config.write_text("output_dir: out\nlearning_rate_typo: 1\n")
    recipe = load_recipe("sft_rtce")
    assert launch(recipe.main, recipe.SCRIPT_ARGUMENTS, ["--config", str(config)]) == 2
    plain = capsys.readouterr().err
    assert "learning_rate_typo" in plain and "Traceback" not in plain and "--debug" in plain
    assert launch(recipe.main, recipe.SCRIPT_ARGUMENTS, ["--config", str(config), "--debug"]) == 2
    debug = capsys.readouterr().err
    assert "Traceback (most recent call last)" in debug and "learning_rate_typo" in debug.splitlines()[-1]


def _launch_with(config: str, tmp_path: Path) -> int:
    path = tmp_path / "config.yaml"
    path.write_text(config)
    recipe = load_recipe("sft_rtce")
    try:
        return launch(recipe.main, recipe.SCRIPT_ARGUMENTS, ["--config", str(path)])
    except SystemExit as exc:  # argparse's own exit, after its one line (see RecipeParser)
        return int(exc.code or 0)


BAD_VALUES = {  # config -> its one error line (was: a traceback, an error only once the model had loaded, or 155
    # lines of usage before the error)
    "output_dir: out\nlearning_rate: [1, 2\n": r"the config is not valid YAML: .*line \d+",
    "output_dir: out\nlearning_rate: [1, 2]\n": "learning_rate must be int or float, not list",
    "output_dir: out\nmax_steps: many\n": "argument --max_steps/--max-steps: invalid int value: 'many'",
    "output_dir: out\nlora_r: eight\n": "invalid int value: 'eight'",
    "output_dir: out\nevaluations: [kt]\n": r"evaluations: kt not available here \(this recipe runs: rtce\)",
    "output_dir: out\nalgorithms: [rle]\nmax_steps_by_algorithm: {lzx: 8}\n": "max_steps_by_algorithm maps algorithms",
    "output_dir: out\nmax_steps_by_algorithm: {rle: 0}\n": "max_steps_by_algorithm maps algorithms",
    "output_dir: out\nmodel_name_or_path: /no/such/model\n": "model '/no/such/model': no such folder",
    "output_dir: out\nmodel_name_or_path: nobody/no-model\n": "'nobody/no-model' is not in the local hub cache",
}


@pytest.mark.parametrize(("config", "expected"), BAD_VALUES.items(), ids=range(len(BAD_VALUES)))
def test_bad_values_are_one_line_before_anything_loads(
    config: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _launch_with(config, tmp_path) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(expected, err[0]), err


@pytest.mark.parametrize("dataset", ["missing", "corrupt"])
def test_a_missing_or_corrupt_dataset_is_one_line_and_exit_status_2(
    dataset: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bad input like any other (issue 38: these exited 1, as if kt-train had failed)."""
    path = tmp_path / dataset
    if dataset == "corrupt":
        (path / "data").mkdir(parents=True)
        (path / "data" / "train-00000-of-00001.parquet").write_bytes(b"not parquet")
    recipe = load_recipe("sft_kt")
    argv = ["--config", str(ROOT / "recipes/seqcoder-tiny/sft_kt/config_10k.yaml"), "--dataset_name", str(path)]
    assert launch(recipe.main, recipe.SCRIPT_ARGUMENTS, [*argv, "--output_dir", str(tmp_path / "out")]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and str(path) in errors[0] and "DatasetUnavailableError" not in errors[0], errors


CPU_CONFIGS = [c for c in CONFIGS if "accelerate_configs/cpu.yaml" in c.read_text()]  # launched on one CPU process


def test_cpu_configs_train_on_micro_batches_of_one_row_with_a_set_thread_count() -> None:
    """Micro-batches of one row (no padding: 1.6x faster than two padded rows here, half the memory), the effective
    batch kept by gradient accumulation, and the torch threads chosen (was: 2 x 4 and whatever accelerate chose)."""
    assert {c.relative_to(ROOT / "recipes").parts[1] for c in CPU_CONFIGS} == {
        "sft_kt",
        "sft_nl",
        "sft_rtce",
        "grpo_kt",
        "grpo_nl",
        "grpo_rtce",
    }
    for config in CPU_CONFIGS:
        values = yaml.safe_load(config.read_text())
        assert values["per_device_train_batch_size"] == 1, config
        assert values["torch_threads"] == 1, config
    effective = {"sft_kt/config_10k.yaml": 8, "sft_nl/config_qlora_cpu.yaml": 4, "grpo_rtce/config_cpu.yaml": 4}
    for name, rows in effective.items():
        assert (
            yaml.safe_load((ROOT / "recipes/smollm2-135m" / name).read_text())["gradient_accumulation_steps"] == rows
        )


def test_torch_threads_apply_to_the_recipe_and_the_processes_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`torch_threads: 1`: the recipe's torch and its evaluation's (a separate process) run one thread each."""
    monkeypatch.setenv("OMP_NUM_THREADS", "2")  # as `accelerate launch` sets it on 2 cores; restored after the test
    before = torch.get_num_threads()
    seen: list[int] = []

    def main(script_args: Any, training_args: SFTConfig, model_args: Any) -> None:
        probe = "import torch; print(torch.get_num_threads())"
        child = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
        seen.extend([torch.get_num_threads(), int(child.stdout)])

    recipe = load_recipe("sft_kt")
    try:
        argv = ["--output_dir", str(tmp_path), "--torch_threads", "1"]
        assert launch(main, recipe.SCRIPT_ARGUMENTS, argv) == 0
    finally:
        torch.set_num_threads(before)
    assert seen == [1, 1]
    assert launch(main, recipe.SCRIPT_ARGUMENTS, ["--output_dir", str(tmp_path), "--torch_threads", "0"]) == 2


@pytest.mark.slow
def test_the_main_job_drops_fewer_than_5_percent_of_its_rows(tmp_path: Path) -> None:
    """`make demo`'s config: its corpus (same settings, fewer inputs: one per category) fits `max_length`; fewer
    than 5% of the rows dropped (was: 325 of 400 LZW rows over 1,280 tokens with the paper's full-length inputs)."""
    from kt_train.models import get_tokenizer
    from kt_train.training.data import drop_longer_than, load_training_dataset, to_prompt_completion
    from tracegen.pipeline import build_rtce_sft_corpus

    config = ROOT / "recipes/smollm2-135m/sft_rtce/config_cpu.yaml"
    script_args, training_args, model_args = parser_for(config).parse_args_and_config(["--config", str(config)])
    settings = dataclasses.replace(script_args.corpus_settings(), num_inputs=56)
    corpus = build_rtce_sft_corpus(tmp_path / "corpus", settings, workers=2, progress=False) / "sft"
    tokenizer = get_tokenizer(model_args.model_name_or_path)
    for algorithm in script_args.algorithms:
        rows = to_prompt_completion(load_training_dataset(str(corpus / algorithm), "train"))
        _, dropped = drop_longer_than(rows, tokenizer, training_args.max_length)
        assert len(rows) >= 90 and dropped < 0.05 * len(rows), (algorithm, dropped, len(rows))


def test_the_evaluation_scores_each_algorithm_its_adapter_and_checkpoints(tmp_path: Path) -> None:
    """Per-algorithm adapters and one shared adapter: every algorithm is labelled with its run's folder, and each
    saved checkpoint before the last as `<algorithm>@<step>`, with the step of every label."""
    recipe = load_recipe("sft_rtce")

    def saved(folder: Path, step: int) -> None:
        folder.mkdir(parents=True)
        (folder / "trainer_state.json").write_text(json.dumps({"global_step": step}))
        (folder / "adapter_config.json").write_text("{}")

    for name in ("rle", "all"):
        saved(tmp_path / name, 32)
        saved(tmp_path / name / "checkpoint-16", 16)
        saved(tmp_path / name / "checkpoint-32", 32)
    adapters, steps = recipe.evaluated_adapters(tmp_path, {"rle": ["rle"]}, checkpoints=True)
    assert adapters == {"rle": str(tmp_path / "rle"), "rle@16": str(tmp_path / "rle" / "checkpoint-16")}
    assert steps == {"rle": 32, "rle@16": 16}
    adapters, steps = recipe.evaluated_adapters(tmp_path, {"all": ["lzw", "rle"]}, checkpoints=True)
    assert adapters == {
        "lzw": str(tmp_path / "all"),
        "rle": str(tmp_path / "all"),
        "lzw@16": str(tmp_path / "all" / "checkpoint-16"),
        "rle@16": str(tmp_path / "all" / "checkpoint-16"),
    }
    assert steps == {"lzw": 32, "rle": 32, "lzw@16": 16, "rle@16": 16}
    assert recipe.evaluated_adapters(tmp_path, {"rle": ["rle"]}, checkpoints=False) == (
        {"rle": str(tmp_path / "rle")},
        {},
    )
    parser = parser_for(ROOT / "recipes/smollm2-135m/sft_rtce/config_cpu.yaml")
    script_args, _, _ = parser.parse_args_and_config(["--adapters", "shared", "--algorithms", "rle", "lzw"])
    assert script_args.runs() == {"all": ["rle", "lzw"]}


def test_each_algorithm_can_train_its_own_number_of_steps(tmp_path: Path) -> None:
    """`max_steps_by_algorithm: {rle: 64}`: RLE's adapter trains 64 steps in its own folder, the others max_steps."""
    recipe = load_recipe("sft_rtce")
    config = tmp_path / "sft_rtce" / "config.yaml"  # parser_for finds the recipe by the config's folder
    config.parent.mkdir()
    values = yaml.safe_load((ROOT / "recipes/smollm2-135m/sft_rtce/config_cpu.yaml").read_text())
    config.write_text(yaml.safe_dump(values | {"max_steps": 20, "max_steps_by_algorithm": {"rle": 64}}))
    script_args, training_args, _ = parser_for(config).parse_args_and_config(["--config", str(config)])
    steps = {
        name: recipe.adapter_args(training_args, name, script_args.max_steps_by_algorithm.get(name)).max_steps
        for name in script_args.runs()
    }
    assert steps == {"lzw": 20, "ae": 20, "rle": 64, "huffman": 20} and training_args.max_steps == 20
    with pytest.raises(ValueError, match="needs adapters: per_algorithm"):
        parser_for(config).parse_args_and_config(["--config", str(config), "--adapters", "shared"])
    for text, expected in (("{rle: 3}", {"rle": 3}), ('{"huffman": 5}', {"huffman": 5}), ("{}", {})):
        script_args, _, _ = parser_for(config).parse_args_and_config(
            ["--config", str(config), "--max_steps_by_algorithm", text]
        )
        assert script_args.max_steps_by_algorithm == expected  # the command line overrides the YAML mapping
    script_args, _, _ = parser_for(config).parse_args_and_config(["--config", str(config), "--algorithms", "lzw"])
    assert script_args.max_steps_by_algorithm == {}  # RLE's steps do not apply when RLE is not trained
    with pytest.raises(ValueError, match="is a mapping"):
        parser_for(config).parse_args_and_config(["--config", str(config), "--max_steps_by_algorithm", "[3]"])


@pytest.mark.parametrize("task", ["sft_rtce", "grpo_rtce"])
def test_the_rtce_recipes_default_corpus_is_the_pipelines(task: str) -> None:
    """The recipes restate no corpus default: each corpus field of their arguments defaults to CorpusSettings'."""
    from tracegen.pipeline import CorpusSettings

    recipe = load_recipe(task)
    arguments = next(c for name, c in vars(recipe).items() if name.startswith("RTCE") and name.endswith("Arguments"))
    defaults = {f.name: f.default for f in dataclasses.fields(arguments)}
    corpus = {"seed": "corpus_seed"}
    for field in dataclasses.fields(CorpusSettings):
        name = corpus.get(field.name, field.name)
        if name in defaults:
            assert defaults[name] == field.default, name
    assert {"corpus_seed", "num_inputs", "eval_fraction", "prompt_style"} <= set(defaults)
