"""Test-time search of a SeqCoder (issue 36): `kt eval kt --search K` for each K, and `--line-search R` (with
`--line-backtracks B`), on the same held-out sequences: each one's wall time beside its Accuracy and CompressionRate,
its change against greedy decoding (K = 1), and its CompressionRate minus Gzip per sequence on the raw bytes, each
with a paired bootstrap 95% CI over the sequences.

    python bench/bench_kt_search.py --model RUN --dataset EVALSET --limit 2000 --k 1 4 16 --line-search 8

Each evaluation goes to `--output/k<K>` or `--output/lines<R>b<B>` (resumable: the run contract of `kt eval kt`; a
resumed run's seconds are only those of its last part, so time a run from scratch). Writes `search.json` and the
"KT test-time search" section of docs/benchmarks.md (unless `--no-doc`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch
from benchutil import invocation, publish, run_header

from eval.kt.baselines import gzip_rates
from eval.kt.compare import compare_kt, finished_rows, versus_gzip
from eval.kt.dataset import load_kt_dataset
from eval.kt.evaluate import KTEvalConfig, run_kt_eval


def arms(args: argparse.Namespace) -> list[tuple[str, dict[str, Any]]]:
    """(name, the evaluation's search settings) of each row: K = 1 first, then the other K, then the line search."""
    rows = [(f"k{k}", {"search": k, "temperature": 0.0 if k == 1 else args.temperature}) for k in sorted(args.k)]
    if args.line_search:
        search = {"line_search": args.line_search, "line_backtracks": args.line_backtracks}
        rows.append((f"lines{args.line_search}b{args.line_backtracks}", search | {"temperature": args.temperature}))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a SeqCoder run folder (or checkpoint)")
    parser.add_argument("--dataset", required=True, help="held-out KT set (kt dsl eval-set --exclude CORPUS)")
    parser.add_argument("--limit", type=int, default=2000, help="the first N sequences of the set")
    parser.add_argument("--k", type=int, nargs="+", default=[1, 4, 16], help="programs a sequence (1: greedy)")
    parser.add_argument("--line-search", type=int, default=0, help="R samples for a failing line (0: no such row)")
    parser.add_argument("--line-backtracks", type=int, default=0, help="lines a line search may take back")
    parser.add_argument("--temperature", type=float, default=1.0, help="of the sampled programs and lines")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=512)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--output", default="outputs/bench/kt_search")
    parser.add_argument(
        "--section",
        default="kt_search",
        choices=["kt_search", "kt_search_segments"],
        help="the section of docs/benchmarks.md to write",
    )
    parser.add_argument("--no-doc", action="store_true")
    args = parser.parse_args(argv)
    if 1 not in args.k:
        parser.error("--k needs 1: every search is compared with greedy decoding")
    torch.set_num_threads(args.threads)
    out = Path(args.output)
    dataset = load_kt_dataset(args.dataset, args.limit)
    results: dict[str, dict[str, Any]] = {}
    for name, search in arms(args):
        config = KTEvalConfig(
            dataset=args.dataset,
            output=str(out / name),
            mode="dsl",
            model=args.model,
            limit=args.limit,
            batch_size=args.batch_size,
            max_new_tokens=args.max_new_tokens,
            **search,
        )
        started = time.perf_counter()
        metrics = run_kt_eval(config, progress=True)["metrics"]
        seconds = time.perf_counter() - started
        keys = ("accuracy", "compression_rate", "precision", "executable", "num_items")
        results[name] = {"seconds": seconds, **{key: metrics[key] for key in keys}, **search}
        results[name]["line_search_cost"] = metrics.get("line_search")
        results[name]["below_gzip"] = versus_gzip(finished_rows(out / name)[1], dataset.symbol_bits)
        if name != "k1":
            results[name]["against_greedy"] = compare_kt(out / "k1", out / name)
        print(json.dumps({"arm": name, **results[name]}, default=str), file=sys.stderr)
    gzip = gzip_rates([item.sequence for item in dataset.items], dataset.symbol_bits, "bytes")["per_sequence"]
    out.mkdir(parents=True, exist_ok=True)
    (out / "search.json").write_text(json.dumps({"gzip_per_sequence": gzip, "arms": results}, indent=1) + "\n")
    return publish(args.section, report(results, gzip, args), args.no_doc)


def _ci(entry: dict[str, float], digits: int) -> str:
    return f"{entry['change']:+.{digits}f} [{entry['ci_low']:+.{digits}f}, {entry['ci_high']:+.{digits}f}]"


def report(results: dict[str, dict[str, Any]], gzip: float, args: argparse.Namespace) -> str:
    lines = [*run_header(invocation("bench_kt_search.py", None)), ""]
    lines += [
        f"Model `{args.model}`, the first {results['k1']['num_items']} sequences of `{args.dataset}` (Gzip per "
        f"sequence on their raw bytes: {gzip:.4f}); K programs a sequence, the greedy one and K-1 sampled at "
        f"temperature {args.temperature}, the shortest correct kept; a line search of R samples for a failing line "
        f"at the same temperature, B lines taken back at most; {args.threads} torch thread(s). Changes against K = 1 "
        "and CompressionRate minus Gzip per sequence with paired bootstrap 95% CIs over the sequences.",
        "",
        "| search | Accuracy | CompressionRate | Precision | executable | seconds | Accuracy change (points) | "
        "CompressionRate change | CompressionRate - Gzip per sequence |",
        "|---|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for r in results.values():
        label = (
            f"K = {r['search']}"
            if not r.get("line_search")
            else (f"line search R = {r['line_search']}, B = {r['line_backtracks']}")
        )
        change = ("-", "-")
        if "against_greedy" in r:
            change = (_ci(r["against_greedy"]["accuracy"], 2), _ci(r["against_greedy"]["compression_rate"], 4))
        precision = "-" if r["precision"] is None else f"{r['precision']:.3f}"
        lines.append(
            f"| {label} | {100 * r['accuracy']:.2f}% | {r['compression_rate']:.4f} | {precision} | "
            f"{100 * r['executable']:.1f}% | {r['seconds']:.0f} | {change[0]} | {change[1]} | "
            f"{_ci(r['below_gzip'], 4)} |"
        )
    for name, r in results.items():
        if cost := r.get("line_search_cost"):
            lines += [
                "",
                f"Line search cost ({name}): {cost['greedy_lines']} lines generated greedily, "
                f"{cost['sampled_lines']} sampled for {cost['items_resampled']} of {cost['items']} sequences, "
                f"{cost['backtracks']} taken back.",
            ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
