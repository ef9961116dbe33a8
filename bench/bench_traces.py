"""Trace throughput: SandboxPool(workers=2, preload snoop) against one fresh interpreter per trace, side by side.

Both run the same snoop-instrumented RTCE programs (`tracegen.traces.instrument`: the encoder on x and the decoder on
z of the first N runnable tasks of the benchmark) and must give the same labels and byte-identical normalized traces.
The pool forks each job from a worker that already imported snoop; the baseline starts `python -c PROGRAM` per trace
(which imports snoop itself) with subprocess.run on 2 threads. Repeats alternate the methods; figures are medians.
Then it collects the traces of the whole benchmark (`collect_traces`, workers=2) and reports kept/dropped per
algorithm and direction. Writes the `traces` section of docs/benchmarks.md (other sections are left alone).

    python bench/bench_traces.py                         # 100 traces, 3 repeats, then the 250-input benchmark
    python bench/bench_traces.py --traces 40 --repeats 1 --no-full --no-doc
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchutil import invocation, load_average, publish, run_header

from kt_train.sandbox import SandboxConfig, SandboxPool
from tracegen.algorithms import ALGORITHMS
from tracegen.benchmark import build_benchmark, read_corpus
from tracegen.traces import (
    DEFAULT_MAX_LINES,
    DEFAULT_MAX_OUTPUT_BYTES,
    ENTRY_FUNCTION,
    TraceTask,
    build_tasks,
    collect_traces,
    instrument,
    make_record,
    trace_tasks,
)

TARGET_SPEEDUP = 3.0
KEY = "traces"
CONFIG = SandboxConfig(max_output_bytes=DEFAULT_MAX_OUTPUT_BYTES)


@dataclass
class Run:
    """One timed pass over all traces."""

    method: str
    repeat: int
    wall_s: float
    traces: int

    @property
    def rate(self) -> float:
        return self.traces / self.wall_s


def run_pool(tasks: list[TraceTask], workers: int, repeat: int) -> tuple[Run, list[dict[str, Any]]]:
    """All traces through a fresh SandboxPool (its start-up and a first job are not timed)."""
    with SandboxPool(workers=workers, preload=("json", "snoop"), config=CONFIG) as pool:
        trace_tasks(tasks[:1], pool)
        start = time.perf_counter()
        records = trace_tasks(tasks, pool)
        wall = time.perf_counter() - start
    return Run("SandboxPool", repeat, wall, len(tasks)), records


class _Result:
    """The parts of a SandboxResult that make_record reads, from a plain subprocess."""

    def __init__(self, done: subprocess.CompletedProcess[str]) -> None:
        from kt_train.sandbox import Verdict

        self.verdict = Verdict.OK if done.returncode == 0 else Verdict.ERROR
        self.truncated = False
        self.stderr = done.stderr
        self.return_value = json.loads(done.stdout) if done.returncode == 0 else None


def _one_subprocess(task: TraceTask) -> dict[str, Any]:
    code = instrument(task.source, task.argument) + f"\nimport json\nprint(json.dumps({ENTRY_FUNCTION}()))\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    return make_record(task, _Result(done), DEFAULT_MAX_LINES)  # type: ignore[arg-type]


def run_subprocesses(tasks: list[TraceTask], threads: int, repeat: int) -> tuple[Run, list[dict[str, Any]]]:
    """All traces as `python -c PROGRAM`, `threads` at a time."""
    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as executor:
        records = list(executor.map(_one_subprocess, tasks))
    return Run("subprocess per trace", repeat, time.perf_counter() - start, len(tasks)), records


def measure(tasks: list[TraceTask], repeats: int, workers: int) -> list[Run]:
    runs, reference = [], None
    for repeat in range(1, repeats + 1):
        order = [run_pool, run_subprocesses] if repeat % 2 == 1 else [run_subprocesses, run_pool]
        for method in order:
            run, records = method(tasks, workers, repeat)
            compared = [(r["label"], r["trace"], r["kept"]) for r in records]
            if reference is None:
                reference = compared
            elif compared != reference:
                raise SystemExit(f"{run.method} (repeat {repeat}) gave other traces or labels than the first pass")
            print(f"{run.method}, repeat {repeat}: {run.wall_s:.2f} s, {run.rate:,.1f} traces/s", file=sys.stderr)
            runs.append(run)
    return runs


def full_collection(benchmark: Path, workers: int) -> tuple[dict[str, Any], float]:
    """collect_traces over the whole benchmark into a fresh directory: its summary and wall time."""
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        summary = collect_traces(benchmark, out, workers=workers, progress=False)
        return summary, time.perf_counter() - start


def _median_rate(runs: list[Run], method: str) -> float:
    return statistics.median(r.rate for r in runs if r.method == method)


def summary_table(summary: dict[str, Any]) -> list[str]:
    lines = ["| algorithm | direction | kept | dropped | dropped by reason |", "|---|---|---:|---:|---|"]
    for name, directions in summary["algorithms"].items():
        for direction in ("encode", "decode"):
            cell = directions.get(direction, {"kept": 0, "dropped": 0, "reasons": {}})
            reasons = ", ".join(f"{k} {v}" for k, v in cell["reasons"].items()) or "-"
            lines.append(f"| {name} | {direction} | {cell['kept']} | {cell['dropped']} | {reasons} |")
    reasons = ", ".join(f"{k} {v}" for k, v in summary["reasons"].items())
    lines.append(f"| all | both | {summary['kept']} | {summary['dropped']} | {reasons} |")
    return lines


def report(runs: list[Run], command: str, workers: int, load_start: float, full: tuple | None, items: int) -> str:
    pool, baseline = _median_rate(runs, "SandboxPool"), _median_rate(runs, "subprocess per trace")
    speedup = pool / baseline
    lines = [
        *run_header(command),
        "",
        "| method | repeat | traces | wall s | traces/s |",
        "|---|---:|---:|---:|---:|",
        *(f"| {r.method} | {r.repeat} | {r.traces:,} | {r.wall_s:.2f} | {r.rate:,.1f} |" for r in runs),
        "",
        "| target | measured | met |",
        "|---|---:|---|",
        f"| speed-up >= {TARGET_SPEEDUP:.0f}x | {speedup:.1f}x ({pool:,.1f} vs {baseline:,.1f} traces/s, medians) "
        f"| {'yes' if speedup >= TARGET_SPEEDUP else 'no'} |",
        "",
        f"- Traces: the first {runs[0].traces} runnable tasks (encoder on x, decoder on z; all four algorithms) of "
        f"the seed-42 benchmark of {items} inputs, each `main_solution` under `snoop(depth=number of defs)` with full "
        "values (`tracegen.traces.instrument`). Every pass must give the same labels and byte-identical normalized "
        "traces as the first one (checked).",
        f"- SandboxPool: `SandboxPool(workers={workers}, preload=('json', 'snoop'))`, `SandboxConfig(timeout_s=5, "
        "max_output_bytes=8 MiB)`: each trace runs in its own forked child of a worker that imported snoop once. "
        "Pool start-up and a first job are not timed.",
        f"- Baseline: `subprocess.run([sys.executable, '-c', PROGRAM])` per trace on {workers} threads (no limits); "
        "each one starts an interpreter and imports snoop (with executing, asttokens, pygments, cheap_repr).",
        f"- Load average at the start: {load_start:.2f}; at the end: {load_average():.2f}.",
    ]
    if full is not None:
        summary, wall = full
        lines += [
            "",
            f"Kept and dropped traces of the whole benchmark ({items} inputs x 4 algorithms x 2 directions, "
            f"`collect_traces(..., workers={workers})`, {wall:.0f} s, {summary['total'] / wall:,.1f} traces/s; "
            "`kt traces collect --benchmark DIR --output OUT` does the same):",
            "",
            *summary_table(summary),
            "",
            "- `not_roundtrip`: AE items whose float decoder does not give x back (`roundtrip_ok` false) are not run "
            "in the decode direction. `too_long`: more than 3,000 lines (paper's filter). `verdict:<v>`: the sandbox "
            "verdict was not ok (e.g. over the 5 s of CPU time; tracing is slow on long inputs). `truncated`: stderr "
            "over 8 MiB.",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--benchmark", metavar="DIR", help="a `kt rtce build` output (default: build one in /tmp)")
    parser.add_argument("--inputs", type=int, default=250, help="inputs of the benchmark built when none is given")
    parser.add_argument("--traces", type=int, default=100, help="traces per timed pass")
    parser.add_argument("--repeats", type=int, default=3, help="alternated passes of each method")
    parser.add_argument("--workers", type=int, default=2, help="pool workers and baseline threads")
    parser.add_argument("--no-full", action="store_true", help="skip the kept/dropped count of the whole benchmark")
    parser.add_argument("--no-doc", action="store_true", help="print the section instead of writing the doc")
    args = parser.parse_args(argv)
    load_start = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        benchmark = Path(args.benchmark) if args.benchmark else Path(tmp)
        if not args.benchmark:
            build_benchmark(benchmark, seed=42, num_inputs=args.inputs, progress=False)
        corpus = read_corpus(benchmark)
        tasks = [t for t in build_tasks(corpus, ALGORITHMS) if t.skip_reason is None][: args.traces]
        runs = measure(tasks, args.repeats, args.workers)
        full = None if args.no_full else full_collection(benchmark, args.workers)
    body = report(runs, invocation("bench_traces.py", argv), args.workers, load_start, full, len(corpus))
    return publish(KEY, body, args.no_doc)


if __name__ == "__main__":
    sys.exit(main())
