"""The RTCE benchmark's prompts as evaluation items: one per (input, algorithm, task), with what the report needs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracegen.algorithms import PAPER_ORDER
from tracegen.benchmark import load_corpus, load_summary
from tracegen.sft_data import load_eval_ids
from tracegen.tasks import TASKS

TASK_NAMES = tuple(t.value for t in TASKS)


@dataclass(frozen=True)
class RTCEItem:
    """One prompt of the benchmark with its reference answer and its input's metadata."""

    id: str  # item_id/algorithm/task
    item_id: str
    algorithm: str
    task: str
    prompt: str
    answer: Any
    family: str
    category: str
    input_length: int
    x: str  # the input string (the round trip must give it back)
    freq: dict[str, int] | None  # the frequency table shown with AE / Huffman code
    label_exact: bool = True  # False: the shown code does not return the label (float AE decoding; the release's)
    prompt_style: str = "demo"  # how the benchmark framed its prompts (`tracegen.prompts`); follow-up prompts too
    huffman_target: str = "triple"  # Huffman's z in this benchmark (`tracegen.algorithms.HUFFMAN_TARGETS`)
    given_span: tuple[int, int] | None = None  # `release` style: where the prompt shows its given value


def load_items(
    benchmark_dir: Path | str,
    algorithms: Sequence[str] = PAPER_ORDER,
    tasks: Sequence[str] = TASK_NAMES,
    ids: Path | str | Sequence[str] | None = None,
    limit: int | None = None,
) -> list[RTCEItem]:
    """Items of the first `limit` inputs (of `ids`, or all) per algorithm, every task. Every input is kept: where
    float arithmetic coding does not round-trip, the item is marked `label_exact = False` (and reported)."""
    unknown = sorted(set(algorithms) - set(PAPER_ORDER)) + sorted(set(tasks) - set(TASK_NAMES))
    if unknown:
        raise ValueError(f"unknown algorithm(s) or task(s): {', '.join(unknown)}")
    wanted = load_eval_ids(ids) if ids is not None else None
    corpus = load_corpus(benchmark_dir)
    summary = load_summary(benchmark_dir)
    style, target = summary.get("prompt_style", "demo"), summary.get("huffman_target", "triple")
    items = []
    for algorithm in algorithms:
        chosen = [e for e in corpus if wanted is None or e["id"] in wanted]
        for entry in chosen[:limit]:
            per_algorithm = entry["algorithms"][algorithm]
            for task in tasks:
                record = per_algorithm["tasks"][task]
                items.append(
                    RTCEItem(
                        id=f"{entry['id']}/{algorithm}/{task}",
                        item_id=entry["id"],
                        algorithm=algorithm,
                        task=task,
                        prompt=record["prompt"],
                        answer=record["answer"],
                        family=entry["family"],
                        category=entry["category"],
                        input_length=entry["length"],
                        x=entry["input"],
                        freq=per_algorithm["freq"],
                        label_exact=record.get("label_exact", per_algorithm["roundtrip_ok"]),
                        prompt_style=style,
                        huffman_target=target,
                        given_span=tuple(record["given_span"]) if "given_span" in record else None,
                    )
                )
    return items


__all__ = ["TASK_NAMES", "RTCEItem", "load_corpus", "load_items"]
