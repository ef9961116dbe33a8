"""The NL translation of snoop traces measured end to end: `translate_traces` with an LLM backend over the kept
traces of a corpus, how faithful the texts are per algorithm and direction, the time, and examples side by side
with the template translation of the same trace.

First, for every kept trace: does its translation prompt fit the model's context (the backend's own token count,
chat template included)? Prompts that do not are never generated for. Then, for the translated traces:
faithfulness as `tracegen.translate.faithful` filters on (the answer stated as a parsable `[ANSWER]`, the answer
equal to the trace's label, the share of the trace's intermediate values the text mentions), over every text.
`--per-cell N` translates a sample: the first N traces of each algorithm and direction whose prompt fits.

    python bench/measure_translation.py --traces ~/.cache/kt-train/data/rtce-sft-seed42-n250-*/traces --per-cell 8
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from statistics import mean
from typing import Any

import benchutil
from benchutil import invocation, machine_check, publish, run_header

KEY = "translation"
benchutil.SECTIONS.setdefault(KEY, "Trace translation (LLM)")
Cell = tuple[str, str]


def load_backend(args: argparse.Namespace) -> Any:
    """The generation backend (vLLM: eager, a KV cache of `--kv-cache-gib`; transformers: float32)."""
    from kt_train.generation import get_backend

    if args.backend == "vllm":
        return get_backend(
            "vllm", args.model, enforce_eager=True, kv_cache_memory_bytes=int(args.kv_cache_gib * benchutil.GIB)
        )
    return get_backend("transformers", args.model, dtype="float32", batch_size=args.batch_size)


def fitting(records: list[dict[str, Any]], backend: Any, max_prompt_chars: int) -> set[str]:
    """Ids of the records whose translation prompt the backend would generate for (it fits the model's context)."""
    from kt_train.generation import kept_indices
    from tracegen.translate import translation_prompt

    prompts = [translation_prompt(r) for r in records]
    kept = kept_indices(prompts, max_prompt_chars, backend.count_tokens, backend.context_tokens)
    return {records[i]["id"] for i in kept}


def sample(records: list[dict[str, Any]], fits: set[str], per_cell: int | None) -> list[dict[str, Any]]:
    """All records (when `per_cell` is None), else the first `per_cell` fitting ones of each cell."""
    if per_cell is None:
        return records
    taken: dict[Cell, int] = defaultdict(int)
    chosen = []
    for record in records:
        cell = (record["algorithm"], record["direction"])
        if record["id"] in fits and taken[cell] < per_cell:
            taken[cell] += 1
            chosen.append(record)
    return chosen


def write_traces(records: list[dict[str, Any]], folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "traces.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return folder


def percent(rows: list[dict[str, Any]], key: str) -> str:
    """The share of `rows` whose `key` is true, or "-" for none."""
    return f"{sum(bool(r[key]) for r in rows) / len(rows):.0%}" if rows else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=Path, required=True, help="a traces folder (`kt traces collect`)")
    parser.add_argument(
        "--per-cell", type=int, default=None, help="translate the first N fitting traces per algorithm and direction"
    )
    parser.add_argument("--backend", default="vllm", choices=["transformers", "vllm"])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--max-new-tokens", type=int, default=1024)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--kv-cache-gib", type=float, default=8.0, help="vllm: the engine's KV cache")
    parser.add_argument("--batch-size", type=int, default=8, help="transformers: prompts per batch")
    parser.add_argument("--examples", type=int, default=2, help="translations shown beside the template's")
    parser.add_argument("--no-doc", action="store_true", help="print the section instead of writing the doc")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from kt_train.generation import SamplingConfig
    from kt_train.models import get_tokenizer
    from tracegen.answers import extract_answer
    from tracegen.translate import GENERATION_ERROR, translate_traces, value_share

    machine = machine_check(os.cpu_count() or 1, skip=True)
    sampling = SamplingConfig(temperature=args.temperature, max_new_tokens=args.max_new_tokens)
    rows = [json.loads(line) for line in (args.traces / "traces.jsonl").read_text(encoding="utf-8").splitlines()]
    records = [r for r in rows if r.get("kept")]
    start = time.perf_counter()
    backend = load_backend(args)
    engine_s = time.perf_counter() - start
    fits = fitting(records, backend, sampling.max_prompt_chars)
    chosen = sample(records, fits, args.per_cell)
    with tempfile.TemporaryDirectory() as tmp:
        traces = write_traces(chosen, Path(tmp) / "traces")
        start = time.perf_counter()
        summary = translate_traces(traces, Path(tmp) / "llm", backend=backend, sampling=sampling)
        seconds = time.perf_counter() - start
        translate_traces(traces, Path(tmp) / "template", progress=False)
        llm, template_rows = (
            [json.loads(x) for x in (Path(tmp) / name / "translations.jsonl").read_text().splitlines()]
            for name in ("llm", "template")
        )
    failed = summary["reasons"].get(GENERATION_ERROR, 0)
    if failed:
        print(f"measure_translation: {failed} of {len(chosen)} translations failed (see the log); nothing published")
        return 1
    by_id = {r["id"]: r for r in records}
    template = {r["id"]: r for r in template_rows}
    all_cells: dict[Cell, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        all_cells[(record["algorithm"], record["direction"])].append(record)
    cells: dict[Cell, list[dict[str, Any]]] = defaultdict(list)
    generated_tokens, tokenizer = 0, get_tokenizer(args.model)
    for row in llm:
        if row["translation"] is None:
            continue
        text = row["translation"]
        generated_tokens += len(tokenizer(text, add_special_tokens=False)["input_ids"])
        answered, value = extract_answer(text, closed_block=True)
        record = by_id[row["id"]]
        cells[(row["algorithm"], row["direction"])].append(
            {
                "answered": answered,
                "correct": answered and value == record["label"],
                "share": value_share(text, record),
                "kept": row["kept"],
            }
        )
    translated = sum(map(len, cells.values()))
    scope = "every kept trace" if args.per_cell is None else f"the first {args.per_cell} fitting traces per cell"
    lines = [*run_header(invocation("measure_translation.py", argv)), "", machine, ""]
    lines += [
        f"`--backend {args.backend}`, {args.model} (context {backend.context_tokens} tokens), temperature "
        f"{args.temperature}, at most {args.max_new_tokens} new tokens. {len(records)} kept traces, of which "
        f"{len(fits)} have a translation prompt that fits the context; translated: {scope}, {translated} texts, "
        f"{generated_tokens:,} tokens in {seconds:.0f} s ({generated_tokens / max(seconds, 1e-9):.1f} generated "
        f"tokens/s, {seconds / max(translated, 1):.1f} s per trace; the engine started in {engine_s:.0f} s before).",
        "",
        "| algorithm | direction | kept traces | prompt fits | translated | answer stated | answer = label | "
        "mean value share | faithful (kept) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for cell, members in sorted(all_cells.items()):
        done = cells.get(cell, [])
        fit = sum(r["id"] in fits for r in members)
        value = f"{mean(r['share'] for r in done):.2f}" if done else "-"
        lines.append(
            f"| {cell[0]} | {cell[1]} | {len(members)} | {fit} ({fit / len(members):.0%}) | {len(done)} | "
            f"{percent(done, 'answered')} | {percent(done, 'correct')} | {value} | {percent(done, 'kept')} |"
        )
    lines += [
        "",
        f"The run's summary: kept {summary['kept']} of {summary['total']}; reasons {summary['reasons']}.",
        "",
    ]
    shown: set[str] = set()
    for row in llm:
        if len(shown) >= args.examples or row["translation"] is None or row["algorithm"] in shown:
            continue
        shown.add(row["algorithm"])
        lines += [f"Example `{row['id']}` ({row['reason'] or 'kept'}): the LLM's text, then the template's.", ""]
        lines += ["```", row["translation"][:1500], "```", "", "```"]
        lines += [(template[row["id"]]["translation"] or "")[:1500], "```", ""]
    return publish(KEY, "\n".join(lines), args.no_doc)


if __name__ == "__main__":
    sys.exit(main())
