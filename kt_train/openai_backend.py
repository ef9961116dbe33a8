"""`OpenAIBackend`: any OpenAI-compatible server (`vllm serve`, SGLang, llama.cpp's server, hosted APIs).

Prompts go out concurrently (`max_concurrency` requests in flight), one request per prompt asking for `n` texts
(greedy: one, repeated). The `openai` client retries connection errors, 408/409/429 and 5xx with exponential backoff
(`max_retries`); what still fails raises `GenerationError`, which the callers' run folders record as a failed item
and make again on the next run. With `server_extensions` (vLLM's, also SGLang's) the request carries `top_k`,
`include_stop_str_in_output` and `chat_template_kwargs`; without, stop strings are cut here, so the texts keep the
same form (the stop string kept) on any server.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kt_train.generation import SamplingConfig, chat_messages, kept_indices, shape_results

logger = logging.getLogger(__name__)

NO_KEY = "EMPTY"
"""The API key sent when none is set (local servers accept any)."""


class GenerationError(RuntimeError):
    """A request that failed after the client's retries (the server's error, one line)."""


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
        except openai.APIError as exc:
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise GenerationError(f"{type(exc).__name__} from {self.client.base_url}: {message}") from exc

    def complete(self, prompt: str, sampling: SamplingConfig) -> list[str]:
        """`sampling.n` texts for one prompt; a server that returns fewer than asked is asked again for the rest
        (seed + the number of texts so far)."""
        fields = self.request_fields(sampling)
        wanted, texts = fields["n"], []
        while len(texts) < wanted:
            got = self.request(prompt, fields | {"n": wanted - len(texts), "seed": sampling.seed + len(texts)})
            if not got:
                raise GenerationError(f"{self.client.base_url} returned no text")
            texts += got
        return texts * sampling.n if sampling.temperature == 0 else texts[:wanted]

    def generate(self, prompts: list[str], sampling: SamplingConfig) -> list[list[str] | None]:
        """Generate `sampling.n` completions for each prompt (None for prompts over `max_prompt_chars`)."""
        from tqdm.auto import tqdm

        kept = kept_indices(prompts, sampling.max_prompt_chars)
        with ThreadPoolExecutor(max_workers=self.max_concurrency) as pool:
            futures = [pool.submit(self.complete, prompts[i], sampling) for i in kept]
            outputs = [f.result() for f in tqdm(futures, desc="generate", unit="prompt", disable=not futures)]
        return shape_results(len(prompts), kept, outputs, sampling.stop)
