"""GRPO rows of the RTCE benchmark: the four prediction tasks and the one-prompt round trip, as one dataset.

Every row has the same columns (types): `prompt` (chat: one user turn), `id`, `task` (a task name or
`roundtrip`), `algorithm`, `answer_json` (canonical JSON of the reference answer; for `roundtrip` the true encoding of
x), `x` (the input string), `freq_json` (JSON of the frequency table shown with the code, "null" without one) and
`format_pattern` (the regex `format_reward` checks). `rtce_answer_reward` scores the task rows and skips the
round-trip rows; `rtce_roundtrip_reward` the other way round.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from kt_train.hf_dataset import row_id
from tracegen.algorithms import ALGORITHMS, get_algorithm
from tracegen.benchmark import load_corpus, load_summary
from tracegen.sft_data import load_eval_ids
from tracegen.tasks import ROUNDTRIP_TASK, TASKS, dumps, roundtrip_prompt

TASK_NAMES = tuple(task.value for task in TASKS)
_FREE = r"(?:(?!\[/?ANSWER\]).)*"  # any text without an answer tag (the patterns are matched with DOTALL)
# Reasoning may come first; then exactly one answer block, with nothing after it.
ANSWER_PATTERN = rf"{_FREE}\[ANSWER\]\s*\{{\s*\"output\"\s*:{_FREE}\}}\s*\[/ANSWER\]"
ROUNDTRIP_PATTERN = rf"{_FREE}\[ANSWER\]\s*\{{\s*\"output\"\s*:{_FREE},\s*\"decoded\"\s*:{_FREE}\}}\s*\[/ANSWER\]"


def _row(item_id: str, algorithm: str, task: str, prompt: str, answer_json: str, x: str, freq: Any) -> dict[str, Any]:
    return {
        "prompt": [{"role": "user", "content": prompt}],
        "id": row_id(item_id, algorithm, task),
        "task": task,
        "algorithm": algorithm,
        "answer_json": answer_json,
        "x": x,
        "freq_json": json.dumps(freq, ensure_ascii=False),
        "format_pattern": ROUNDTRIP_PATTERN if task == ROUNDTRIP_TASK else ANSWER_PATTERN,
    }


def rtce_rl_rows(
    benchmark_dir: Path | str,
    algorithms: Sequence[str] = tuple(ALGORITHMS),
    tasks: Sequence[str] = TASK_NAMES,
    roundtrip: bool = True,
    exclude_ids: Iterable[str] | Path | str | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Rows of the first `limit` inputs (all for None) per algorithm, leaving out `exclude_ids` (held-out evaluation
    inputs: a set, or a file as `tracegen.sft_data.load_eval_ids` reads) and inputs whose float arithmetic coding
    does not round-trip; one row per task and, with `roundtrip`, one round-trip row."""
    unknown = sorted(set(tasks) - set(TASK_NAMES))
    if unknown:
        raise ValueError(f"unknown task(s) {', '.join(unknown)}; known: {', '.join(TASK_NAMES)}")
    chosen_algorithms = {name: get_algorithm(name) for name in algorithms}  # one clear error for an unknown one
    if "huffman" in chosen_algorithms and load_summary(benchmark_dir).get("huffman_target", "triple") != "triple":
        raise ValueError("GRPO rows need Huffman's triple target (the round-trip reward decodes the triple)")
    excluded = load_eval_ids(exclude_ids)
    corpus = [entry for entry in load_corpus(benchmark_dir) if entry["id"] not in excluded]
    rows = []
    for name, algorithm in chosen_algorithms.items():
        chosen = [entry for entry in corpus if entry["algorithms"][name]["roundtrip_ok"]]
        for entry in chosen[:limit]:
            per_algorithm, x = entry["algorithms"][name], entry["input"]
            freq = per_algorithm["freq"]
            for task in tasks:
                record = per_algorithm["tasks"][task]
                rows.append(_row(entry["id"], name, task, record["prompt"], record["answer_json"], x, freq))
            if roundtrip:
                prompt = roundtrip_prompt(algorithm, x, freq)
                rows.append(_row(entry["id"], name, ROUNDTRIP_TASK, prompt, dumps(per_algorithm["z"]), x, freq))
    return rows


__all__ = ["ANSWER_PATTERN", "ROUNDTRIP_PATTERN", "TASK_NAMES", "rtce_rl_rows"]
