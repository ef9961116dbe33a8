"""What the vLLM and OpenAI-backend tests share: prompts, a small random LoRA adapter, the reference texts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kt_train.generation import SamplingConfig, TransformersBackend, chat_messages

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
CONTEXT = 4608
"""The test engines' context (`max_model_len`), in process and served: more than the 4,096 tokens vLLM prefills in
one step, so that a prompt near it is prefilled in parts when chunked prefill is on."""


def chat_tokens(prompt: str) -> int:
    """Tokens of `prompt` in the embedded model's chat template (its default system message included)."""
    from kt_train.models import get_tokenizer

    tokenizer = get_tokenizer(NAME)
    text = tokenizer.apply_chat_template(chat_messages(prompt), tokenize=False, add_generation_prompt=True)
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def prompt_of_tokens(tokens: int) -> str:
    """A prompt that is exactly `tokens` tokens long in the chat template (" x" is one token)."""
    prompt = "Continue this list:"
    prompt += " x" * (tokens - chat_tokens(prompt))
    assert chat_tokens(prompt) == tokens
    return prompt


def edge_prompts() -> list[str]:
    """Prompts at the end of the context: room for 10 new tokens, a prompt over the context, room for one."""
    return [prompt_of_tokens(CONTEXT - 10), prompt_of_tokens(CONTEXT + 5), prompt_of_tokens(CONTEXT - 1)]


def save_random_adapter(folder: Path, seed: int = 0, rank: int = 8) -> Path:
    """A rank-`rank` LoRA of the embedded model on q/v with random A and B (it changes the greedy texts)."""
    import torch
    from peft import LoraConfig, get_peft_model

    from kt_train.models import get_model

    torch.manual_seed(seed)
    config = LoraConfig(r=rank, lora_alpha=2 * rank, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
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
        context: int | None = None,
    ) -> list[list[str] | None]:
        key = (tuple(prompts), repr(sampling), system_prompt, chat, adapted, context)
        if key not in self._texts:
            backend = TransformersBackend(
                self._model(adapted),
                batch_size=len(prompts),
                apply_chat_template=chat,
                system_prompt=system_prompt,
                max_model_len=context,
            )
            self._texts[key] = backend.generate(prompts, sampling)
        return self._texts[key]
