"""NL round trip (paper 002) on CPU: suite building, the oracle's zero test against sympy.simplify, guard and protocol.

Measures, in one run: building the default arithmetic suite (2,450 expressions) and the logic suite (d <= 5); the
oracle's exact zero test `cancel(together(e_hat - e)) == 0` side by side with the paper's `simplify(e_hat - e) == 0`
on the same pairs (alternated repeats, verdicts compared); `eval.nl.oracle.judge` end to end with cold caches; the
leakage guard on procedural word problems; and a full `kt nl run` of the deterministic participants (sexpr, json,
procedural generators; parser extractor) over the whole suite, report included. Writes the `nl` section of
docs/benchmarks.md unless --no-doc.

    python bench/bench_nl.py --pairs 400 --repeats 3     # ~2 min on 2 cores
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchutil import invocation, load_average, publish, run_header

KEY = "nl"


def swapped(node):  # type: ignore[no-untyped-def]
    """An equivalent tree written differently: the arguments of every + and * swapped."""
    from dsl.expr.tree import Node

    if node.is_leaf:
        return node
    children = tuple(swapped(child) for child in node.children)
    if node.op in ("+", "*"):
        children = children[::-1]
    return Node(op=node.op, children=children)


def timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=400, help="(answer, target) pairs for the zero-test comparison")
    parser.add_argument("--repeats", type=int, default=3, help="alternated repeats of each timing")
    parser.add_argument("--no-doc", action="store_true", help="print the section instead of writing the doc")
    args = parser.parse_args(argv)

    import sympy

    from dsl.expr.arithmetic import to_sympy
    from dsl.expr.procedural import render_arithmetic
    from dsl.expr.serialize import ARITHMETIC, parse_sexpr, to_infix
    from dsl.expr.suite import SuiteConfig, build_suite, hashed_rng, write_suite
    from eval.nl import oracle
    from eval.nl.guard import check_word_problem
    from eval.nl.protocol import NLRunConfig, run_nl

    load = load_average()
    build_s = [timed(lambda: build_suite(SuiteConfig())) for _ in range(args.repeats)]
    suite = build_suite(SuiteConfig())
    logic_s = statistics.median(timed(lambda: build_suite(SuiteConfig(domain="logic", d_max=5))) for _ in range(2))

    trees = [parse_sexpr(row["sexpr"]) for row in suite.rows]
    step = max(1, len(trees) // args.pairs)
    chosen = trees[::step][: args.pairs]
    # half equivalent rewrites (the + and * arguments swapped), half another suite expression (wrong)
    pairs = [(swapped(t), t) if i % 2 == 0 else (chosen[(i + 1) % len(chosen)], t) for i, t in enumerate(chosen)]
    values = [(to_sympy(a), to_sympy(b)) for a, b in pairs]
    exact_runs, simplify_runs = [], []
    for _ in range(args.repeats):
        exact_runs.append(timed(lambda: [sympy.cancel(sympy.together(a - b)) == 0 for a, b in values]))
        simplify_runs.append(timed(lambda: [sympy.simplify(a - b) == 0 for a, b in values]))
    exact = [sympy.cancel(sympy.together(a - b)) == 0 for a, b in values]
    paper = [sympy.simplify(a - b) == 0 for a, b in values]
    agree = sum(x == y for x, y in zip(exact, paper, strict=True))

    completions = [f"Expression: {to_infix(a, ARITHMETIC)}" for a, _ in pairs]

    def judge_all() -> None:
        for cache in (oracle._parse, oracle._equivalent, oracle._target_value):
            cache.cache_clear()
        for completion, (_, target) in zip(completions, pairs, strict=True):
            oracle.judge(completion, target, "arithmetic")

    judge_s = statistics.median(timed(judge_all) for _ in range(args.repeats))
    words = [(render_arithmetic(t, hashed_rng("bench", i)), t.variables()) for i, t in enumerate(trees)]
    guard_s = statistics.median(
        timed(lambda: [check_word_problem(w, v) for w, v in words]) for _ in range(args.repeats)
    )
    passed = sum(check_word_problem(w, v).passed for w, v in words)

    with tempfile.TemporaryDirectory(prefix="bench-nl-") as tmp:
        write_suite(suite, Path(tmp) / "suite")
        config = NLRunConfig(
            str(Path(tmp) / "suite"), str(Path(tmp) / "run"), ["sexpr", "json", "procedural"], ["parser"]
        )
        start = time.perf_counter()
        summary = run_nl(config, progress=False)
        run_s = time.perf_counter() - start
    round_trips = summary["n_rows"]
    n = len(pairs)
    median_exact, median_simplify = statistics.median(exact_runs), statistics.median(simplify_runs)
    lines = [
        *run_header(invocation("bench_nl.py", argv)),
        "",
        "| step | items | median s | per second |",
        "|---|---:|---:|---:|",
        f"| build the arithmetic suite | {len(suite.rows)} | {statistics.median(build_s):.2f} | "
        f"{len(suite.rows) / statistics.median(build_s):,.0f} |",
        f"| build the logic suite (d <= 5) | 1790 | {logic_s:.2f} | {1790 / logic_s:,.0f} |",
        f"| zero test `cancel(together(e_hat - e)) == 0` | {n} | {median_exact:.2f} | {n / median_exact:,.0f} |",
        f"| the paper's `simplify(e_hat - e) == 0` | {n} | {median_simplify:.2f} | {n / median_simplify:,.0f} |",
        f"| `judge` end to end (parse, canonical form, zero test; cold caches) | {n} | {judge_s:.2f} | "
        f"{n / judge_s:,.0f} |",
        f"| leakage guard on procedural word problems | {len(words)} | {guard_s:.3f} | {len(words) / guard_s:,.0f} |",
        f"| `kt nl run`, sexpr + json + procedural x parser, whole suite, report included | {round_trips} | "
        f"{run_s:.1f} | {round_trips / run_s:,.0f} |",
        "",
        f"- Zero test vs simplify: {median_simplify / median_exact:.1f}x faster, same verdict on {agree} of {n} pairs "
        f"({sum(exact)} equivalent: the + and * arguments of a suite expression swapped; the others a different "
        "suite expression). Every timing is the median of alternated repeats.",
        f"- Guard: {passed} of {len(words)} procedural word problems pass (the templates are written to pass it).",
        f"- The deterministic run's accuracy: {summary['matrix']['mean_cell']:.1f}% (parser reading procedural).",
        f"- Load average at the start: {load:.2f}; at the end: {load_average():.2f}.",
    ]
    return publish(KEY, "\n".join(lines), args.no_doc)


if __name__ == "__main__":
    sys.exit(main())
