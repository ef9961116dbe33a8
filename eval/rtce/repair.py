"""Format repair before scoring (paper 000, Appendix E): a completion with text but no extractable answer is rewritten
by the model into `[ANSWER]{"output": ...}[/ANSWER]` with the format-repair prompt; the repair is scored in its place.

The repair prompt shows only the completion, never the reference, and asks to keep the value it holds; it separates
formatting failures from reasoning failures. Repairs are stored beside the completions (`<label>.repairs.jsonl`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from eval.rtce.generation import grouped
from eval.rtce.reflection import ReflectionConfig, repair_prompt
from kt_train.generation import GenerationBackend, SamplingConfig, with_retries
from kt_train.records import run_resumable
from tracegen.answers import extract_answer


def needs_repair(text: str | None) -> bool:
    """A completion with text in which no answer can be found."""
    return bool(text and text.strip()) and not extract_answer(text)[0]


def repair_rows(
    rows: Sequence[Mapping[str, Any]],
    backend: Callable[[], GenerationBackend],
    sampling: SamplingConfig,
    path: Path,
    config: ReflectionConfig | None = None,
    batch_size: int = 8,
    progress: bool = True,
) -> dict[str, list[str | None]]:
    """Repairs by row id: one entry per completion, None where none was needed (resumable in `path`)."""
    config = config or ReflectionConfig()

    def process(batch: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        asks = [(row, i) for row in batch for i, text in enumerate(row["completions"]) if needs_repair(text)]
        repaired: dict[tuple[str, int], str | None] = {}
        if asks:
            prompts = [repair_prompt(row["completions"][i], config) for row, i in asks]
            for budget, pairs in grouped(list(zip(asks, prompts, strict=True)), lambda pair: pair[1][1]):
                group = [(ask, prompt) for ask, (prompt, _) in pairs]
                params = dataclasses.replace(sampling, temperature=0.0, n=1, max_new_tokens=budget)
                outputs = with_retries(backend().generate, [p for _, p in group], params)
                for ((row, i), _), out in zip(group, outputs, strict=True):
                    repaired[row["id"], i] = out[0] if out else None
        return [
            {"id": row["id"], "repairs": [repaired.get((row["id"], i)) for i in range(len(row["completions"]))]}
            for row in batch
        ]

    records = run_resumable(path, list(rows), lambda r: r["id"], process, batch_size, progress, "format repair")
    return {record["id"]: record["repairs"] for record in records}


def with_repairs(rows: Sequence[Mapping[str, Any]], repairs: Mapping[str, list[str | None]]) -> list[dict[str, Any]]:
    """Rows whose completions are replaced by their repairs where one was made (the raw ones kept as `raw`)."""
    out = []
    for row in rows:
        fixes = repairs.get(row["id"]) or [None] * len(row["completions"])
        texts = [fix if fix is not None else text for text, fix in zip(row["completions"], fixes, strict=True)]
        out.append({**row, "completions": texts, "raw_completions": row["completions"], "repaired": fixes})
    return out


__all__ = ["needs_repair", "repair_rows", "with_repairs"]
