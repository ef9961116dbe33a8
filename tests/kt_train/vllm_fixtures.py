"""What the vLLM and OpenAI-backend tests share: prompts, a small random LoRA adapter, the reference texts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kt_train.generation import SamplingConfig, TransformersBackend

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
RAW_PROMPTS = ["The capital of France is", "def fibonacci(n):"]
STOP_PROMPTS = ["Count from 1 to 10, separated by commas.", "Count from 1 to 5."]
GREEDY = SamplingConfig(temperature=0, max_new_tokens=32)
SAMPLED = SamplingConfig(temperature=0.8, max_new_tokens=16, n=3, seed=7)
STOPPED = SamplingConfig(temperature=0, max_new_tokens=48, stop=["4", "\n\n"])
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


class ReferenceTexts:
    """Greedy texts of the transformers backend in float32 (the dtype the vLLM engine gets on CPU), each made once
    per test session: the base model with or without the chat template or a system prompt, and the adapter merged."""

    def __init__(self, adapter: Path) -> None:
        self.adapter = adapter
        self._models: dict[bool, Any] = {}
        self._texts: dict[tuple[Any, ...], list[list[str] | None]] = {}

    def _model(self, adapted: bool) -> Any:
        if adapted not in self._models:
            from peft import PeftModel

            from kt_train.models import get_model

            model = get_model(NAME, dtype="float32")
            self._models[adapted] = (
                PeftModel.from_pretrained(model, self.adapter).merge_and_unload() if adapted else model
            )
        return self._models[adapted]

    def __call__(
        self,
        prompts: list[str],
        sampling: SamplingConfig = GREEDY,
        system_prompt: str | None = None,
        chat: bool = True,
        adapted: bool = False,
    ) -> list[list[str] | None]:
        key = (tuple(prompts), repr(sampling), system_prompt, chat, adapted)
        if key not in self._texts:
            backend = TransformersBackend(
                self._model(adapted), batch_size=len(prompts), apply_chat_template=chat, system_prompt=system_prompt
            )
            self._texts[key] = backend.generate(prompts, sampling)
        return self._texts[key]
