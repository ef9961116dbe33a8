"""SFT runtime on the real embedded model: LoRA steps, adapter save/reload/merge, resume, W&B offline, QLoRA."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from datasets import Dataset
from peft import PeftModel
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig
from trl import ModelConfig

from kt_train.cli import main
from kt_train.configs import DataArguments, SFTConfig
from kt_train.models import DEFAULT_MODEL, get_model, get_tokenizer
from kt_train.training.run_settings import SettingsMismatch, wandb_run_id
from kt_train.training.sft import SFTRun, run_sft
from tests.wandb_records import run_records

PROBE = "Question: what is 7 + 8? Answer:"


def chat_dataset(rows: int = 24) -> Dataset:
    chats = []
    for i in range(rows):
        a, b = i % 7 + 1, i % 5 + 2
        chats.append(
            [{"role": "user", "content": f"What is {a} + {b}?"}, {"role": "assistant", "content": f"{a + b}"}]
        )
    return Dataset.from_dict({"messages": chats})


def training_args(output_dir: Path, **overrides: object) -> SFTConfig:
    values: dict[str, object] = {
        "output_dir": str(output_dir),
        "max_steps": 2,
        "per_device_train_batch_size": 4,
        "learning_rate": 1e-3,
        "max_length": 128,
        "logging_steps": 1,
        "save_steps": 1,
        "report_to": [],
        "use_cpu": True,
        "seed": 7,
        "disable_tqdm": True,
    }
    values.update(overrides)
    return SFTConfig(**values)


LORA = ModelConfig(use_peft=True, lora_r=8, lora_alpha=16, lora_dropout=0.0, lora_target_modules=["all-linear"])


def _probe_logits(model: torch.nn.Module) -> torch.Tensor:
    tokenizer = get_tokenizer(DEFAULT_MODEL)
    ids = tokenizer(PROBE, return_tensors="pt")
    model.eval()
    with torch.no_grad():
        return model(**ids).logits


@pytest.fixture(scope="module")
def lora_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[SFTRun, Path, dict[str, torch.Tensor]]:
    output = tmp_path_factory.mktemp("lora")
    base_before = {k: v.clone() for k, v in get_model(DEFAULT_MODEL).state_dict().items()}
    run = run_sft(chat_dataset(), DataArguments(), training_args(output), LORA, dataset_name="arith", tags=["test"])
    return run, output, base_before


def test_lora_step_changes_adapter_and_not_base(lora_run: tuple[SFTRun, Path, dict[str, torch.Tensor]]) -> None:
    run, output, base_before = lora_run
    adapter = load_file(output / "adapter_model.safetensors")
    lora_b = {k: v for k, v in adapter.items() if "lora_B" in k}
    assert len(lora_b) == 30 * 7  # every linear layer of the 30 blocks
    assert all(v.abs().sum() > 0 for v in lora_b.values())  # B starts at zero: training moved every one
    base_after = run.trainer.model.get_base_model().state_dict()
    frozen = {k.replace(".base_layer", ""): v for k, v in base_after.items() if "lora_" not in k}
    assert set(frozen) == set(base_before)
    assert all(torch.equal(frozen[k], base_before[k]) for k in base_before)
    assert run.metrics["train_samples"] == 24
    assert run.trainer.state.global_step == 2


def test_saved_outputs(lora_run: tuple[SFTRun, Path, dict[str, torch.Tensor]]) -> None:
    _, output, _ = lora_run
    for name in ("adapter_config.json", "train_results.json", "trainer_state.json", "README.md", "tokenizer.json"):
        assert (output / name).is_file(), name
    generation = json.loads((output / "generation_config.json").read_text())
    assert generation["eos_token_id"] == get_tokenizer(DEFAULT_MODEL).eos_token_id
    card = (output / "README.md").read_text()
    assert "kt-train" in card and "None" not in card
    assert f"# {output.name}\n" in card and "on `arith`" in card  # the model and its data
    assert "[HuggingFaceTB/SmolLM2-135M-Instruct](https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct)" in card
    assert "base_model: HuggingFaceTB/SmolLM2-135M-Instruct" in card and "datasets:" not in card  # a local name
    assert "SmolLM2-135M-Instruct.Q4_1.gguf" in card and "- train_loss: " in card and "## Training\n\n```\n" in card
    assert f'AutoPeftModelForCausalLM.from_pretrained("{output}")' in card
    adapter_config = json.loads((output / "adapter_config.json").read_text())
    assert adapter_config["base_model_name_or_path"] == "HuggingFaceTB/SmolLM2-135M-Instruct"  # not a cache path


def test_trained_rows_have_no_default_system_prompt(lora_run: tuple[SFTRun, Path, dict[str, torch.Tensor]]) -> None:
    """The rows SFTTrainer trained on open with the user turn (was: SmolLM2's default system prompt in every row)."""
    run, _, _ = lora_run
    text = get_tokenizer(DEFAULT_MODEL).decode(run.trainer.train_dataset[0]["input_ids"])
    assert text.startswith("<|im_start|>user\nWhat is ") and "SmolLM" not in text


@pytest.mark.slow
def test_kt_export_merge(
    lora_run: tuple[SFTRun, Path, dict[str, torch.Tensor]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The adapter merged into its base: a plain transformers folder with the trained logits, the run's tokenizer and
    generation config, a card; offline, the hub id the adapter names is refused in one line naming the embedded
    copy."""
    run, output, _ = lora_run
    merged = tmp_path / "merged"
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-hub"))  # no hub cache: the base is not there offline
    command = ["export", "merge", "--adapter", str(output), "--output", str(merged)]
    assert main(command) == 2 and not merged.exists()
    assert "--model smollm2-135m-instruct" in capsys.readouterr().err
    assert main([*command, "--model", DEFAULT_MODEL]) == 0
    model = AutoModelForCausalLM.from_pretrained(merged, dtype=torch.float32)
    assert not hasattr(model, "peft_config")
    assert torch.allclose(_probe_logits(model), _probe_logits(run.trainer.model), atol=1e-4)
    assert GenerationConfig.from_pretrained(merged).eos_token_id == get_tokenizer(DEFAULT_MODEL).eos_token_id
    assert AutoTokenizer.from_pretrained(merged).chat_template == AutoTokenizer.from_pretrained(output).chat_template
    assert "SmolLM" not in AutoTokenizer.from_pretrained(merged).chat_template  # trained without the default prompt
    card = (merged / "README.md").read_text()
    assert f"The LoRA adapter `{output}` merged into [HuggingFaceTB/SmolLM2-135M-Instruct]" in card
    assert "library_name: transformers" in card and "- train_loss: " in card
    assert main([*command, "--model", DEFAULT_MODEL]) == 2  # the output folder exists: refused


def test_adapter_save_reload_merge_same_logits(lora_run: tuple[SFTRun, Path, dict[str, torch.Tensor]]) -> None:
    run, output, _ = lora_run
    trained = _probe_logits(run.trainer.model)
    reloaded = PeftModel.from_pretrained(get_model(DEFAULT_MODEL, dtype="float32"), str(output))
    assert torch.allclose(_probe_logits(reloaded), trained, atol=1e-4)
    merged = reloaded.merge_and_unload()
    assert torch.allclose(_probe_logits(merged), trained, atol=1e-4)
    assert not torch.allclose(_probe_logits(get_model(DEFAULT_MODEL, dtype="float32")), trained, atol=1e-3)


@pytest.mark.slow
def test_resume_continues_the_step_count(lora_run: tuple[SFTRun, Path, dict[str, torch.Tensor]], tmp_path: Path):
    _, output, _ = lora_run
    resumed_dir = tmp_path / "resumed"
    shutil.copytree(output, resumed_dir)
    shutil.rmtree(resumed_dir / "checkpoint-2")  # as if killed after step 1: resume from checkpoint-1
    (resumed_dir / "train_results.json").unlink()
    run = run_sft(chat_dataset(), DataArguments(), training_args(resumed_dir), LORA, dataset_name="arith")
    assert run.trainer.state.global_step == 2
    steps = [entry["step"] for entry in run.trainer.state.log_history if "loss" in entry]
    assert steps == [1, 2]  # step 1 from the checkpoint's history, 2 trained now
    state = json.loads((resumed_dir / "trainer_state.json").read_text())
    assert state["global_step"] == 2
    before = json.loads((output / "trainer_state.json").read_text())["log_history"]
    assert [e["loss"] for e in state["log_history"] if "loss" in e] == pytest.approx(
        [e["loss"] for e in before if "loss" in e], rel=1e-4
    )  # the resumed run is the run it continues


def test_a_finished_run_is_not_trained_further(lora_run: tuple[SFTRun, Path, dict[str, torch.Tensor]]) -> None:
    """Rerunning with the same settings (was: resumed from checkpoint-2, a third step at learning rate 0, the
    adapter overwritten)."""
    run, output, _ = lora_run
    adapter = (output / "adapter_model.safetensors").read_bytes()
    again = run_sft(chat_dataset(), DataArguments(), training_args(output), LORA, dataset_name="arith")
    assert again.trainer is None and again.metrics["train_samples"] == run.metrics["train_samples"]
    assert (output / "adapter_model.safetensors").read_bytes() == adapter
    assert json.loads((output / "trainer_state.json").read_text())["global_step"] == 2


@pytest.mark.slow
def test_other_settings_are_refused_then_started_afresh(
    lora_run: tuple[SFTRun, Path, dict[str, torch.Tensor]], tmp_path: Path
) -> None:
    """A changed learning rate (was: silently ignored, the old run resumed)."""
    _, output, _ = lora_run
    changed = tmp_path / "changed"
    shutil.copytree(output, changed)
    args = training_args(changed, learning_rate=2e-3)
    with pytest.raises(SettingsMismatch, match=r"learning_rate 0\.001 -> 0\.002"):
        run_sft(chat_dataset(), DataArguments(), args, LORA, dataset_name="arith")
    args = training_args(changed, learning_rate=2e-3, overwrite_output_dir=True)
    run = run_sft(chat_dataset(), DataArguments(), args, LORA, dataset_name="arith")
    assert run.trainer is not None and run.trainer.state.global_step == 2
    assert [e["step"] for e in run.trainer.state.log_history if "loss" in e] == [1, 2]  # both trained now


@pytest.mark.slow
def test_wandb_offline_run_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_DIR", "WANDB_PROJECT"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc: not logged in
    monkeypatch.setenv("NETRC", str(tmp_path / "missing-netrc"))
    for name in ("first", "second"):  # two runs in one process (as the RTCE recipe trains its adapters)
        output = tmp_path / name
        args = training_args(output, max_steps=1, report_to=["wandb"], wandb_project="kt-test", save_strategy="no")
        run_sft(chat_dataset(8), DataArguments(), args, LORA, dataset_name="arith")
    for name in ("first", "second"):
        runs = list((tmp_path / name / "wandb").glob("offline-run-*"))
        assert len(runs) == 1, name
        assert runs[0].name.endswith(f"-{wandb_run_id(tmp_path / name)}")  # the id a resumed run goes on with
        config = run_records(runs[0])["config"]
        assert config["run_name"] == name and config["dataset_name"] == "arith" and config["train_samples"] == 8
        assert config["script_args"]["drop_longer"] is True and config["model_args"]["lora_r"] == 8
        assert config["model_args"]["lora_target_modules"] == "all-linear" and config["learning_rate"] == 1e-3


@pytest.mark.slow
def test_a_resumed_run_logs_to_the_same_wandb_run_at_the_steps_it_trains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a kill the rerun goes on in the same W&B run (its id), its rows at the global steps it trains (W&B's x
    axis, `train/global_step`), with the losses of the uninterrupted run: the W&B step is restored (issue 38)."""
    monkeypatch.setenv("WANDB_MODE", "offline")
    output = tmp_path / "run"
    args = training_args(output, max_steps=3, report_to=["wandb"], wandb_project="kt-test")
    run_sft(chat_dataset(), DataArguments(), args, LORA, dataset_name="arith")
    for name in ("checkpoint-2", "checkpoint-3", "train_results.json"):  # as if killed after step 1's checkpoint
        shutil.rmtree(output / name) if (output / name).is_dir() else (output / name).unlink()
    run_sft(chat_dataset(), DataArguments(), args, LORA, dataset_name="arith")
    runs = sorted((output / "wandb").glob("offline-run-*"), key=lambda p: p.stat().st_mtime)
    assert len(runs) == 2 and all(run.name.endswith(f"-{wandb_run_id(output)}") for run in runs)
    first, resumed = ([row for row in run_records(run)["history"] if "train/loss" in row] for run in runs)
    assert [row["train/global_step"] for row in first] == [1, 2, 3]
    assert [row["train/global_step"] for row in resumed] == [2, 3]  # not 1, 2: the steps go on
    assert [row["train/loss"] for row in resumed] == pytest.approx([row["train/loss"] for row in first[1:]], rel=1e-4)


def test_rows_over_max_length_are_dropped(tmp_path: Path) -> None:
    from kt_train.training.sft import prepare_dataset

    long_chat = [{"role": "user", "content": "word " * 300}, {"role": "assistant", "content": "ok"}]
    dataset = Dataset.from_dict({"messages": [*chat_dataset(4)["messages"], long_chat]})
    tokenizer = get_tokenizer(DEFAULT_MODEL)
    prepared, dropped = prepare_dataset(dataset, DataArguments(), training_args(tmp_path), tokenizer)
    assert (len(prepared), dropped) == (4, 1)
    assert set(prepared.column_names) == {"prompt", "completion"}
    with pytest.raises(ValueError, match="no training rows"):
        prepare_dataset(
            Dataset.from_dict({"messages": [long_chat]}),
            DataArguments(),
            training_args(tmp_path),
            get_tokenizer(DEFAULT_MODEL),
        )


def test_chat_template_override(tmp_path: Path) -> None:
    from kt_train.training.model import get_training_tokenizer

    template = tmp_path / "plain.jinja"
    template.write_text("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}")
    args = training_args(tmp_path, chat_template_path=str(template))
    tokenizer = get_training_tokenizer(LORA, args)
    rendered = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False)
    assert rendered == "<user>hi\n"
    assert get_training_tokenizer(LORA, training_args(tmp_path)).chat_template != tokenizer.chat_template
    with pytest.raises(FileNotFoundError):
        get_training_tokenizer(LORA, training_args(tmp_path, chat_template_path=str(tmp_path / "missing.jinja")))


def test_dataset_folders_with_the_same_name_do_not_share_a_cache(tmp_path: Path) -> None:
    from kt_train.training.data import DatasetUnavailableError, load_training_dataset

    for parent, rows in (("a", 3), ("b", 5)):
        folder = tmp_path / parent / "rle"
        (folder / "data").mkdir(parents=True)
        (folder / "README.md").write_text("---\nconfigs:\n- config_name: default\n  data_files: data/*.parquet\n---\n")
        chat_dataset(rows).to_parquet(str(folder / "data" / "train-00000-of-00001.parquet"))
    assert [len(load_training_dataset(str(tmp_path / p / "rle"))) for p in ("a", "b", "a")] == [3, 5, 3]
    chat_dataset(4).to_json(str(tmp_path / "chats.jsonl"))
    assert len(load_training_dataset(str(tmp_path / "chats.jsonl"))) == 4
    with pytest.raises(DatasetUnavailableError, match="no such dataset"):
        load_training_dataset(str(tmp_path / "missing"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetUnavailableError, match="no data files"):
        load_training_dataset(str(tmp_path / "empty"))


def test_keep_freed_memory_on_glibc() -> None:
    import platform

    from kt_train.training.memory import keep_freed_memory

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("mallopt is glibc's")
    assert keep_freed_memory()


@pytest.mark.slow
def test_evaluation_during_training_on_held_out_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """eval_strategy steps with eval_split_size: rows held out of training with the seed, eval_loss logged each
    eval_steps, to the trainer's history and to W&B (was: no evaluation during training, no eval split passed)."""
    monkeypatch.setenv("WANDB_MODE", "offline")
    args = training_args(tmp_path, eval_strategy="steps", eval_steps=1, report_to=["wandb"], save_strategy="no")
    run = run_sft(chat_dataset(), DataArguments(eval_split_size=0.25), args, LORA, dataset_name="arith")
    train, held = run.trainer.train_dataset, run.trainer.eval_dataset
    assert (len(train), len(held), run.metrics["eval_samples"]) == (18, 6, 6)
    assert not {tuple(r) for r in train["input_ids"]} & {tuple(r) for r in held["input_ids"]}
    losses = [entry for entry in run.trainer.state.log_history if "eval_loss" in entry]
    assert [entry["step"] for entry in losses] == [1, 2] and all(entry["eval_loss"] > 0 for entry in losses)
    (wandb_run,) = (tmp_path / "wandb").glob("offline-run-*")
    logged = [row for row in run_records(wandb_run)["history"] if "eval/loss" in row]
    assert [row["eval/loss"] for row in logged] == pytest.approx([entry["eval_loss"] for entry in losses])
    assert run_records(wandb_run)["config"]["script_args"]["eval_split_size"] == 0.25


def test_evaluation_rows_from_the_test_split(tmp_path: Path) -> None:
    """A dataset folder with a `test` split evaluates on it (dataset_test_split); one without needs
    eval_split_size; without eval_strategy nothing is held out."""
    from kt_train.training.data import load_eval_split, load_training_dataset
    from kt_train.training.sft import prepare_datasets

    folder = tmp_path / "chats"
    (folder / "data").mkdir(parents=True)
    chat_dataset(8).to_parquet(str(folder / "data" / "train-00000-of-00001.parquet"))
    assert load_eval_split(str(folder), "test") is None
    chat_dataset(3).to_parquet(str(folder / "data" / "test-00000-of-00001.parquet"))
    train, test = load_training_dataset(str(folder)), load_eval_split(str(folder), "test")
    assert (len(train), len(test)) == (8, 3)
    tokenizer = get_tokenizer(DEFAULT_MODEL)
    few = DataArguments(max_eval_samples=2)
    assert len(prepare_datasets(train, test, few, training_args(tmp_path, eval_strategy="epoch"), tokenizer).eval) == 2
    evaluating = training_args(tmp_path, eval_strategy="steps", eval_steps=1)
    rows = prepare_datasets(train, test, DataArguments(eval_split_size=2), evaluating, tokenizer)
    assert (len(rows.train), len(rows.eval)) == (8, 3)  # the test split wins; nothing held out of training
    with pytest.raises(ValueError, match="needs evaluation rows"):
        prepare_datasets(train, None, DataArguments(), evaluating, tokenizer)
    rows = prepare_datasets(train, None, DataArguments(eval_split_size=2, max_train_samples=4), evaluating, tokenizer)
    assert (len(rows.train), len(rows.eval)) == (4, 2)
    rows = prepare_datasets(train, test, DataArguments(eval_split_size=2), training_args(tmp_path), tokenizer)
    assert (len(rows.train), rows.eval) == (8, None)
    with pytest.raises(ValueError, match="eval_split_size 8 holds out 8 of 8"):
        prepare_datasets(train, None, DataArguments(eval_split_size=8), evaluating, tokenizer)
