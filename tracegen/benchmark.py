"""Build the RTCE benchmark: unified JSON corpus, raw per-algorithm files and a Hugging Face (Parquet) dataset."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from tracegen.inputs import InputItem, generate_inputs
from tracegen.tasks import TASKS, Algorithm, make_task, safe_decode

CORPUS_FILE = "rtce.json"
SUMMARY_FILE = "summary.json"
PARQUET_FILE = "train-00000-of-00001.parquet"
HF_COLUMNS = ("id", "item_id", "family", "category", "algorithm", "task", "prompt", "answer_json", "roundtrip_ok")
CARD = """---
configs:
- config_name: default
  data_files:
  - split: train
    path: data/*.parquet
---
# RTCE: round-trip code execution

Prompts for the four RTCE prediction tasks (O/P Pred, O/P Pred-I, I/P Pred, I/P Pred-I) over LZW, arithmetic
encoding, RLE and Huffman coding. One row per (input, algorithm, task); `answer_json` is the reference value of
`{{"output": <value>}}` as JSON. Rows with `roundtrip_ok = false` come from inputs where decoding the encoding does
not give the input back (float arithmetic coding); their inversion labels are not exact.

Seed {seed}, {num_items} inputs, {num_rows} rows.
"""


def default_algorithms() -> Mapping[str, Algorithm]:
    """The registry of `tracegen.algorithms` (imported lazily)."""
    from tracegen.algorithms import ALGORITHMS

    return ALGORITHMS


def roundtrips(algorithm: Algorithm, text: str) -> bool:
    """True when decoding the encoding of `text` gives `text` back exactly."""
    return safe_decode(algorithm, algorithm.encode(text), algorithm.freq(text)) == text


def algorithm_entry(algorithm: Algorithm, text: str) -> dict[str, Any]:
    """freq, z, roundtrip_ok and the four task records of one input under one algorithm."""
    tasks = {}
    for task in TASKS:
        record = make_task(algorithm, task, text)
        tasks[task.value] = {"prompt": record.prompt, "answer": record.answer, "answer_json": record.answer_json}
    return {
        "freq": algorithm.freq(text),
        "z": algorithm.to_json(algorithm.encode(text)),
        "roundtrip_ok": roundtrips(algorithm, text),
        "tasks": tasks,
    }


def corpus_entry(item: InputItem, algorithms: Mapping[str, Algorithm]) -> dict[str, Any]:
    """One item of the unified corpus."""
    return {
        "id": item.id,
        "family": item.family,
        "category": item.category,
        "input": item.text,
        "length": len(item.text),
        "metadata": item.metadata,
        "algorithms": {name: algorithm_entry(alg, item.text) for name, alg in algorithms.items()},
    }


def hf_rows(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The dataset rows of one corpus item: one per (algorithm, task)."""
    rows = []
    for name, per_alg in entry["algorithms"].items():
        for task, record in per_alg["tasks"].items():
            values = (f"{entry['id']}/{name}/{task}", entry["id"], entry["family"], entry["category"], name, task)
            values += (record["prompt"], record["answer_json"], per_alg["roundtrip_ok"])
            rows.append(dict(zip(HF_COLUMNS, values, strict=True)))
    return rows


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def write_raw(output: Path, corpus: list[dict[str, Any]], names: list[str]) -> None:
    """raw/<algorithm>.jsonl: id, input, z, freq per line."""
    for name in names:
        lines = []
        for entry in corpus:
            per_alg = entry["algorithms"][name]
            lines.append(
                _dump({"id": entry["id"], "input": entry["input"], "z": per_alg["z"], "freq": per_alg["freq"]})
            )
        _write_text(output / "raw" / f"{name}.jsonl", "\n".join(lines) + "\n")


def write_hf(output: Path, corpus: list[dict[str, Any]], seed: int) -> int:
    """hf/data/*.parquet and a README card whose `configs:` header makes it loadable offline; returns the row count."""
    rows = [row for entry in corpus for row in hf_rows(entry)]
    schema = pa.schema([(col, pa.bool_() if col == "roundtrip_ok" else pa.string()) for col in HF_COLUMNS])
    table = pa.Table.from_pylist(rows, schema=schema)
    data_dir = output / "hf" / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    for stale in data_dir.glob("*.parquet"):
        stale.unlink()
    pq.write_table(table, data_dir / PARQUET_FILE)
    _write_text(output / "hf" / "README.md", CARD.format(seed=seed, num_items=len(corpus), num_rows=len(rows)))
    return len(rows)


def summarize(corpus: list[dict[str, Any]], names: list[str], seed: int, num_rows: int) -> dict[str, Any]:
    """Counts per family, category and algorithm, and round-trip failures per algorithm."""
    failures = {name: sum(not e["algorithms"][name]["roundtrip_ok"] for e in corpus) for name in names}
    return {
        "seed": seed,
        "num_items": len(corpus),
        "num_rows": num_rows,
        "families": dict(sorted(Counter(e["family"] for e in corpus).items())),
        "categories": dict(sorted(Counter(e["category"] for e in corpus).items())),
        "algorithms": {name: len(corpus) for name in names},
        "roundtrip_failures": failures,
    }


def build_benchmark(
    output: Path,
    seed: int = 42,
    num_inputs: int = 250,
    *,
    algorithms: Mapping[str, Algorithm] | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Write rtce.json, raw/<algorithm>.jsonl, hf/ and summary.json under `output`; return the summary.

    Byte-identical output for identical arguments (no timestamps; every dict is built in a fixed order).
    """
    output = Path(output)
    algorithms = default_algorithms() if algorithms is None else algorithms
    names = list(algorithms)
    items = generate_inputs(seed=seed, num_inputs=num_inputs)
    corpus = [corpus_entry(item, algorithms) for item in tqdm(items, desc="RTCE items", disable=not progress)]
    _write_text(output / CORPUS_FILE, json.dumps(corpus, ensure_ascii=False, indent=1) + "\n")
    write_raw(output, corpus, names)
    num_rows = write_hf(output, corpus, seed)
    summary = summarize(corpus, names, seed, num_rows)
    _write_text(output / SUMMARY_FILE, json.dumps(summary, indent=2) + "\n")
    return summary


def load_corpus(benchmark_dir: Path | str) -> list[dict[str, Any]]:
    """The unified corpus (`rtce.json`) of a benchmark folder, sorted by item id."""
    path = Path(benchmark_dir) / CORPUS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"no {CORPUS_FILE} in {benchmark_dir} (build it with `kt rtce build`)")
    return sorted(json.loads(path.read_text(encoding="utf-8")), key=lambda item: item["id"])


__all__ = ["CORPUS_FILE", "HF_COLUMNS", "build_benchmark", "corpus_entry", "hf_rows", "load_corpus", "roundtrips"]
