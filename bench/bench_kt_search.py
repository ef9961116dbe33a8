"""Test-time search of a SeqCoder (issue 36): `kt eval kt --search K` for each K on the same held-out sequences,
its wall time beside its Accuracy and CompressionRate, and each K against greedy decoding (K = 1) with paired
bootstrap 95% CIs (`kt eval kt-compare`).

    python bench/bench_kt_search.py --model RUN --dataset EVALSET --limit 2000 --k 1 4 16

Each K's evaluation goes to `--output/k<K>` (resumable: the run contract of `kt eval kt`; a resumed run's seconds
are only those of its last part, so time a run from scratch). Writes `search.json` and the "KT test-time search"
section of docs/benchmarks.md (unless `--no-doc`).
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
from eval.kt.compare import compare_kt
from eval.kt.dataset import load_kt_dataset
from eval.kt.evaluate import KTEvalConfig, run_kt_eval


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a SeqCoder run folder (or checkpoint)")
    parser.add_argument("--dataset", required=True, help="held-out KT set (kt dsl eval-set --exclude CORPUS)")
    parser.add_argument("--limit", type=int, default=2000, help="the first N sequences of the set")
    parser.add_argument("--k", type=int, nargs="+", default=[1, 4, 16], help="programs a sequence (1: greedy)")
    parser.add_argument("--temperature", type=float, default=1.0, help="of the K-1 sampled programs")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=512)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--output", default="outputs/bench/kt_search")
    parser.add_argument("--no-doc", action="store_true")
    args = parser.parse_args(argv)
    if 1 not in args.k:
        parser.error("--k needs 1: every search is compared with greedy decoding")
    torch.set_num_threads(args.threads)
    out = Path(args.output)
    results: dict[int, dict[str, Any]] = {}
    for k in sorted(args.k):
        config = KTEvalConfig(
            dataset=args.dataset, output=str(out / f"k{k}"), mode="dsl", model=args.model, limit=args.limit,
            batch_size=args.batch_size, max_new_tokens=args.max_new_tokens, search=k,
            temperature=0.0 if k == 1 else args.temperature,
        )  # fmt: skip
        started = time.perf_counter()
        metrics = run_kt_eval(config, progress=True)["metrics"]
        seconds = time.perf_counter() - started
        keys = ("accuracy", "compression_rate", "precision", "executable", "num_items")
        results[k] = {"seconds": seconds, **{key: metrics[key] for key in keys}}
        if k > 1:
            results[k]["against_greedy"] = compare_kt(out / "k1", out / f"k{k}")
        print(json.dumps({"k": k, **results[k]}, default=str), file=sys.stderr)
    dataset = load_kt_dataset(args.dataset, args.limit)
    gzip = gzip_rates([item.sequence for item in dataset.items], dataset.symbol_bits, "bytes")["per_sequence"]
    out.mkdir(parents=True, exist_ok=True)
    (out / "search.json").write_text(json.dumps({"gzip_per_sequence": gzip, "by_k": results}, indent=1) + "\n")
    return publish("kt_search", report(results, gzip, args), args.no_doc)


def report(results: dict[int, dict[str, Any]], gzip: float, args: argparse.Namespace) -> str:
    lines = [*run_header(invocation("bench_kt_search.py", None)), ""]
    lines += [
        f"Model `{args.model}`, the first {results[1]['num_items']} sequences of `{args.dataset}` (Gzip per sequence "
        f"on them: {gzip:.4f}); K programs a sequence, the greedy one and K-1 sampled at temperature "
        f"{args.temperature}, the shortest correct kept; {args.threads} torch thread(s). Changes against K = 1 with "
        "paired bootstrap 95% CIs over the sequences.",
        "",
        "| K | Accuracy | CompressionRate | Precision | executable | seconds | Accuracy change (points) | "
        "CompressionRate change |",
        "|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for k, r in sorted(results.items()):
        change = "-", "-"
        if "against_greedy" in r:
            a, c = r["against_greedy"]["accuracy"], r["against_greedy"]["compression_rate"]
            change = (
                f"{a['change']:+.2f} [{a['ci_low']:+.2f}, {a['ci_high']:+.2f}]",
                f"{c['change']:+.4f} [{c['ci_low']:+.4f}, {c['ci_high']:+.4f}]",
            )
        precision = "-" if r["precision"] is None else f"{r['precision']:.3f}"
        lines.append(
            f"| {k} | {100 * r['accuracy']:.2f}% | {r['compression_rate']:.4f} | {precision} | "
            f"{100 * r['executable']:.1f}% | {r['seconds']:.0f} | {change[0]} | {change[1]} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
