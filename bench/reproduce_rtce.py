"""Reproduce the RTCE release's verdicts and the paper's Table 3 QwQ-32B rows from the release's committed generations.

The release (Nickil21/round-trip-code-compression) commits, per algorithm, `data/processed/<alg>/data.json` (its 250
inputs) and `codeio_1k_gens_model_qwq_32b_temp_0.2_n5_verified.csv`: QwQ-32B at T 0.2, n 5, one row per completion
with the value its scorer extracted (`predicted`, JSON; "no answer" where it found none) and its verdict (`status`).
This script builds our benchmark on the release's inputs (`kt rtce build --release-dir`), scores every committed row
with `--scoring release` (`eval.rtce.release_scoring`) against the release's label, and reports

- the row-by-row agreement of our verdict with the release's `status`, per algorithm and task;
- EM (over completions) and Pass@5 (any of the 5) per task from our verdicts, next to the paper's Table 3 row;
- where the committed run differs from the table (most rows are `no answer`: that run is not the table's).

The release is never copied into this repository: pass a checkout (or an extract of its `data/processed`) with
`--release-dir`. Run: `python bench/reproduce_rtce.py --release-dir /tmp/rtce-release` (seconds).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from benchutil import git_revision, invocation, machine_line, now, update_doc

from eval.rtce.release_scoring import release_verdict
from tracegen.benchmark import build_benchmark, load_corpus

GENERATIONS = "codeio_1k_gens_model_qwq_32b_temp_0.2_n5_verified.csv"
ALGORITHMS = ("ae", "lzw", "rle", "huffman")
TASKS = {  # the release's io_pred -> ours, in Table 3's column order
    "output_execution_prediction": "output_pred",
    "output_execution_prediction_with_inversion": "output_pred_inv",
    "input_execution_prediction": "input_pred",
    "input_execution_prediction_with_inversion": "input_pred_inv",
}
TASK_LABELS = {"output_pred": "O/P Pred", "output_pred_inv": "O/P Pred-I", "input_pred": "I/P Pred"}
TASK_LABELS["input_pred_inv"] = "I/P Pred-I"
PAPER_QWQ = {  # Table 3, Qwen/QwQ-32B: (EM, ES, P@5) per task in TASKS order (%)
    "ae": ((12.64, 23.06, 27.59), (18.27, 33.81, 41.62), (1.85, 11.01, 2.31), (2.20, 11.32, 2.89)),
    "lzw": ((15.52, 36.67, 18.03), (16.15, 44.62, 18.68), (9.18, 45.08, 12.57), (9.34, 48.46, 15.38)),
    "rle": ((32.00, 80.23, 57.60), (36.80, 78.62, 66.80), (26.08, 79.49, 53.20), (34.96, 79.76, 61.20)),
    "huffman": ((0.00, 0.00, 0.00), (0.00, 0.22, 0.00), (4.34, 18.25, 7.89), (4.71, 19.52, 11.11)),
}
NO_ANSWER = "no answer"


def generations_file(release_dir: Path, algorithm: str) -> Path | None:
    """The committed generations of `algorithm`, or None where the release has none (RLE's is not committed)."""
    for path in (release_dir / "data" / "processed" / algorithm / GENERATIONS, release_dir / algorithm / GENERATIONS):
        if path.is_file():
            return path
    return None


def completion_of(predicted: str) -> str:
    """A completion holding the release's extracted value as its answer; empty where the release found none."""
    if not predicted or json.loads(predicted) == NO_ANSWER:
        return ""
    return f'[ANSWER]\n{{"output": {predicted}}}\n[/ANSWER]'


def release_label(entry: dict[str, Any], algorithm: str, task: str) -> Any:
    """The release's reference: x for the input tasks, the recorded encoder output (Huffman: the bytes) otherwise."""
    if task.startswith("input"):
        return entry["input"]
    answer = entry["algorithms"][algorithm]["tasks"][task]["answer"]
    return answer[0] if algorithm == "huffman" else answer


def score_algorithm(path: Path, algorithm: str, corpus: list[dict[str, Any]]) -> dict[str, Any]:
    """Agreement, EM and Pass@5 per task of one committed generations file."""
    by_input = {(e["input"], e["category"]): e for e in corpus}
    agree: Counter[str] = Counter()
    rows_per_task: Counter[str] = Counter()
    confusion: Counter[tuple[str, str, str]] = Counter()
    correct: dict[tuple[str, str], list[bool]] = defaultdict(list)
    release_correct: dict[tuple[str, str], list[bool]] = defaultdict(list)
    disagreements = []
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            task = TASKS[row["io_pred"]]
            entry = by_input[(row["input"], row["category"])]
            answer = release_label(entry, algorithm, task)
            verdict = release_verdict(
                completion_of(row["predicted"]),
                algorithm=algorithm,
                predicts_z=task.startswith("output"),
                x=entry["input"],
                answer=answer,
            )
            rows_per_task[task] += 1
            agree[task] += verdict.status == row["status"]
            confusion[(task, row["status"], verdict.status)] += 1
            if verdict.status != row["status"] and len(disagreements) < 5:
                disagreements.append((task, entry["id"], row["status"], verdict.status, row["predicted"][:80]))
            correct[(task, entry["id"])].append(verdict.status == "correct")
            release_correct[(task, entry["id"])].append(row["status"] == "correct")
    tasks = {}
    for task in TASKS.values():
        groups = [v for (t, _), v in correct.items() if t == task]
        theirs = [v for (t, _), v in release_correct.items() if t == task]
        samples = [x for g in groups for x in g]
        tasks[task] = {
            "rows": rows_per_task[task],
            "agree": agree[task],
            "prompts": len(groups),
            "em": 100 * sum(samples) / max(len(samples), 1),
            "pass@5": 100 * sum(any(g[:5]) for g in groups) / max(len(groups), 1),
            "release_em": 100 * sum(x for g in theirs for x in g) / max(len(samples), 1),
            "no_answer": sum(n for (t, s, _), n in confusion.items() if t == task and s == NO_ANSWER),
        }
    return {"tasks": tasks, "disagreements": disagreements}


def markdown(results: dict[str, dict[str, Any]], missing: list[str], argv: list[str] | None) -> str:
    """The docs section: agreement per task, then ours next to Table 3."""
    lines = [
        f"Measured {now()} on {machine_line()}, commit {git_revision()}: `{invocation('reproduce_rtce.py', argv)}`.",
        "",
        "The release's committed QwQ-32B generations (T 0.2, n 5) scored with `--scoring release` on the release's "
        "250 inputs (`kt rtce build --release-dir`), against the release's labels. Agreement: our verdict equals the "
        "release's `status` column, row by row. "
        + (f"Not committed by the release: {', '.join(missing)}." if missing else ""),
        "",
        "| Alg. | Task | rows | agree | agreement | no answer | EM | P@5 | Table 3 EM | Table 3 P@5 |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for algorithm, result in results.items():
        for index, (task, t) in enumerate(result["tasks"].items()):
            em, _es, p5 = PAPER_QWQ[algorithm][index]
            lines.append(
                f"| {algorithm.upper()} | {TASK_LABELS[task]} | {t['rows']} | {t['agree']} | "
                f"{100 * t['agree'] / max(t['rows'], 1):.2f}% | {t['no_answer']} | {t['em']:.2f} | {t['pass@5']:.2f} "
                f"| {em:.2f} | {p5:.2f} |"
            )
    lines.append("")
    for algorithm, result in results.items():
        rows = sum(t["rows"] for t in result["tasks"].values())
        lines.append(f"- {algorithm.upper()}: {100 * agreement(result):.2f}% of {rows} rows agree")
    for algorithm, result in results.items():
        for task, key, theirs, ours, predicted in result["disagreements"]:
            lines.append(
                f"\nDisagreement ({algorithm}, {TASK_LABELS[task]}, {key}): release `{theirs}`, ours `{ours}`, "
                f"predicted `{predicted}`"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--release-dir", required=True, type=Path, help="checkout of round-trip-code-compression")
    parser.add_argument("--no-doc", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        build_benchmark(Path(tmp), release_dir=args.release_dir, progress=False)
        corpus = load_corpus(tmp)
    results, missing = {}, []
    for algorithm in ALGORITHMS:
        path = generations_file(args.release_dir, algorithm)
        if path is None:
            missing.append(algorithm.upper())
            continue
        results[algorithm] = score_algorithm(path, algorithm, corpus)
    body = markdown(results, missing, argv)
    print(body)
    if not args.no_doc:
        update_doc("rtce_release", body)
    return 0 if all(agreement(r) >= 0.999 for r in results.values()) else 1


def agreement(result: dict[str, Any]) -> float:
    """The share of an algorithm's committed rows on which our verdict is the release's."""
    tasks = result["tasks"].values()
    return sum(t["agree"] for t in tasks) / max(sum(t["rows"] for t in tasks), 1)


if __name__ == "__main__":
    sys.exit(main())
