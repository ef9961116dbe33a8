"""Reproduce the RTCE release's verdicts and the paper's Table 3 QwQ-32B rows from the release's committed generations.

The release (Nickil21/round-trip-code-compression) commits, per algorithm, `data/processed/<alg>/data.json` (its 250
inputs) and `codeio_1k_gens_model_qwq_32b_temp_0.2_n5_verified.csv`: QwQ-32B at T 0.2, n 5, one row per completion
with the value its scorer extracted (`predicted`, JSON; "no answer" where it found none) and its verdict (`status`).
This script goes the way a user of `kt` goes, through the CLI's own code:

1. `kt rtce build --release-dir DIR --huffman-target bytes` (the release's inputs; Huffman's z is its bytes);
2. a predictions file of the committed rows (`id`, `model`, `temperature`, `completions`), each completion holding
   the row's `predicted` value as its answer (`[ANSWER]{"output": ...}[/ANSWER]`; empty where the release found none);
3. `kt eval rtce --predictions FILE --scoring release`: the labels are the benchmark's, nothing is substituted.

It then reports the row-by-row agreement of our `release_status` with the release's `status`, on all rows and on the
answered rows apart (most rows are "no answer", which agree trivially), per algorithm and task; EM (over completions)
and Pass@5 (any of the 5) per task next to the paper's Table 3 row. Without generation files it exits 2 with one
error line and writes nothing.

The release is never copied into this repository: pass a checkout (or an extract of its `data/processed`) with
`--release-dir`. Run: `python bench/reproduce_rtce.py --release-dir /tmp/rtce-release` (about a minute).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchutil import DOC, git_revision, invocation, machine_line, now, update_doc

from kt_train.cli import main as kt_main
from tracegen.algorithms import PAPER_ORDER
from tracegen.benchmark import load_corpus
from tracegen.release import RELEASE_ALGORITHMS

GENERATIONS = "codeio_1k_gens_model_qwq_32b_temp_0.2_n5_verified.csv"
ALGORITHMS = tuple(name for name in PAPER_ORDER if name in RELEASE_ALGORITHMS)  # the release's, as Table 3 orders
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


def kt(*args: str) -> None:
    """Run a `kt` command in this process (its printed output dropped); RuntimeError where it fails."""
    with contextlib.redirect_stdout(io.StringIO()):
        status = kt_main(list(args))
    if status != 0:
        raise RuntimeError(f"`kt {' '.join(args[:2])}` failed (exit {status}); its error is above")


def generation_rows(paths: dict[str, Path], corpus: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The committed rows grouped by prediction key (model/t<temperature>/<item>/<algorithm>/<task>), in file order."""
    ids = {(e["input"], e["category"]): e["id"] for e in corpus}
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for algorithm, path in paths.items():
        with path.open(newline="", encoding="utf-8") as handle:
            for number, row in enumerate(csv.DictReader(handle), start=1):
                entry = ids.get((row["input"], row["category"]))
                if entry is None or row["io_pred"] not in TASKS:
                    raise ValueError(f"{path}, row {number}: an input or task that the release's data.json lacks")
                item = f"{entry}/{algorithm}/{TASKS[row['io_pred']]}"
                key = f"{row['model']}/t{float(row['temperature']):g}/{item}"
                groups[key].append(row | {"item": item, "algorithm": algorithm})
    return groups


def write_predictions(path: Path, groups: dict[str, list[dict[str, Any]]]) -> None:
    """The predictions file of `kt eval rtce`: one row per prompt, its committed rows as completions."""
    with path.open("w", encoding="utf-8") as handle:
        for rows in groups.values():
            first = rows[0]
            completions = [completion_of(row["predicted"]) for row in rows]
            record = {"id": first["item"], "model": first["model"], "temperature": float(first["temperature"])}
            handle.write(json.dumps(record | {"completions": completions}) + "\n")


def compare(groups: dict[str, list[dict[str, Any]]], scored_path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """Per algorithm and task: rows, agreement (all rows and answered rows), EM and Pass@5 of our verdicts."""
    scored = {row["key"]: row for row in map(json.loads, scored_path.read_text(encoding="utf-8").splitlines())}
    blank = {"rows": 0, "agree": 0, "answered": 0, "answered_agree": 0, "correct": 0, "prompts": 0, "pass": 0}
    results: dict[str, dict[str, dict[str, Any]]] = {}
    for key, rows in groups.items():
        ours = scored[key]["release_status"]
        algorithm, task = rows[0]["algorithm"], TASKS[rows[0]["io_pred"]]
        tasks = results.setdefault(algorithm, {t: dict(blank, disagreements=[]) for t in TASKS.values()})
        t = tasks[task]
        for row, status in zip(rows, ours, strict=True):
            same = status == row["status"]
            answered = json.loads(row["predicted"]) != NO_ANSWER
            t["rows"] += 1
            t["agree"] += same
            t["answered"] += answered
            t["answered_agree"] += answered and same
            t["correct"] += status == "correct"
            if not same and len(t["disagreements"]) < 3:
                t["disagreements"].append((rows[0]["item"], row["status"], status, row["predicted"][:80]))
        t["prompts"] += 1
        t["pass"] += "correct" in ours[:5]
    return results


def totals(results: dict[str, dict[str, dict[str, Any]]], algorithm: str | None = None) -> dict[str, int]:
    """Summed counts over the tasks of `algorithm` (None: of every algorithm)."""
    keys = ("rows", "agree", "answered", "answered_agree")
    chosen = [t for name, tasks in results.items() if algorithm in (None, name) for t in tasks.values()]
    return {k: sum(t[k] for t in chosen) for k in keys}


def pct(part: float, whole: float) -> str:
    return f"{100 * part / max(whole, 1):.2f}"


def markdown(results: dict[str, dict[str, dict[str, Any]]], missing: list[str], argv: list[str] | None) -> str:
    """The docs section: agreement per task (all rows, answered rows), then ours next to Table 3."""
    total = totals(results)
    lines = [
        f"Measured {now()} on {machine_line()}, commit {git_revision()}: `{invocation('reproduce_rtce.py', argv)}`.",
        "",
        "The release's committed QwQ-32B generations (T 0.2, n 5) through the CLI: `kt rtce build --release-dir DIR "
        "--huffman-target bytes`, then `kt eval rtce --predictions FILE --scoring release` (each committed row a "
        "completion holding its extracted value; the labels are the benchmark's). Agreement: our `release_status` "
        "equals the release's `status`, row by row; answered rows are those where the release found an answer. "
        + (f"Not committed by the release: {', '.join(missing)}." if missing else ""),
        "",
        f"**All rows: {total['agree']:,} of {total['rows']:,} agree; answered rows: {total['answered_agree']:,} of "
        f"{total['answered']:,}.**",
        "",
        "| Alg. | Task | rows | agree | answered | answered agree | EM | P@5 | Table 3 EM | Table 3 P@5 |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for algorithm, tasks in results.items():
        for index, (task, t) in enumerate(tasks.items()):
            em, _es, p5 = PAPER_QWQ[algorithm][index]
            lines.append(
                f"| {algorithm.upper()} | {TASK_LABELS[task]} | {t['rows']:,} | {t['agree']:,} | {t['answered']:,} | "
                f"{t['answered_agree']:,} | {pct(t['correct'], t['rows'])} | {pct(t['pass'], t['prompts'])} | "
                f"{em:.2f} | {p5:.2f} |"
            )
    lines.append("")
    for algorithm in results:
        t = totals(results, algorithm)
        lines.append(
            f"- {algorithm.upper()}: {t['agree']:,} of {t['rows']:,} rows agree ({pct(t['agree'], t['rows'])}%); "
            f"answered: {t['answered_agree']:,} of {t['answered']:,}"
        )
    for algorithm, tasks in results.items():
        for task, t in tasks.items():
            for key, theirs, ours, predicted in t["disagreements"]:
                lines.append(
                    f"\nDisagreement ({algorithm}, {TASK_LABELS[task]}, {key}): release `{theirs}`, ours `{ours}`, "
                    f"predicted `{predicted}`"
                )
    return "\n".join(lines) + "\n"


def reproduce(release_dir: Path, paths: dict[str, Path], work: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """Build, write the predictions and score them in `work` through the `kt` commands; the comparison."""
    bench, out, predictions = work / "bench", work / "eval", work / "predictions.jsonl"
    kt("rtce", "build", "--release-dir", str(release_dir), "--huffman-target", "bytes", "--output", str(bench))
    groups = generation_rows(paths, load_corpus(bench))
    write_predictions(predictions, groups)
    args = ["--benchmark", str(bench), "--predictions", str(predictions), "--output", str(out), "--overwrite"]
    kt("eval", "rtce", *args, "--scoring", "release", "--algorithms", *paths)
    return compare(groups, out / "scored.jsonl")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--release-dir", required=True, type=Path, help="checkout of round-trip-code-compression")
    parser.add_argument("--no-doc", action="store_true", help="print only; leave the docs alone")
    parser.add_argument("--doc", type=Path, default=DOC, help="the benchmarks page to rewrite (default: %(default)s)")
    parser.add_argument(
        "--keep", type=Path, metavar="DIR", help="keep the benchmark, predictions and evaluation in DIR"
    )
    args = parser.parse_args(argv)
    paths = {name: path for name in ALGORITHMS if (path := generations_file(args.release_dir, name)) is not None}
    if not paths:
        print(
            f"reproduce_rtce.py: error: no generations ({GENERATIONS}) under {args.release_dir}/data/processed/<alg>/ "
            f"or {args.release_dir}/<alg>/",
            file=sys.stderr,
        )
        return 2
    try:
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            results = reproduce(args.release_dir, paths, args.keep)
        else:
            with tempfile.TemporaryDirectory() as tmp:
                results = reproduce(args.release_dir, paths, Path(tmp))
    except (RuntimeError, ValueError) as exc:
        print(f"reproduce_rtce.py: error: {exc}", file=sys.stderr)
        return 2
    missing = [name.upper() for name in ALGORITHMS if name not in paths]
    body = markdown(results, missing, argv)
    print(body)
    if not args.no_doc:
        update_doc("rtce_release", body, args.doc)
    total = totals(results)
    return 0 if total["agree"] == total["rows"] else 1


if __name__ == "__main__":
    sys.exit(main())
