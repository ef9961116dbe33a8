"""Models and tokenizers for training, from TRL's ModelConfig: full, LoRA or QLoRA (4-bit NF4 base)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, PreTrainedModel, PreTrainedTokenizerBase
from trl import ModelConfig, get_quantization_config

from kt_train.chat_templates import training_chat_template
from kt_train.configs import TrainingConfig, model_name
from kt_train.models import get_tokenizer, resolve_model_path

logger = logging.getLogger(__name__)


def model_dtype(model_args: ModelConfig) -> Any:
    """The torch dtype of ModelConfig.dtype ("auto" and None pass through)."""
    if model_args.dtype in ("auto", None):
        return model_args.dtype
    return getattr(torch, model_args.dtype)


def get_training_tokenizer(model_args: ModelConfig, training_args: TrainingConfig) -> PreTrainedTokenizerBase:
    """The model's tokenizer with a pad token and its own chat template, unless the config overrides it with
    `chat_template_path`: a .jinja file is applied here (so lengths are measured with it), a model folder or hub id
    is cloned by TRL's SFTTrainer. Either way with no default system prompt, or `system_prompt` as the default one
    (`kt_train.chat_templates.training_chat_template`)."""
    tokenizer = get_tokenizer(model_name(model_args))
    template = getattr(training_args, "chat_template_path", None)  # SFTConfig has it, GRPOConfig does not
    if template is not None and template.endswith((".jinja", ".j2")):
        if not os.path.isfile(template):
            raise FileNotFoundError(f"chat_template_path {template}: no such file")
        tokenizer.chat_template = Path(template).read_text(encoding="utf-8")
    tokenizer.chat_template = training_chat_template(tokenizer, training_args.system_prompt)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def get_training_model(model_args: ModelConfig, training_args: TrainingConfig) -> PreTrainedModel:
    """Load the base model (4-bit or 8-bit when asked: QLoRA); TRL adds the LoRA adapter from `get_peft_config`."""
    quantization_config = get_quantization_config(model_args)
    model = AutoModelForCausalLM.from_pretrained(
        resolve_model_path(model_name(model_args)),
        revision=model_args.model_revision,
        trust_remote_code=training_args.trust_remote_code,
        attn_implementation=model_args.attn_implementation,
        dtype=model_dtype(model_args),
        use_cache=not training_args.gradient_checkpointing,
        device_map=_kbit_device_map() if quantization_config is not None else None,
        quantization_config=quantization_config,
    )
    if quantization_config is not None:
        keep_4bit_trainable(model)
    return model


def merge_adapter(model: PreTrainedModel, adapter: str) -> PreTrainedModel:
    """`model` with the LoRA adapter saved in `adapter` merged into its weights (a later adapter trains on top)."""
    from peft import PeftModel

    if not os.path.isfile(os.path.join(adapter, "adapter_config.json")):
        raise FileNotFoundError(f"init_adapter {adapter}: no adapter_config.json (not a saved LoRA adapter)")
    if getattr(model, "is_loaded_in_4bit", False) or getattr(model, "is_loaded_in_8bit", False):
        raise ValueError("init_adapter cannot be merged into a quantized model; merge it first, then quantize")
    return PeftModel.from_pretrained(model, adapter).merge_and_unload()


def _kbit_device_map() -> dict[str, int] | None:
    """Quantized weights go to this process's GPU; None (CPU) without one."""
    if not torch.cuda.is_available():
        return None
    from accelerate import PartialState

    return {"": PartialState().local_process_index}


def keep_4bit_trainable(model: torch.nn.Module) -> int:
    """Stop bitsandbytes from repacking 4-bit weights for CPU inference; return the number of layers changed.

    On CPUs with AVX512-BF16, a no-grad forward in eval mode (e.g. `generate` before training) converts each
    Linear4bit weight in place to a packed inference layout through which no gradient flows back: training then
    silently updates only the adapters of the last layers. Turning the conversion off keeps every layer trainable.
    """
    changed = 0
    for module in model.modules():
        if getattr(module, "support_avx512bf16_for_cpu", False):
            module.support_avx512bf16_for_cpu = False
            changed += 1
    return changed


def packed_for_inference(model: torch.nn.Module) -> list[str]:
    """Names of 4-bit layers whose weights were already repacked for CPU inference (no longer trainable)."""
    names = []
    for name, module in model.named_modules():
        weight = getattr(module, "weight", None)
        state = getattr(weight, "quant_state", None)
        if state is not None and getattr(state, "packing_format_for_cpu", False):
            names.append(name)
    return names


def check_trainable(model: torch.nn.Module) -> None:
    """Raise if a 4-bit layer was repacked for inference before training (see `keep_4bit_trainable`)."""
    packed = packed_for_inference(model)
    if packed:
        raise RuntimeError(
            f"{len(packed)} 4-bit layers (e.g. {packed[0]}) were repacked for CPU inference by a no-grad forward "
            "before training, so gradients cannot flow through them; load the model with get_training_model (which "
            "prevents this) or reload it before training"
        )
