"""The NL translation of snoop traces measured end to end: `translate_traces` with an LLM backend over the kept
traces of a corpus, how faithful the texts are per algorithm and direction, the time, and examples side by side
with the template translation of the same trace.

Faithfulness (what `tracegen.translate.faithful` filters on): the answer stated (a parsable `[ANSWER]`), the answer
equal to the trace's label, and the share of the trace's intermediate values the text mentions (over every text,
kept or not). `--per-cell N` takes the first N kept traces of each algorithm and direction.

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

import benchutil
from benchutil import invocation, machine_check, publish, run_header

KEY = "translation"
benchutil.SECTIONS.setdefault(KEY, "Trace translation (LLM)")


def subset(traces: Path, per_cell: int | None, out: Path) -> Path:
    """A traces folder with the first `per_cell` kept traces of each (algorithm, direction) (all when None)."""
    taken: dict[tuple[str, str], int] = defaultdict(int)
    rows = []
    for line in (traces / "traces.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        cell = (row["algorithm"], row["direction"])
        if row.get("kept") and (per_cell is None or taken[cell] < per_cell):
            taken[cell] += 1
            rows.append(line)
    out.mkdir(parents=True, exist_ok=True)
    (out / "traces.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=Path, required=True, help="a traces folder (`kt traces collect`)")
    parser.add_argument("--per-cell", type=int, default=None, help="kept traces per algorithm and direction")
    parser.add_argument("--backend", default="vllm", choices=["transformers", "vllm"])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--max-new-tokens", type=int, default=1024)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--examples", type=int, default=2)
    parser.add_argument("--no-doc", action="store_true", help="print the section instead of writing the doc")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from kt_train.generation import BackendOptions, SamplingConfig
    from tracegen.translate import parse_answer, translate_traces, value_share

    machine = machine_check(os.cpu_count() or 1, skip=True)
    with tempfile.TemporaryDirectory() as tmp:
        traces = subset(args.traces, args.per_cell, Path(tmp) / "traces")
        records = {r["id"]: r for r in map(json.loads, (traces / "traces.jsonl").read_text().splitlines())}
        sampling = SamplingConfig(temperature=args.temperature, max_new_tokens=args.max_new_tokens)
        start = time.perf_counter()
        summary = translate_traces(
            traces, Path(tmp) / "llm", backend=args.backend, model=args.model, sampling=sampling,
            backend_options=BackendOptions(backend=args.backend),
        )  # fmt: skip
        seconds = time.perf_counter() - start
        translate_traces(traces, Path(tmp) / "template", progress=False)
        llm, template_rows = (
            [json.loads(x) for x in (Path(tmp) / name / "translations.jsonl").read_text().splitlines()]
            for name in ("llm", "template")
        )
    template = {r["id"]: r for r in template_rows}
    cells: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in llm:
        text = row["translation"] or ""
        answered, value = parse_answer(text)
        record = records[row["id"]]
        cells[(row["algorithm"], row["direction"])].append(
            {"answered": answered, "correct": answered and value == record["label"],
             "share": value_share(text, record), "kept": row["kept"]}
        )  # fmt: skip
    lines = [*run_header(invocation("measure_translation.py", argv)), "", machine, ""]
    lines += [
        f"{len(llm)} kept traces ({'all' if args.per_cell is None else f'the first {args.per_cell} per cell'}), "
        f"`--backend {args.backend}`, {args.model}, temperature {args.temperature}, at most {args.max_new_tokens} new "
        f"tokens: {seconds:.0f} s in all ({seconds / max(len(llm), 1):.1f} s per trace, the engine start included).",
        "",
        "| algorithm | direction | traces | answer stated | answer = label | mean value share | kept |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for (algorithm, direction), rows in sorted(cells.items()):
        n = len(rows)
        lines.append(
            f"| {algorithm} | {direction} | {n} | {sum(r['answered'] for r in rows) / n:.0%} | "
            f"{sum(r['correct'] for r in rows) / n:.0%} | {mean(r['share'] for r in rows):.2f} | "
            f"{sum(r['kept'] for r in rows) / n:.0%} |"
        )
    lines += ["", f"Kept overall: {summary['kept']} of {summary['total']}; drop reasons {summary['reasons']}.", ""]
    for row in llm[: args.examples]:
        lines += [f"Example `{row['id']}` ({row['reason']}): the LLM's text, then the template's.", "", "```"]
        lines += [(row["translation"] or "(none)")[:1200], "```", "", "```"]
        lines += [(template[row["id"]]["translation"] or "")[:1200], "```", ""]
    return publish(KEY, "\n".join(lines), args.no_doc)


if __name__ == "__main__":
    sys.exit(main())
