"""KT checking throughput for Python completions: one sandboxed process per candidate (this tree) against the checker
before the sandbox boundary (`--baseline-ref`: batches of 32 candidates in one process, and one per process), side by
side on the same completions (target: >= 1,000 completions/s on 2 cores).

Completions are made from a synthetic KT set in the shapes prompted models write (paper 003, §5.3 and Fig. 12-18):
the sequence as one literal, the literal split into parts that are concatenated, the DSL program rendered as Python
functions, a few wrong, syntactically broken and failing programs; half are wrapped in the answer format with code
fences. With `--completions FILE`, a JSONL of real model output in the official release's format (`prompt` holding
"### Input Sequence:\\n[...]" and `generation`) is used instead. Timing covers extraction and checking (the pool's
start-up is timed apart); every run's verdict counts must agree. Each pass runs in a fresh interpreter, the baseline
from a temporary git worktree of its commit. Writes the `kt_check` section of docs/benchmarks.md.

    python bench/bench_kt_check.py                      # 6,000 completions, 3 alternated repeats (~1 min)
    python bench/bench_kt_check.py --completions /tmp/kt/o1_text.jsonl --no-doc
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from benchutil import (
    BEFORE_BOUNDARY,
    REPO,
    fmt_rate,
    invocation,
    machine_check,
    publish,
    run_header,
    run_in_tree,
    tree_at,
)

from dsl.parser import parse_program
from dsl.program import render_python
from eval.kt.checking import CheckConfig
from eval.kt.completions import extract_code
from eval.kt.dataset import load_kt_dataset
from eval.kt.literal_programs import literal_status
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


CHECK_PASS = """
import time
from collections import Counter
from eval.kt.checking import CandidateChecker, CheckConfig
from eval.kt.completions import extract_code
options = {"workers": 2, **({"batch_size": payload["batch_size"]} if payload["batch_size"] else {})}
start = time.perf_counter()
with CandidateChecker("python", CheckConfig(**options)) as checker:
    checker.check(["output = list([1])"] * 4, [[1]] * 4)  # the pools are up (a program that runs: a call)
    started = time.perf_counter()
    results = checker.check([extract_code(c) for c in payload["completions"]], payload["sequences"])
    wall = time.perf_counter() - started
verdicts = dict(sorted(Counter(r.verdict.value for r in results).items()))
print(json.dumps({"wall": wall, "startup": started - start, "verdicts": verdicts}))
"""


def run_once(
    method: str, tree: Path, batch_size: int | None, completions: list[str], sequences: list[list[int]], repeat: int
) -> Run:
    payload = {"batch_size": batch_size, "completions": completions, "sequences": sequences}
    done = run_in_tree(tree, CHECK_PASS, payload)
    return Run(method, repeat, done["wall"], len(completions), done["verdicts"], done["startup"])


CURRENT = "one process per candidate"

FORK_FLOOR = """
import json, os, sys, time
n = int(sys.argv[1])
exec(compile("w = [0]", "<warm-up>", "exec"), {})  # the parser's first use is paid once, not in every child
json.dumps([1])
start = time.perf_counter()
for i in range(n):
    pid = os.fork()
    if pid == 0:
        namespace = {}
        exec(compile("output = [1, 2, 3]", "<c>", "exec"), namespace)
        json.dumps(namespace["output"])
        os._exit(0)
    os.waitpid(pid, 0)
print(n / (time.perf_counter() - start))
"""


def fork_floor(forks: int = 2000, processes: int = 2) -> float:
    """Forks per second of `processes` bare interpreters side by side, each forking children that compile and run
    a one-line candidate and exit: what no fork-per-candidate design can beat on this machine."""
    runs = [
        subprocess.Popen([sys.executable, "-I", "-S", "-c", FORK_FLOOR, str(forks)], stdout=subprocess.PIPE, text=True)
        for _ in range(processes)
    ]
    return sum(float(run.communicate()[0]) for run in runs)


def measure(completions: list[str], sequences: list[list[int]], repeats: int, baseline: Path, ref: str) -> list[Run]:
    methods = [
        (CURRENT, REPO, None),
        (f"batches of 32 at {ref}", baseline, 32),
        (f"one per process at {ref}", baseline, 1),
    ]
    runs = []
    for repeat in range(1, repeats + 1):
        shift = (repeat - 1) % len(methods)
        for method, tree, size in methods[shift:] + methods[:shift]:
            # distinct texts per repeat: identical programs are checked once, which would flatter the figures
            tagged = [
                f"{c}\n# {repeat}" if "```" not in c else c.replace("\n```", f"\n# {repeat}\n```", 1)
                for c in completions
            ]
            run = run_once(method, tree, size, tagged, sequences, repeat)
            print(f"{method}, repeat {repeat}: {run.wall_s:.2f} s, {run.rate:,.0f}/s {run.verdicts}", file=sys.stderr)
            runs.append(run)
    if len({json.dumps(r.verdicts) for r in runs}) != 1:
        raise SystemExit(f"the methods disagree on the verdicts: {[r.verdicts for r in runs]}")
    return runs


def static_share(completions: list[str], sequences: list[list[int]]) -> int:
    """How many of the completions the checker judges without a process (syntax errors, list-literal programs)."""
    codes = [extract_code(c) for c in completions]
    return sum(
        code is not None and literal_status(code, len(seq) + CheckConfig().output_margin) is not None
        for code, seq in zip(codes, sequences, strict=True)
    )


def report(runs: list[Run], command: str, source: str, machine: str, ref: str, floor: float, static: int) -> str:
    current = statistics.median(r.rate for r in runs if r.method == CURRENT)
    batched = statistics.median(r.rate for r in runs if r.method.startswith("batches"))
    alone = statistics.median(r.rate for r in runs if r.method.startswith("one per process"))
    startup = statistics.median(r.startup_s for r in runs if r.method == CURRENT)
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
            f"| >= {TARGET:,.0f} completions/s on 2 cores | {fmt_rate(current)} (median) | "
            f"{'yes' if current >= TARGET else 'no'} |",
            f"| no more than 10% below batches of 32 at {ref} | {current / batched:.2f}x ({fmt_rate(current)} vs "
            f"{fmt_rate(batched)}, medians) | {'yes' if current >= 0.9 * batched else 'no'} |",
            f"| against one process per candidate at {ref} | {current / alone:.2f}x ({fmt_rate(current)} vs "
            f"{fmt_rate(alone)}) | |",
            "",
            f"- Completions: {source}. Verdicts (every run agreed): {runs[0].verdicts}.",
            f"- {CURRENT}: `CandidateChecker('python', CheckConfig(workers=2))`, 5 s per program, 512 MiB, each "
            "candidate a sandbox job of its own forked from a worker's fork server, which ran the checking code once "
            "(private filesystem view, namespaces, cgroup, own uid; `eval/kt/python_runner.py`), except syntax "
            f"errors and programs that only assign list literals: {static:,} of {runs[0].completions:,} completions "
            "were judged from their text without a process (`eval/kt/literal_programs.py`), the other "
            f"{runs[0].completions - static:,} ran in the sandbox; extraction included; pool start-up "
            f"({startup * 1000:.0f} ms median) excluded.",
            f"- At {ref} (before the boundary): batches of up to 32 candidates in one sandboxed process with "
            "builtins, modules and interpreter hooks put back between them (given up: a candidate could read a "
            "batch-mate's output or replace the checking function), and one process per candidate; no filesystem "
            "view.",
            f"- Fork floor, measured in the same run: two bare `python -I -S` processes side by side, each forking "
            f"children that compile and run `output = [1, 2, 3]` and exit, no sandbox at all: {fmt_rate(floor)} "
            f"forks/s in all ({floor / batched:.2f}x the batched figure): what a process per candidate costs before "
            "any isolation, rlimits or supervision.",
            "- Infinite loops are not in the mix: each costs its 5 s of CPU time whatever the method.",
            f"- {machine}",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=6000, help="synthetic completions")
    parser.add_argument("--completions", type=Path, help="JSONL of real completions (official release format)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baseline-ref", default=BEFORE_BOUNDARY, help="commit whose checker is the baseline")
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
    with tree_at(args.baseline_ref) as baseline:
        runs = measure(completions, sequences, args.repeats, baseline, args.baseline_ref)
    floor = statistics.median(fork_floor() for _ in range(args.repeats))
    print(f"fork floor: {floor:,.0f} forks/s", file=sys.stderr)
    static = static_share(completions, sequences)
    body = report(runs, invocation("bench_kt_check.py", argv), source, machine, args.baseline_ref, floor, static)
    return publish(KEY, body, args.no_doc)


if __name__ == "__main__":
    sys.exit(main())
