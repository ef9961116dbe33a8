"""KT checking throughput for Python completions: batched sandbox processes (the default) against one process per
candidate, side by side, on the same completions (target: >= 1,000 completions/s on 2 cores).

Completions are made from a synthetic KT set in the shapes prompted models write (paper 003, §5.3 and Fig. 12-18):
the sequence as one literal, the literal split into parts that are concatenated, the DSL program rendered as Python
functions, a few wrong, syntactically broken and failing programs; half are wrapped in the answer format with code
fences. With `--completions FILE`, a JSONL of real model output in the official release's format (`prompt` holding
"### Input Sequence:\\n[...]" and `generation`) is used instead. Timing covers extraction and checking (the pool's
start-up is timed apart); every run's verdict counts must agree. Writes the `kt_check` section of docs/benchmarks.md.

    python bench/bench_kt_check.py                      # 6,000 completions, 3 alternated repeats (~1 min)
    python bench/bench_kt_check.py --completions /tmp/kt/o1_text.jsonl --no-doc
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from benchutil import fmt_rate, invocation, machine_check, publish, run_header

from dsl.parser import parse_program
from dsl.program import render_python
from eval.kt.checking import CandidateChecker, CheckConfig
from eval.kt.completions import extract_code
from eval.kt.dataset import load_kt_dataset
from kt_train.cli import main as kt_main

KEY = "kt_check"
TARGET = 1000.0


def _literal_parts(sequence: list[int], rng: random.Random) -> str:
    cuts = sorted(rng.sample(range(1, len(sequence)), k=min(3, len(sequence) - 1))) if len(sequence) > 1 else []
    parts = [sequence[a:b] for a, b in zip([0, *cuts], [*cuts, len(sequence)])]
    names = [f"part_{i}" for i in range(len(parts))]
    lines = [f"{n} = {p}" for n, p in zip(names, parts)]
    return "\n".join([*lines, f"output = {' + '.join(names)}"])


def synthetic_completions(count: int, seed: int) -> tuple[list[str], list[list[int]]]:
    """`count` completions in prompted-model shapes for the sequences of a fresh synthetic set."""
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "set"
        kt_main(["dsl", "eval-set", "--bytes", str(80 * count), "--seed", str(seed), "--output", str(target)])
        items = load_kt_dataset(target).items[:count]
    rng = random.Random(f"bench-kt-check:{seed}")
    completions, sequences = [], []
    for item in items:
        sequence = list(item.sequence)
        roll = rng.random()
        if roll < 0.35:
            code = f"output = {sequence}"
        elif roll < 0.60:
            code = _literal_parts(sequence, rng)
        elif roll < 0.85:
            code = render_python(parse_program(item.program or ""))
        elif roll < 0.93:
            code = f"output = {[*sequence[:-1], (sequence[-1] + 1) % 256]}"  # wrong by one element
        elif roll < 0.97:
            code = f"output = {sequence}"[:-2]  # cut off: a syntax error
        else:
            code = "values = make_sequence()\noutput = values"  # NameError
        if rng.random() < 0.5:
            code = f"The Python program that generates the sequence is:\n```python\n{code}\n```\n###"
        completions.append(code)
        sequences.append(sequence)
    return completions, sequences


def file_completions(path: Path) -> tuple[list[str], list[list[int]]]:
    """Completions and sequences from a JSONL in the official release's format (rows may be JSON strings)."""
    completions, sequences = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        row = json.loads(row) if isinstance(row, str) else row
        completions.append(row["generation"])
        sequences.append(ast.literal_eval(row["prompt"].split("### Input Sequence:\n")[1].split("\n")[0]))
    return completions, sequences


@dataclass
class Run:
    method: str
    repeat: int
    wall_s: float
    completions: int
    verdicts: dict[str, int]
    startup_s: float

    @property
    def rate(self) -> float:
        return self.completions / self.wall_s


def run_once(method: str, batch_size: int, completions: list[str], sequences: list[list[int]], repeat: int) -> Run:
    start = time.perf_counter()
    with CandidateChecker("python", CheckConfig(batch_size=batch_size, workers=2)) as checker:
        checker.check(["output = [1]"] * 4, [[1]] * 4)  # the pools are up
        started = time.perf_counter()
        results = checker.check([extract_code(c) for c in completions], sequences)
        wall = time.perf_counter() - started
    verdicts = dict(sorted(Counter(r.verdict.value for r in results).items()))
    return Run(method, repeat, wall, len(completions), verdicts, started - start)


def measure(completions: list[str], sequences: list[list[int]], repeats: int, batch_size: int) -> list[Run]:
    methods = [(f"batches of {batch_size}", batch_size), ("one process per candidate", 1)]
    runs = []
    for repeat in range(1, repeats + 1):
        for method, size in methods if repeat % 2 else methods[::-1]:
            # distinct texts per repeat: identical programs are checked once, which would flatter the figures
            tagged = [f"{c}\n# {repeat}" if "```" not in c else c.replace("\n```", f"\n# {repeat}\n```", 1)
                      for c in completions]  # fmt: skip
            run = run_once(method, size, tagged, sequences, repeat)
            print(f"{method}, repeat {repeat}: {run.wall_s:.2f} s, {run.rate:,.0f}/s {run.verdicts}", file=sys.stderr)
            runs.append(run)
    if len({json.dumps(r.verdicts) for r in runs}) != 1:
        raise SystemExit(f"the methods disagree on the verdicts: {[r.verdicts for r in runs]}")
    return runs


def report(runs: list[Run], command: str, source: str, machine: str, batch_size: int) -> str:
    batched = statistics.median(r.rate for r in runs if r.method.startswith("batches"))
    alone = statistics.median(r.rate for r in runs if r.method.startswith("one process"))
    startup = statistics.median(r.startup_s for r in runs)
    return "\n".join(
        [
            *run_header(command),
            "",
            "| method | repeat | completions | wall s | completions/s |",
            "|---|---:|---:|---:|---:|",
            *(f"| {r.method} | {r.repeat} | {r.completions:,} | {r.wall_s:.2f} | {fmt_rate(r.rate)} |" for r in runs),
            "",
            "| target | measured | met |",
            "|---|---:|---|",
            f"| >= {TARGET:,.0f} completions/s on 2 cores | {fmt_rate(batched)} (median; one process per candidate: "
            f"{fmt_rate(alone)}, {batched / alone:.1f}x slower) | {'yes' if batched >= TARGET else 'no'} |",
            "",
            f"- Completions: {source}. Verdicts (every run agreed): {runs[0].verdicts}.",
            f"- Both methods: `CandidateChecker('python', CheckConfig(workers=2, batch_size=...))`, 5 s per program, "
            f"512 MiB, own uid when root, private directory, no network; extraction included; pool start-up "
            f"({startup * 1000:.0f} ms median) excluded. Batches run up to {batch_size} candidates in one sandboxed "
            "process with builtins, modules and interpreter hooks put back between them "
            "(`eval/kt/python_runner.py`); a batch that fails to report reruns its candidates one per process.",
            "- Infinite loops are not in the mix: each costs its 5 s timeout whatever the method.",
            f"- {machine}",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=6000, help="synthetic completions")
    parser.add_argument("--completions", type=Path, help="JSONL of real completions (official release format)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=CheckConfig().batch_size)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-doc", action="store_true", help="print the section instead of writing the doc")
    args = parser.parse_args(argv)
    machine = machine_check(2, skip=False)
    if args.completions:
        completions, sequences = file_completions(args.completions)
        source = f"{len(completions):,} real completions from `{args.completions.name}`"
    else:
        completions, sequences = synthetic_completions(args.count, args.seed)
        source = (
            f"{len(completions):,} made from `kt dsl eval-set` sequences (seed {args.seed}): 35% one literal, 25% a "
            "split literal, 25% the DSL program as Python functions, 8% wrong by one element, 4% cut off (syntax "
            "error), 3% NameError; half in the answer format with fences"
        )
    runs = measure(completions, sequences, args.repeats, args.batch_size)
    body = report(runs, invocation("bench_kt_check.py", argv), source, machine, args.batch_size)
    return publish(KEY, body, args.no_doc)


if __name__ == "__main__":
    sys.exit(main())
