"""What the vLLM and OpenAI-backend tests share: prompts, a small random LoRA adapter, the reference backends."""

from __future__ import annotations

from pathlib import Path

from kt_train.generation import SamplingConfig, TransformersBackend, get_backend

NAME = "smollm2-135m-instruct"
PROMPTS = [
    "What is 2+2?",
    "Name a color.",
    "Write a Python function that reverses a string.",
    "Translate 'cat' to French.",
    "List three prime numbers.",
    "What is the capital of France?",
    "Explain recursion in one sentence.",
    "Count from 1 to 5.",
]
GREEDY = SamplingConfig(temperature=0, max_new_tokens=32)
SAMPLED = SamplingConfig(temperature=0.8, max_new_tokens=16, n=3, seed=7)
SYSTEM = "You answer in French."


def save_random_adapter(folder: Path) -> Path:
    """A rank-8 LoRA of the embedded model on q/v with random A and B (it changes the greedy texts)."""
    import torch
    from peft import LoraConfig, get_peft_model

    from kt_train.models import get_model

    torch.manual_seed(0)
    config = LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    get_peft_model(get_model(NAME, dtype="float32"), config).save_pretrained(folder)
    return folder


def transformers_reference(**kwargs: object) -> TransformersBackend:
    """The transformers backend in float32, the dtype the vLLM backend gets on CPU."""
    backend = get_backend("transformers", NAME, dtype="float32", batch_size=len(PROMPTS), **kwargs)
    assert isinstance(backend, TransformersBackend)
    return backend
