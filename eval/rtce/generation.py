"""Completions for RTCE prompts: one resumable JSONL file per model, rows carrying the model and sampling metadata.

Requests that fail are retried (the paper: two retries with a 5 s backoff), so one hiccup of an inference server
does not end a 14-hour run; a prompt that still fails is recorded as failed (`completions: null`, `error`), scored as
unanswered, and generated again by the next run (`kt_train.stages`).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from eval.rtce.items import RTCEItem
from kt_train.generation import GENERATION_ERRORS, GenerationBackend, SamplingConfig, with_retries
from kt_train.records import log_timing
from kt_train.stages import RunFolder

logger = logging.getLogger(__name__)
T = TypeVar("T")
K = TypeVar("K", float, int)


def grouped(items: Sequence[T], key: Callable[[T], K]) -> list[tuple[K, list[T]]]:
    """`items` grouped by `key` (smallest key first, item order kept): one generate call per sampling setting."""
    return [(value, [item for item in items if key(item) == value]) for value in sorted({key(i) for i in items})]


@dataclass(frozen=True)
class ModelSpec:
    """A model to evaluate: a label for the report, the base model and an optional LoRA adapter."""

    label: str
    model: str
    adapter: str | None = None


def completion_key(label: str, temperature: float, item_id: str) -> str:
    """The id of a completion row: model label, temperature and the item's id."""
    return f"{label}/t{temperature:g}/{item_id}"


def generate_rows(
    spec: ModelSpec,
    backend: Callable[[], GenerationBackend],
    items: Sequence[RTCEItem],
    temperatures: Sequence[float],
    sampling: SamplingConfig,
    folder: RunFolder,
    batch_size: int = 8,
    retries: int = 2,
    backoff_s: float = 5.0,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Completion rows of every (temperature, item) for one model (of this shard), made batch by batch into
    `<label>.completions.jsonl` of `folder` (resumable; failed requests made again by reruns).

    `backend` gives the model's backend (the caller caches it); it is first called when a batch needs it, so a
    finished file loads no model.
    """
    work = [(t, item) for t in temperatures for item in items]

    def process(batch: Sequence[tuple[float, RTCEItem]]) -> list[dict[str, Any]]:
        rows = []
        for temperature, pairs in grouped(batch, lambda work_item: work_item[0]):
            group = [item for _, item in pairs]
            params = dataclasses.replace(sampling, temperature=temperature)
            start = time.perf_counter()
            error = None
            try:
                prompts = [i.prompt for i in group]
                texts = with_retries(backend().generate, prompts, params, retries=retries, backoff_s=backoff_s)
            except GENERATION_ERRORS as exc:
                logger.error("generation failed for %d prompts after %d retries: %s", len(group), retries, exc)
                texts, error = [None] * len(group), f"{type(exc).__name__}: {exc}"
            elapsed = (time.perf_counter() - start) / max(len(group), 1)
            log_timing(folder.path(f"{spec.label}.completions"), len(group), elapsed)
            meta = {"model": spec.label, "base_model": spec.model, "adapter": spec.adapter, "temperature": temperature}
            meta |= {
                "top_p": params.top_p,
                "n": params.n,
                "seed": params.seed,
                "max_new_tokens": params.max_new_tokens,
            }
            for item, completions in zip(group, texts, strict=True):
                row = {"id": completion_key(spec.label, temperature, item.id), "item": item.id, **meta}
                if error is not None:
                    rows.append(row | {"completions": None, "error": error})
                else:
                    rows.append(row | {"completions": completions or []})
        return rows

    def key(work_item: tuple[float, RTCEItem]) -> str:
        return completion_key(spec.label, work_item[0], work_item[1].id)

    return folder.run(
        f"{spec.label}.completions",
        work,
        key,
        process,
        batch_size,
        progress,
        failure=generation_failure,
        desc=f"generate {spec.label}",
    )


def generation_failure(row: dict[str, Any]) -> str | None:
    """Why a completion or round-trip row is a failure to make again (its request raised), or None."""
    return row.get("error")


__all__ = ["ModelSpec", "completion_key", "generate_rows", "generation_failure", "grouped"]
