"""Base model vs trained adapters on held-out RTCE inputs, side by side (the main job's evaluation).

Each adapter named after an algorithm (`lzw=DIR`) answers that algorithm's items; any other name answers all of
them; the base model answers every item. Prompts are the benchmark's task prompts (`tracegen.tasks`), answers are
extracted (`eval.answers`) and scored by exact match and edit similarity (`eval.metrics`). Writes
`<model>.predictions.jsonl` per model (resumable: a rerun skips the rows it has), `summary.json` and `report.md`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from eval.answers import extract_answer
from eval.metrics import edit_similarity, exact_match
from kt_train.generation import GenerationBackend, SamplingConfig
from tracegen.benchmark import CORPUS_FILE
from tracegen.records import run_resumable
from tracegen.sft_data import load_eval_ids

BASE = "base"
PREDICTIONS_FILE = "predictions.jsonl"
SUMMARY_FILE = "summary.json"
REPORT_FILE = "report.md"


@dataclass(frozen=True)
class EvalItem:
    """One prompt of the benchmark with its reference answer."""

    id: str
    item_id: str
    algorithm: str
    task: str
    prompt: str
    answer: Any


def held_out_items(
    benchmark_dir: Path | str,
    ids: Path | str | Sequence[str] | None,
    algorithms: Sequence[str],
    tasks: Sequence[str] = ("output_pred",),
    per_algorithm: int | None = None,
) -> list[EvalItem]:
    """The items of `ids` (all items for None) for each algorithm and task, the first `per_algorithm` inputs by id.

    Items whose float arithmetic coding does not round-trip (`roundtrip_ok` false) are skipped: their label is unsure.
    """
    path = Path(benchmark_dir) / CORPUS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"no {CORPUS_FILE} in {benchmark_dir} (build it with `kt rtce build`)")
    wanted = load_eval_ids(ids) if ids is not None else None
    corpus = sorted(json.loads(path.read_text(encoding="utf-8")), key=lambda item: item["id"])
    items = []
    for algorithm in algorithms:
        chosen = [
            i for i in corpus if (wanted is None or i["id"] in wanted) and i["algorithms"][algorithm]["roundtrip_ok"]
        ]
        for item in chosen[:per_algorithm]:
            for task in tasks:
                record = item["algorithms"][algorithm]["tasks"][task]
                key = f"{item['id']}/{algorithm}/{task}"
                items.append(EvalItem(key, item["id"], algorithm, task, record["prompt"], record["answer"]))
    return items


def score(item: EvalItem, completion: str | None) -> dict[str, Any]:
    """Extraction and metrics of one completion (None: the prompt was too long to ask)."""
    found, prediction = extract_answer(completion) if completion is not None else (False, None)
    return {
        "found": found,
        "prediction": prediction,
        "exact_match": bool(found and exact_match(prediction, item.answer)),
        "edit_similarity": edit_similarity(prediction, item.answer) if found else 0.0,
    }


def answers_for(label: str, items: Sequence[EvalItem]) -> list[EvalItem]:
    """The items a model answers: the base and non-algorithm adapters all, an algorithm's adapter its own."""
    algorithms = {item.algorithm for item in items}
    return [item for item in items if label == BASE or label not in algorithms or item.algorithm == label]


BackendFactory = Callable[[str, str | None], GenerationBackend]


def default_backend(model: str, adapter: str | None) -> GenerationBackend:
    from kt_train.generation import get_backend

    return get_backend("transformers", model, adapter=adapter, dtype="float32")


def compare_adapters(
    model: str,
    adapters: Mapping[str, str],
    items: Sequence[EvalItem],
    output_dir: Path | str,
    sampling: SamplingConfig,
    *,
    backend_factory: BackendFactory = default_backend,
    progress: bool = True,
) -> dict[str, Any]:
    """Generate and score every (model, item) pair; write predictions, summary and report; return the summary."""
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for label, adapter in [(BASE, None), *adapters.items()]:
        answerer = _Answerer(label, model, adapter, sampling, backend_factory)
        path = output / f"{label}.{PREDICTIONS_FILE}"
        rows += run_resumable(path, answers_for(label, items), answerer.key, answerer, 4, progress, label)
    summary = summarize(rows, model, adapters, sampling)
    (output / SUMMARY_FILE).write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (output / REPORT_FILE).write_text(report(summary), encoding="utf-8")
    return summary


class _Answerer:
    """One model's answers, batch by batch; the model is loaded on first use (a finished model costs nothing)."""

    def __init__(
        self, label: str, model: str, adapter: str | None, sampling: SamplingConfig, factory: BackendFactory
    ) -> None:
        self.label, self.model, self.adapter, self.sampling, self.factory = label, model, adapter, sampling, factory
        self.backend: GenerationBackend | None = None

    def key(self, item: EvalItem) -> str:
        return f"{self.label}/{item.id}"

    def __call__(self, batch: Sequence[EvalItem]) -> list[dict[str, Any]]:
        if self.backend is None:
            self.backend = self.factory(self.model, self.adapter)
        completions = self.backend.generate([item.prompt for item in batch], self.sampling)
        rows = []
        for item, texts in zip(batch, completions, strict=True):
            text = texts[0] if texts else None
            meta = {"model": self.label, "adapter": self.adapter}
            rows.append({**asdict(item), "id": self.key(item), **meta, "completion": text, **score(item, text)})
        return rows


def summarize(
    rows: Sequence[Mapping[str, Any]], model: str, adapters: Mapping[str, str], sampling: SamplingConfig
) -> dict[str, Any]:
    """EM, ES and answer rate per model and algorithm."""
    cells: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        cells[row["model"], row["algorithm"]].append(row)
    results = [
        {
            "model": label,
            "algorithm": algorithm,
            "n": len(group),
            "exact_match": sum(r["exact_match"] for r in group) / len(group),
            "edit_similarity": sum(r["edit_similarity"] for r in group) / len(group),
            "answered": sum(r["found"] for r in group) / len(group),
        }
        for (label, algorithm), group in sorted(cells.items())
    ]
    return {"base_model": model, "adapters": dict(adapters), "sampling": asdict(sampling), "results": results}


def report(summary: Mapping[str, Any]) -> str:
    """A markdown table: one row per algorithm, base and adapter side by side."""
    by_key = {(r["model"], r["algorithm"]): r for r in summary["results"]}
    algorithms = sorted({r["algorithm"] for r in summary["results"]})
    lines = [
        f"# Base vs adapters: {summary['base_model']}",
        "",
        f"Greedy: {summary['sampling']['temperature'] == 0}; max new tokens {summary['sampling']['max_new_tokens']}.",
        "",
        "| algorithm | model | n | EM | ES | answered |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for algorithm in algorithms:
        for label in [BASE, *summary["adapters"]]:
            row = by_key.get((label, algorithm))
            if row is not None:
                lines.append(
                    f"| {algorithm} | {label} | {row['n']} | {row['exact_match']:.2f} | "
                    f"{row['edit_similarity']:.2f} | {row['answered']:.2f} |"
                )
    return "\n".join(lines) + "\n"


__all__ = ["BASE", "EvalItem", "answers_for", "compare_adapters", "held_out_items", "report", "score", "summarize"]
