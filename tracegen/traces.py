"""Execution traces of the RTCE programs (paper §6.3): snoop-instrumented `main_solution` runs in the sandbox.

For every benchmark item and algorithm, two FORWARD runs are traced: the encoder on x (`encode`) and the decoder on z
(`decode`, z rebuilt from its JSON form by `Algorithm.from_json`, so tuples are tuples again). Each run is one
`SandboxJob` (5 s of CPU time by default) in a `SandboxPool` whose workers preloaded snoop. The job:

- puts the program source into `linecache` under the file name `<main_solution>` (so snoop shows its lines and the
  line numbers are those of the source the models see) and decorates `main_solution` with
  `snoop(depth=D)`, D = the number of `def`s of the source (at least 1);
- traces only frames of that file: standard-library internals (`namedtuple`, import machinery) are never traced,
  which keeps traces short and free of paths and hash-ordered sets of the interpreter's own code;
- writes to stderr without colour and without columns (no time, no thread), every value as its FULL `repr`
  (snoop's `cheap_repr` abbreviation is replaced) up to `max_value_chars` characters; a module is shown as
  `<module 'heapq'>`, without the path it was loaded from. (Only snoop's one-line history of a comprehension
  variable, `Values of i: 0, 1, 2, 3, 4, ..., 251, 252, 253, 254, 255`, keeps its 11-entry summary; the
  comprehension's `Result:` and every variable value are in full.)

The trace is stderr with memory addresses deleted as the paper's release does (`<function f at 0x7f3a...>` ->
`<function f>`; a hex number in a value is kept), trailing blanks and snoop's one-space line prefix removed: the same
input gives a byte-identical trace. The label is the JSON return value that the
sandbox reports (`SandboxResult.return_value`), never text parsed from the trace.

A trace is kept (paper's filter, plus checks of ours) when, in this order: the verdict is ok (else `verdict:<v>`),
stderr was not cut at `max_output_bytes` (`truncated`), it has no runtime-error marker (a traceback or a snoop
`!!!`/`???` exception line: `runtime_error`), its last line is the sentinel
`<<< Return value from main_solution: <value>` (`no_sentinel`), it has at most `max_lines` lines (`too_long`), and
the label equals the benchmark's value, z for `encode` and x for `decode` (`label_mismatch`).

Float arithmetic coding: when an item's `roundtrip_ok` is false, its `decode` run is not made at all (the Listing 4
decoder then returns another text, raises, or loops until the timeout): the record is dropped with reason
`not_roundtrip`, an empty trace and a null label. So every kept `decode` label is exactly x.
"""

from __future__ import annotations

import ast
import contextlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kt_train.hf_dataset import row_id
from kt_train.sandbox import SandboxConfig, SandboxJob, SandboxPool, SandboxResult, Verdict
from kt_train.stages import SUMMARY_FILE, RunFolder, RunOptions, content_hash
from tracegen.algorithms import Algorithm, algorithms_for

TRACES = "traces"
TRACES_FILE = f"{TRACES}.jsonl"
VERSION = 3
"""The code version of the trace records (part of a collection's settings): raised when records change."""
RETRIED_REASONS = ("verdict:timeout", "verdict:killed", "verdict:memory")
"""Drop reasons that a rerun tries again (the run may have been starved or killed from outside)."""
PROGRAM_FILENAME = "<main_solution>"
SENTINEL = "<<< Return value from main_solution: "
DIRECTIONS = ("encode", "decode")
REASONS = (
    "not_roundtrip",
    *(f"verdict:{v}" for v in Verdict if v != Verdict.OK),
    "truncated",
    "runtime_error",
    "no_sentinel",
    "too_long",
    "label_mismatch",
)
"""The closed set of reasons for dropping a record."""

DEFAULT_MAX_LINES = 3000
DROPPED_TRACE_LINES = 200  # lines of a dropped trace kept in traces.jsonl, for inspection
DEFAULT_MAX_VALUE_CHARS = 1_000_000
DEFAULT_MAX_OUTPUT_BYTES = 8 * 1024 * 1024
BATCH_SIZE = 32

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_ERROR_MARKERS = ("Traceback (most recent call last)", "!!! ", "??? ")

# Runs inside the sandbox job, after the constants _SOURCE, _ARG, _DEPTH and _CAP. Everything is underscored so that
# it cannot clash with names of the program (which runs in a namespace of its own anyway).
_JOB_BODY = """
import linecache as _linecache
import sys as _sys
from types import ModuleType as _ModuleType

import snoop as _snoop
from snoop import formatting as _formatting, tracer as _tracer, variables as _variables


def _full_repr(value):
    try:
        if isinstance(value, _ModuleType):  # no installation path in the trace
            return "<module " + repr(value.__name__) + ">"
        text = repr(value)
    except Exception as exc:
        text = "<repr failed: " + type(exc).__name__ + ">"
    if len(text) > _CAP:
        text = text[:_CAP] + "...<" + str(len(text) - _CAP) + " more characters>"
    return text


for _module in (_formatting, _tracer, _variables):
    if not hasattr(_module, "my_cheap_repr"):
        raise RuntimeError("unsupported snoop version: no my_cheap_repr in " + _module.__name__)
    _module.my_cheap_repr = _full_repr
_sys.stderr.flush()
_stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # UTF-8 whatever the locale
_config = _snoop.Config(out=_stderr, columns=(), color=False)


class _ProgramTracer(_config.snoop):
    def _is_internal_frame(self, frame):
        return frame.f_code.co_filename != _FILENAME


_linecache.cache[_FILENAME] = (len(_SOURCE), None, _SOURCE.splitlines(True), _FILENAME)
_program = {"__name__": "__main__"}
exec(compile(_SOURCE, _FILENAME, "exec"), _program)
_traced = _ProgramTracer(depth=_DEPTH)(_program["main_solution"])


def _run_traced():
    try:
        return _traced(_ARG)
    finally:
        _stderr.flush()
"""
ENTRY_FUNCTION = "_run_traced"


@dataclass(frozen=True)
class TraceTask:
    """One forward run to trace: `main_solution(argument)` of `source`; `expected` is the benchmark's JSON value."""

    id: str
    item_id: str
    algorithm: str
    direction: str
    source: str
    argument: Any
    input: Any
    expected: Any
    skip_reason: str | None = None


def count_functions(source: str) -> int:
    """The number of function definitions (`def`, `async def`) in `source`."""
    tree = ast.parse(source)
    return sum(isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) for node in ast.walk(tree))


def instrument(source: str, argument: Any, max_value_chars: int = DEFAULT_MAX_VALUE_CHARS) -> str:
    """The job code that runs `main_solution(argument)` of `source` under snoop; call its `_run_traced()`.

    `argument` is embedded as its Python repr, so it must be a literal (str, int, float, list, tuple, dict).
    """
    if ast.literal_eval(repr(argument)) != argument:
        raise ValueError("the argument must be a Python literal")
    header = (
        f"_FILENAME = {PROGRAM_FILENAME!r}\n_SOURCE = {source!r}\n_ARG = {argument!r}\n"
        f"_DEPTH = {max(1, count_functions(source))}\n_CAP = {int(max_value_chars)}\n"
    )
    return header + _JOB_BODY


def normalize_trace(text: str) -> str:
    """` at 0x...` addresses deleted, snoop's one-space line prefix and trailing blanks removed, no final newline."""
    lines = []
    for line in _ADDRESS.sub("", text).splitlines():
        line = line.rstrip()
        lines.append(line[1:] if line.startswith(" ") else line)
    return "\n".join(lines).strip("\n")


def drop_reason(result: SandboxResult, trace: str, label: Any, expected: Any, max_lines: int) -> str | None:
    """Why the traced run is dropped (one of `REASONS`), or None to keep it."""
    if result.verdict != Verdict.OK:
        return f"verdict:{result.verdict}"
    if result.truncated:
        return "truncated"
    lines = trace.splitlines()
    if any(line.lstrip().startswith(_ERROR_MARKERS) for line in lines):
        return "runtime_error"
    if not lines or not lines[-1].startswith(SENTINEL):
        return "no_sentinel"
    if len(lines) > max_lines:
        return "too_long"
    if label != expected:
        return "label_mismatch"
    return None


def build_tasks(
    corpus: Sequence[Mapping[str, Any]], algorithms: Mapping[str, Algorithm], names: Iterable[str] | None = None
) -> list[TraceTask]:
    """The encode and decode tasks of every item of `corpus` (rtce.json) for the algorithms `names` (default all)."""
    tasks = []
    for item in corpus:
        for name in names if names is not None else item["algorithms"]:
            algorithm = algorithms[name]
            entry = item["algorithms"][name]
            x, z, freq = item["input"], entry["z"], entry["freq"]
            base = {"item_id": item["id"], "algorithm": name}
            tasks.append(
                TraceTask(
                    row_id(item["id"], name, "encode"),
                    **base,
                    direction="encode",
                    source=algorithm.encoder_source(freq),
                    argument=x,
                    input=x,
                    expected=z,
                )
            )
            skip = None if entry["roundtrip_ok"] else "not_roundtrip"
            tasks.append(
                TraceTask(
                    row_id(item["id"], name, "decode"),
                    **base,
                    direction="decode",
                    source=algorithm.decoder_source(freq),
                    argument=algorithm.from_json(z),
                    input=z,
                    expected=x,
                    skip_reason=skip,
                )
            )
    return tasks


def make_record(task: TraceTask, result: SandboxResult | None, max_lines: int) -> dict[str, Any]:
    """The traces.jsonl record of a task and its sandbox result (None: the task was skipped)."""
    if result is None:
        trace, label, reason = "", None, task.skip_reason
    else:
        trace = normalize_trace(result.stderr)
        label = result.return_value
        reason = drop_reason(result, trace, label, task.expected, max_lines)
    num_lines = trace.count("\n") + 1 if trace else 0
    if reason is not None and num_lines > DROPPED_TRACE_LINES:  # keep the file small: a dropped trace's head is enough
        trace = "\n".join(trace.split("\n", DROPPED_TRACE_LINES)[:DROPPED_TRACE_LINES]) + "\n[... trace cut ...]"
    return {
        "id": task.id,
        "item_id": task.item_id,
        "algorithm": task.algorithm,
        "direction": task.direction,
        "input": task.input,
        "trace": trace,
        "trace_lines": num_lines,
        "label": label,
        "kept": reason is None,
        "reason": reason,
    }


def trace_tasks(
    tasks: Sequence[TraceTask],
    pool: SandboxPool,
    max_lines: int = DEFAULT_MAX_LINES,
    max_value_chars: int = DEFAULT_MAX_VALUE_CHARS,
) -> list[dict[str, Any]]:
    """Run the tasks (skipped ones are not run) in `pool`; their records in order."""
    runnable = [t for t in tasks if t.skip_reason is None]
    jobs = [SandboxJob(instrument(t.source, t.argument, max_value_chars), ENTRY_FUNCTION) for t in runnable]
    results = dict(zip((t.id for t in runnable), pool.map(jobs), strict=True))
    return [make_record(t, results.get(t.id), max_lines) for t in tasks]


def summarize(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Kept and dropped counts overall and per algorithm and direction, with the reasons of the dropped."""
    per: dict[str, dict[str, dict[str, Any]]] = {}
    reasons: Counter[str] = Counter()
    kept = total = 0
    for record in records:
        total += 1
        kept += record["kept"]
        cell = per.setdefault(record["algorithm"], {}).setdefault(
            record["direction"], {"kept": 0, "dropped": 0, "reasons": Counter()}
        )
        cell["kept" if record["kept"] else "dropped"] += 1
        if not record["kept"]:
            cell["reasons"][record["reason"]] += 1
            reasons[record["reason"]] += 1
    algorithms = {
        name: {d: {**c, "reasons": dict(sorted(c["reasons"].items()))} for d, c in sorted(dirs.items())}
        for name, dirs in per.items()
    }
    return {
        "total": total,
        "kept": kept,
        "dropped": total - kept,
        "reasons": dict(sorted(reasons.items())),
        "algorithms": algorithms,
    }


def collect_traces(
    benchmark_dir: Path | str,
    output_dir: Path | str,
    workers: int | None = None,
    algorithms: Sequence[str] | None = None,
    max_lines: int = DEFAULT_MAX_LINES,
    progress: bool = True,
    *,
    config: SandboxConfig | None = None,
    max_value_chars: int = DEFAULT_MAX_VALUE_CHARS,
    registry: Mapping[str, Algorithm] | None = None,
    options: RunOptions | None = None,
) -> dict[str, Any]:
    """Trace every forward run of `benchmark_dir`/rtce.json into `output_dir`/traces.jsonl; return the summary.

    Under the run contract (`kt_train.stages`): records already in traces.jsonl (by id) are not traced again, except
    runs that timed out, were killed or ran out of memory (`RETRIED_REASONS`), tried again by up to
    `options.retries` reruns; new ones are appended and flushed per batch. At the end traces.jsonl is rewritten in
    task order (so a resumed or merged collection ends byte-identical to one made in one go) and summary.json is
    written. A rerun with other settings (benchmark bytes, algorithms, limits) is refused unless
    `options.overwrite`. `config` defaults to the paper's 5 s (of CPU time) with room for large traces on stderr
    (`DEFAULT_MAX_OUTPUT_BYTES`); `registry` defaults to `tracegen.algorithms` with the benchmark's Huffman target.
    """
    from tracegen.benchmark import CORPUS_FILE, load_summary, read_corpus

    corpus = read_corpus(benchmark_dir)
    corpus_path = Path(benchmark_dir) / CORPUS_FILE
    if registry is None:  # the benchmark's own listings (Huffman's target)
        registry = algorithms_for(load_summary(benchmark_dir).get("huffman_target", "triple"))
    unknown = sorted(set(algorithms or ()) - set(registry))
    if unknown:
        raise ValueError(f"unknown algorithm(s): {', '.join(unknown)}")
    if max_lines < 1:
        raise ValueError("max_lines must be >= 1")
    tasks = build_tasks(corpus, registry, algorithms)
    config = config or SandboxConfig(max_output_bytes=DEFAULT_MAX_OUTPUT_BYTES)
    settings = {
        "benchmark_sha256": content_hash(corpus_path),
        "algorithms": sorted(algorithms) if algorithms else None,
        "registry": sorted(registry),
        "max_lines": max_lines,
        "max_value_chars": max_value_chars,
        "timeout_s": config.timeout_s,
        "max_output_bytes": config.max_output_bytes,
        "memory_mb": config.memory_mb,
        "version": VERSION,
    }
    folder = RunFolder(output_dir, settings, options)
    with contextlib.ExitStack() as stack:
        pools: list[SandboxPool] = []  # started only when something is left to trace

        def trace(batch: Sequence[TraceTask]) -> list[dict[str, Any]]:
            if not pools:
                pools.append(
                    stack.enter_context(SandboxPool(workers=workers, preload=("json", "snoop"), config=config))
                )
            return trace_tasks(batch, pools[0], max_lines, max_value_chars)

        records = folder.run(TRACES, tasks, lambda t: t.id, trace, BATCH_SIZE, progress, failure=retried_reason)
    summary = summarize(records)
    if not folder.options.sharded:
        (folder.output / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    folder.finish(summary)
    return summary


def retried_reason(record: Mapping[str, Any]) -> str | None:
    """The drop reason of a record that a rerun tries again, or None."""
    return record["reason"] if record["reason"] in RETRIED_REASONS else None


__all__ = [
    "DIRECTIONS",
    "REASONS",
    "RETRIED_REASONS",
    "SENTINEL",
    "TraceTask",
    "build_tasks",
    "collect_traces",
    "count_functions",
    "drop_reason",
    "instrument",
    "normalize_trace",
    "summarize",
    "trace_tasks",
]
