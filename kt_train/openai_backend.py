"""`OpenAIBackend`: any OpenAI-compatible server (`vllm serve`, SGLang, llama.cpp's server, hosted APIs).

Prompts go out concurrently (`max_concurrency` requests in flight), one request per prompt asking for `n` texts
(greedy: one, repeated). The `openai` client retries connection errors, 408/409/429 and 5xx with exponential backoff
(`max_retries`); what still fails raises `GenerationError`, which the callers' run folders record as a failed item
and make again on the next run. A prompt the server refuses as longer than the model's context gets None, as the
in-process backends give it (vLLM's server, like the engine, ends a text at the end of the context). With
`server_extensions` (vLLM's, also SGLang's) the request carries `top_k`, `include_stop_str_in_output` and
`chat_template_kwargs`; without, stop strings are cut here, so the texts keep the same form (the stop string kept)
on any server.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kt_train.generation import GenerationError, SamplingConfig, chat_messages, kept_indices, shape_results
from kt_train.logs import first_line

logger = logging.getLogger(__name__)

NO_KEY = "EMPTY"
"""The API key sent when none is set (local servers accept any)."""
CONTEXT_ERRORS = ("context_length_exceeded", "maximum context length")
"""How servers say that a prompt is longer than the model's context (OpenAI's error code; vLLM's and others' text)."""


class PromptTooLong(Exception):
    """The server refused a prompt as longer than the model's context."""


def is_context_error(exc: Exception) -> bool:
    """Whether a 400 from the server says the prompt does not fit the model's context."""
    text = f"{getattr(exc, 'code', '') or ''} {exc}".lower()
    return any(marker in text for marker in CONTEXT_ERRORS)


class OpenAIBackend:
    """Chat (or plain) completions from the model a server serves under `model`."""

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str | None = None,
        apply_chat_template: bool = True,
        system_prompt: str | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
        max_concurrency: int = 8,
        max_retries: int = 5,
        timeout_s: float = 600.0,
        server_extensions: bool = True,
    ) -> None:
        from openai import OpenAI

        self.model = model
        self.client = OpenAI(base_url=base_url, api_key=api_key or NO_KEY, max_retries=max_retries, timeout=timeout_s)
        self.apply_chat_template = apply_chat_template
        self.system_prompt = system_prompt
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.max_concurrency = max_concurrency
        self.server_extensions = server_extensions

    def request_fields(self, sampling: SamplingConfig) -> dict[str, Any]:
        """The sampling fields of one request (greedy: one text; without extensions: no stop strings)."""
        greedy = sampling.temperature == 0
        fields: dict[str, Any] = {
            "model": self.model,
            "temperature": sampling.temperature,
            "top_p": 1.0 if greedy else sampling.top_p,
            "max_tokens": sampling.max_new_tokens,
            "n": 1 if greedy else sampling.n,
            "seed": sampling.seed,
        }
        if self.server_extensions:
            extra: dict[str, Any] = {"top_k": 0 if greedy else sampling.top_k, "include_stop_str_in_output": True}
            if self.chat_template_kwargs and self.apply_chat_template:
                extra["chat_template_kwargs"] = self.chat_template_kwargs
            fields["extra_body"] = extra
            if sampling.stop:
                fields["stop"] = list(sampling.stop)
        return fields

    def request(self, prompt: str, fields: dict[str, Any]) -> list[str]:
        """The texts of one request (`fields` from `request_fields`)."""
        import openai

        try:
            if self.apply_chat_template:
                messages = chat_messages(prompt, self.system_prompt)
                response = self.client.chat.completions.create(messages=messages, **fields)  # type: ignore[arg-type]
                return [choice.message.content or "" for choice in response.choices]
            response = self.client.completions.create(prompt=prompt, **fields)
            return [choice.text for choice in response.choices]
        except openai.BadRequestError as exc:
            if is_context_error(exc):
                raise PromptTooLong(str(exc)) from exc
            raise GenerationError(self._error_line(exc)) from exc
        except openai.APIError as exc:
            raise GenerationError(self._error_line(exc)) from exc

    def _error_line(self, exc: Exception) -> str:
        return f"{type(exc).__name__} from {self.client.base_url}: {first_line(exc)}"

    def complete(self, prompt: str, sampling: SamplingConfig) -> list[str] | None:
        """`sampling.n` texts for one prompt (None if it is longer than the model's context); a server that returns
        fewer than asked is asked again for the rest (seed + the number of texts so far)."""
        fields = self.request_fields(sampling)
        wanted, texts = fields["n"], []
        while len(texts) < wanted:
            try:
                got = self.request(prompt, fields | {"n": wanted - len(texts), "seed": sampling.seed + len(texts)})
            except PromptTooLong as exc:
                logger.debug("prompt over the context: %s", exc)
                return None
            if not got:
                raise GenerationError(f"{self.client.base_url} returned no text")
            texts += got
        return texts * sampling.n if sampling.temperature == 0 else texts[:wanted]

    def generate(self, prompts: list[str], sampling: SamplingConfig) -> list[list[str] | None]:
        """Generate `sampling.n` completions for each prompt (None for prompts over `max_prompt_chars` or refused as
        over the model's context)."""
        from tqdm.auto import tqdm

        sent = kept_indices(prompts, sampling.max_prompt_chars)
        with ThreadPoolExecutor(max_workers=self.max_concurrency) as pool:
            futures = [pool.submit(self.complete, prompts[i], sampling) for i in sent]
            outputs = [f.result() for f in tqdm(futures, desc="generate", unit="prompt", disable=not futures)]
        kept = [i for i, texts in zip(sent, outputs, strict=True) if texts is not None]
        return shape_results(len(prompts), kept, [texts for texts in outputs if texts is not None], sampling.stop)
