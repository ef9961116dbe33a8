"""Round-trip consistency (paper 000, §3 and Fig. 2): does the model's own encoding, decoded by the model, give the
input back?

For each input x and algorithm: the model's z^ from its O/P Pred answer (first completion) is shown to the model in
an I/P Pred prompt (a second call); the round trip passes when the answer is exactly x. Reported beside the two
directions scored on their own (O/P Pred on x, I/P Pred on the true z), so that inputs passing both directions yet
failing the round trip (the paper's headline finding) are counted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from eval.rtce.generation import generation_failure, grouped
from eval.rtce.items import RTCEItem
from kt_train.generation import GENERATION_ERRORS, GenerationBackend, SamplingConfig, with_retries
from kt_train.records import run_resumable
from tracegen.algorithms import get_algorithm
from tracegen.answers import extract_answer
from tracegen.release_prompts import RELEASE_STYLE, with_given
from tracegen.tasks import Task, task_prompt


def roundtrip_prompt(item: RTCEItem, z_hat: Any) -> str:
    """The I/P Pred prompt of `item`'s input and algorithm, showing the model's own encoding `z_hat` (the `release`
    style: the release's prompt with `z_hat` where it shows z)."""
    if item.prompt_style == RELEASE_STYLE:
        if item.given_span is None:
            raise ValueError(f"{item.id}: a release-style prompt without `given_span` (rebuild the benchmark)")
        return with_given(item.prompt, item.given_span, z_hat)
    algorithm = get_algorithm(item.algorithm, item.huffman_target)
    return task_prompt(algorithm, Task.INPUT_PRED, z_hat, item.freq, item.prompt_style)


def roundtrip_cases(scored: Sequence[Mapping[str, Any]], items: Mapping[str, RTCEItem]) -> list[dict[str, Any]]:
    """One case per (model, temperature, input, algorithm) that has both O/P Pred and I/P Pred rows."""
    by_key: dict[tuple[str, float, str, str], dict[str, Mapping[str, Any]]] = {}
    for row in scored:
        item = items[row["item"]]
        if item.task in (Task.OUTPUT_PRED.value, Task.INPUT_PRED.value):
            by_key.setdefault((row["model"], row["temperature"], item.item_id, item.algorithm), {})[item.task] = row
    cases = []
    for (model, temperature, item_id, algorithm), rows in sorted(by_key.items()):
        if len(rows) < 2:
            continue
        op, ip = rows[Task.OUTPUT_PRED.value], rows[Task.INPUT_PRED.value]
        found = bool(op["found"]) and op["found"][0]
        cases.append(
            {
                "id": f"{model}/t{temperature:g}/{item_id}/{algorithm}",
                "model": model,
                "temperature": temperature,
                "item_id": item_id,
                "algorithm": algorithm,
                "item": ip["item"],  # the I/P Pred item: its input x and frequency table
                "op_pass": bool(op["em"] and op["em"][0]),
                "ip_pass": bool(ip["em"] and ip["em"][0]),
                "z_hat_found": found,
                "z_hat": op["predictions"][0] if found else None,
            }
        )
    return cases


def run_roundtrips(
    cases: Sequence[dict[str, Any]],
    items: Mapping[str, RTCEItem],
    backend: Callable[[], GenerationBackend],
    sampling: SamplingConfig,
    path: Path,
    batch_size: int = 8,
    progress: bool = True,
    retries: int = 2,
) -> list[dict[str, Any]]:
    """The second call of every case (one completion at the case's temperature), resumable in `path` (a request that
    fails is recorded with its `error` and made again by up to `retries` reruns)."""

    def process(batch: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        asked = [c for c in batch if c["z_hat_found"]]
        texts: dict[str, str | None] = {}
        errors: dict[str, str] = {}
        for temperature, group in grouped(asked, lambda case: case["temperature"]):
            params = dataclasses.replace(sampling, temperature=temperature, n=1)
            prompts = [roundtrip_prompt(items[c["item"]], c["z_hat"]) for c in group]
            try:
                outputs = with_retries(backend().generate, prompts, params)
            except GENERATION_ERRORS as exc:
                errors |= {c["id"]: f"{type(exc).__name__}: {exc}" for c in group}
                continue
            texts |= {c["id"]: (out[0] if out else None) for c, out in zip(group, outputs, strict=True)}
        records = []
        for case in batch:
            text = texts.get(case["id"])
            found, x_hat = extract_answer(text) if text is not None else (False, None)
            x = items[case["item"]].x
            record = {k: v for k, v in case.items() if k != "item"}
            record |= {"completion": text, "x_hat": x_hat if found else None, "roundtrip_pass": found and x_hat == x}
            records.append(record | ({"error": errors[case["id"]]} if case["id"] in errors else {}))
        return records

    return run_resumable(
        path,
        list(cases),
        lambda c: c["id"],
        process,
        batch_size,
        progress,
        "round trips",
        failure=generation_failure,
        retries=retries,
    )


__all__ = ["roundtrip_cases", "roundtrip_prompt", "run_roundtrips"]
