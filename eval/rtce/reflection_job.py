"""Self-reflection as part of `kt eval rtce` (paper 000, §6.2): the rounds on each model's first zero-shot completion,
resumable per model, and EM per round for every (model, temperature, algorithm, task)."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from eval.rtce.generation import grouped
from eval.rtce.items import RTCEItem
from eval.rtce.reflection import ReflectionConfig, reflect
from kt_train.generation import GenerationBackend, SamplingConfig
from kt_train.records import run_resumable


def run_reflection(
    scored: Sequence[Mapping[str, Any]],
    items: Mapping[str, RTCEItem],
    backend: Callable[[], GenerationBackend],
    sampling: SamplingConfig,
    config: ReflectionConfig,
    path: Path,
    batch_size: int = 8,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Reflection records (one per scored row: its rounds and final answer), made batch by batch into `path`."""

    def process(batch: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        records = []
        for temperature, group in grouped(batch, lambda row: row["temperature"]):
            params = dataclasses.replace(sampling, temperature=temperature, n=1)
            drafts = [row["completions"][0] if row["completions"] else None for row in group]
            results = reflect([items[row["id"]] for row in group], drafts, backend(), params, config, progress=False)
            for row, result in zip(group, results, strict=True):
                meta = {k: row[k] for k in ("model", "temperature", "algorithm", "task", "item_id")}
                records.append({**result.to_dict(), **meta, "item": row["id"], "id": row["key"]})
        return records

    return run_resumable(path, list(scored), lambda r: r["key"], process, batch_size, progress, "self-reflection")


def accuracy_by_round(records: Sequence[Mapping[str, Any]], rounds: int) -> list[dict[str, Any]]:
    """EM per round (round 0: zero-shot) for every (model, temperature, algorithm, task)."""
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        groups[record["model"], record["temperature"], record["algorithm"], record["task"]].append(record)
    table = []
    for (model, temperature, algorithm, task), group in sorted(groups.items()):
        per_round = [
            sum(r["rounds"][min(k, len(r["rounds"]) - 1)]["em"] for r in group) / len(group) for k in range(rounds + 1)
        ]
        table.append(
            {
                "model": model,
                "temperature": temperature,
                "algorithm": algorithm,
                "task": task,
                "n": len(group),
                "em_by_round": per_round,
            }
        )
    return table


def reflection_markdown(table: Sequence[Mapping[str, Any]], rounds: int) -> str:
    """The per-round EM table (the paper's Fig. 3 as numbers)."""
    head = " | ".join(["round 0 (zero-shot)", *(f"round {k}" for k in range(1, rounds + 1))])
    lines = [
        "## Self-reflection",
        "",
        "EM of the first completion after each critique/revision round (Critique-B, no-leak revision, early stop "
        "on EM).",
        "",
        f"| model | T | algorithm | task | n | {head} |",
        "|---|---:|---|---|---:|" + "---:|" * (rounds + 1),
    ]
    for row in table:
        values = " | ".join(f"{100 * v:.1f}" for v in row["em_by_round"])
        lines.append(
            f"| {row['model']} | {row['temperature']:g} | {row['algorithm']} | {row['task']} | {row['n']} | {values} |"
        )
    return "\n".join(lines) + "\n"


__all__ = ["accuracy_by_round", "reflection_markdown", "run_reflection"]
