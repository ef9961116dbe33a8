"""The weights a run saves are the weights it trained: none empty, the same logits once loaded afresh, in this
process or (under ZeRO-3) in a child process."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from peft import LoraConfig, get_peft_model
from safetensors.torch import load_file, save_file

from dsl.seqcoder_model import SeqCoderInit, init_seqcoder
from kt_train.training.saved_weights import (
    SavedWeightsError,
    check_reloads,
    check_reloads_fresh,
    check_saved_weights,
    probe_inputs,
    probe_logits,
    reload_tolerance,
)


def test_an_empty_saved_adapter_fails_in_one_line(tmp_path: Path) -> None:
    """The known ZeRO-3 failure (TRL #4416): tensors of shape (0,) saved for the adapter."""

    whole = {"a.lora_A.weight": torch.ones(2, 4), "a.lora_B.weight": torch.zeros(4, 2)}
    save_file(whole, str(tmp_path / "adapter_model.safetensors"))
    check_saved_weights(tmp_path)
    save_file({**whole, "a.lora_B.weight": torch.zeros(0)}, str(tmp_path / "adapter_model.safetensors"))
    with pytest.raises(SavedWeightsError, match=r"1 of 2 tensors hold no values"):
        check_saved_weights(tmp_path)


def test_saved_weights_that_do_not_give_the_trained_outputs_fail_in_one_line(tmp_path: Path) -> None:
    """The path of a single process: the saved weights loaded afresh here, the adapter onto its base."""
    model, tokenizer = init_seqcoder(SeqCoderInit(size="tiny", seed=0))
    model.save_pretrained(tmp_path / "whole")
    check_reloads(model, tokenizer, tmp_path / "whole", None)
    other, _ = init_seqcoder(SeqCoderInit(size="tiny", seed=1))
    other.save_pretrained(tmp_path / "whole")  # weights of another model where this one's belong
    with pytest.raises(SavedWeightsError, match="do not give the trained model's outputs"):
        check_reloads(model, tokenizer, tmp_path / "whole", None)

    model.save_pretrained(tmp_path / "base")
    adapted = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
    adapted.save_pretrained(tmp_path / "adapter")
    check_reloads(adapted, tokenizer, tmp_path / "adapter", str(tmp_path / "base"))
    saved = load_file(tmp_path / "adapter" / "adapter_model.safetensors")
    dropped = {k: torch.zeros_like(v) if "lora_B" in k else v for k, v in saved.items()}  # half the update lost
    save_file(dropped, str(tmp_path / "adapter" / "adapter_model.safetensors"))
    with pytest.raises(SavedWeightsError, match="largest logit difference"):
        check_reloads(adapted, tokenizer, tmp_path / "adapter", str(tmp_path / "base"))
    assert adapted.training  # the model is left in the mode it was in


def test_the_probe_runs_in_the_weights_dtype_not_under_mixed_precision_autocast() -> None:
    """accelerate's mixed precision wraps `forward` in bfloat16 autocast; the saved float32 weights reload without
    it, so the trained logits are taken from the unwrapped forward."""
    from types import MethodType

    from accelerate.utils import convert_outputs_to_fp32

    model, tokenizer = init_seqcoder(SeqCoderInit(size="tiny", seed=0))
    inputs = probe_inputs(tokenizer)
    plain = probe_logits(model, inputs)
    model._original_forward = model.forward
    autocast = torch.autocast("cpu", dtype=torch.bfloat16)(model.forward.__func__)
    model.forward = MethodType(convert_outputs_to_fp32(autocast), model)
    assert (model(**inputs).logits.float() - plain).abs().max() > 1e-3  # the wrapped forward is bfloat16
    assert torch.equal(probe_logits(model, inputs), plain)


def test_a_bfloat16_model_is_compared_to_two_units_in_the_last_place() -> None:
    logits = torch.tensor([[30.0, -2.0]])
    assert reload_tolerance(logits, "float32") == 1e-5
    assert reload_tolerance(logits, "bfloat16") == 0.25  # ulp of bfloat16 in [16, 32) is 0.125


@pytest.mark.slow
def test_saved_weights_loaded_afresh_in_a_child_process_give_the_trained_outputs_or_fail_in_one_line(
    tmp_path: Path,
) -> None:
    """The ZeRO-3 path: the trained logits computed here, the saved weights loaded in another process."""
    model, tokenizer = init_seqcoder(SeqCoderInit(size="tiny", seed=0))
    inputs = probe_inputs(tokenizer)
    model.save_pretrained(tmp_path / "base")
    check_reloads_fresh(probe_logits(model, inputs), inputs, tmp_path / "base", None, "float32")
    other, _ = init_seqcoder(SeqCoderInit(size="tiny", seed=1))
    with pytest.raises(SavedWeightsError, match="largest logit difference"):
        check_reloads_fresh(probe_logits(other, inputs), inputs, tmp_path / "base", None, "float32")

    adapted = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
    adapted.save_pretrained(tmp_path / "adapter")
    expected = probe_logits(adapted, inputs)
    check_reloads_fresh(expected, inputs, tmp_path / "adapter", str(tmp_path / "base"), "float32")
    saved = load_file(tmp_path / "adapter" / "adapter_model.safetensors")
    dropped = {k: torch.zeros_like(v) if "lora_B" in k else v for k, v in saved.items()}
    save_file(dropped, str(tmp_path / "adapter" / "adapter_model.safetensors"))
    with pytest.raises(SavedWeightsError, match="largest logit difference"):
        check_reloads_fresh(expected, inputs, tmp_path / "adapter", str(tmp_path / "base"), "float32")
    with pytest.raises(SavedWeightsError, match="could not be reloaded"):  # no base to load the adapter onto
        check_reloads_fresh(expected, inputs, tmp_path / "adapter", None, "float32")
