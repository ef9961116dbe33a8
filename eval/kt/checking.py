"""Run candidate programs and record what each produced: a verdict from a closed set, never a crash of the run.

DSL programs (SeqCoder output) are parsed and run by the DSL interpreter, which has no `exec` and bounded cost
(`dsl.interpreter.RunLimits`: past a limit the verdict is `resource`); with `uniform_prior_range` set (the uniform
prior prices the programs) a program whose literals that prior cannot encode is `unencodable`, never `correct`.
Python programs (prompted models) run in `kt_train.sandbox` (private filesystem view, own uid, no network, 5 s wall
clock each), one process per candidate (`eval.kt.python_runner`), and must assign `output` a list of ints; only the
head of `output` (the sequence's length plus a margin) comes back.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from dsl.bits import unencodable_literal
from dsl.interpreter import RunLimits, run_program
from dsl.parser import parse_program
from dsl.program import DSLError, DSLResourceError
from eval.kt.python_runner import FORGED_REPORT, PythonRunner
from kt_train.sandbox import DEFAULT_TIMEOUT_S

Mode = Literal["dsl", "python"]


class Verdict(enum.StrEnum):
    """How a candidate ended. Only `correct` and `wrong_output` produced a list of ints (are "executable")."""

    CORRECT = "correct"
    WRONG_OUTPUT = "wrong_output"
    NO_COMPLETION = "no_completion"  # the prompt was not sent (too long) or the model returned nothing
    NO_CODE = "no_code"
    SYNTAX_ERROR = "syntax_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    MEMORY = "memory"
    KILLED = "killed"
    NO_OUTPUT = "no_output"  # ran, but never assigned `output`
    BAD_OUTPUT = "bad_output"  # `output` is not a list of ints (or a Python candidate forged its report)
    RESOURCE = "resource"  # a DSL program past the interpreter's limits (elements, integer size, work)
    UNENCODABLE = "unencodable"  # a DSL literal outside what the uniform prior's price can encode


EXECUTABLE = frozenset({Verdict.CORRECT, Verdict.WRONG_OUTPUT})


@dataclass(frozen=True)
class CheckConfig:
    """Limits for running candidates."""

    timeout_s: float = field(
        default=DEFAULT_TIMEOUT_S, metadata={"help": "CPU-time limit per Python program (seconds)"}
    )
    memory_mb: int = field(default=512, metadata={"help": "address space a Python program may map (MiB)"})
    workers: int | None = field(default=None, metadata={"help": "sandbox processes (None: one per CPU core)"})
    max_dsl_elements: int = field(
        default=100_000, metadata={"help": "largest list a DSL line may build; larger programs get `resource`"}
    )
    max_dsl_total_elements: int = field(
        default=RunLimits.max_total_elements, metadata={"help": "elements of all a DSL program's lines together"}
    )
    max_dsl_int_bits: int = field(
        default=RunLimits.max_int_bits, metadata={"help": "bits of any integer a DSL program writes or computes"}
    )
    max_dsl_work: int = field(
        default=RunLimits.max_work, metadata={"help": "elements a DSL program may read and write over all its lines"}
    )
    uniform_prior_range: int | None = field(
        default=None,
        metadata={"help": "number_range of the uniform prior that prices DSL programs (None: gzip prior, no check)"},
    )
    output_margin: int = field(
        default=1, metadata={"help": "elements kept beyond the sequence's length (a longer output is still wrong)"}
    )


@dataclass(frozen=True)
class CheckResult:
    """What one candidate produced."""

    verdict: Verdict
    output: list[int] | None = None  # the first len(sequence) + margin elements
    output_length: int | None = None  # the full length of `output`
    error: str | None = None

    @property
    def executable(self) -> bool:
        return self.verdict in EXECUTABLE

    @property
    def gaming(self) -> bool:
        """The candidate tried to game the score: a DSL program past the run limits or priced below what it says,
        or a Python candidate that forged its report (a `bad_output` of its own)."""
        forged = self.verdict == Verdict.BAD_OUTPUT and (self.error or "").startswith(FORGED_REPORT)
        return self.verdict in (Verdict.RESOURCE, Verdict.UNENCODABLE) or forged


_SYNTAX_ERRORS = frozenset({"SyntaxError", "IndentationError", "TabError"})
_FAILURES = {"timeout": Verdict.TIMEOUT, "memory": Verdict.MEMORY, "killed": Verdict.KILLED}


def _short(message: object, limit: int = 200) -> str:
    text = " ".join(str(message).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def judge(output: Sequence[int], length: int, sequence: Sequence[int], modulus: int | None) -> CheckResult:
    """The verdict for an executable program's output (mod `modulus` first, for natural data)."""
    values = [v % modulus for v in output] if modulus else list(output)
    correct = length == len(sequence) and values == list(sequence)
    return CheckResult(Verdict.CORRECT if correct else Verdict.WRONG_OUTPUT, values, length)


def check_dsl(code: str | None, sequence: Sequence[int], config: CheckConfig, modulus: int | None) -> CheckResult:
    """Parse and run a DSL program with the interpreter; the verdict names its first failing line (a program cut
    short after a line that fails, as feed & ex decoding ends one, is a runtime error, not a missing output)."""
    if code is None:
        return CheckResult(Verdict.NO_CODE)
    try:
        program = parse_program(code, partial=True)
    except DSLError as exc:
        return CheckResult(Verdict.SYNTAX_ERROR, error=_short(exc))
    limits = RunLimits(
        config.max_dsl_elements, config.max_dsl_total_elements, config.max_dsl_int_bits, config.max_dsl_work
    )
    try:
        output = run_program(program, limits=limits)
    except DSLResourceError as exc:
        return CheckResult(Verdict.RESOURCE, error=_short(exc))
    except DSLError as exc:
        return CheckResult(Verdict.RUNTIME_ERROR, error=_short(exc))
    try:
        parse_program(code)  # the lines run: the program must still end with its output line
    except DSLError as exc:
        return CheckResult(Verdict.SYNTAX_ERROR, error=_short(exc))
    if config.uniform_prior_range is not None:
        problem = unencodable_literal(program, config.uniform_prior_range)
        if problem is not None:
            return CheckResult(Verdict.UNENCODABLE, error=_short(problem))
    return judge(output[: len(sequence) + config.output_margin], len(output), sequence, modulus)


def from_status(status: dict[str, Any], sequence: Sequence[int], modulus: int | None) -> CheckResult:
    """The verdict for a status reported by the Python runner."""
    kind = status.get("status")
    if kind == "ok":
        return judge(status["output"], int(status["length"]), sequence, modulus)
    if kind in ("no_output", "exited"):
        return CheckResult(
            Verdict.NO_OUTPUT,
            error="the program never assigns `output`"
            if kind == "no_output"
            else "the program exited before `output` was read",
        )
    if kind == "bad_output":
        return CheckResult(Verdict.BAD_OUTPUT, error=_short(status.get("error", "")))
    if kind == "error":
        error = _short(f"{status.get('type')}: {status.get('message')}")
        syntax = status.get("type") in _SYNTAX_ERRORS
        return CheckResult(Verdict.SYNTAX_ERROR if syntax else Verdict.RUNTIME_ERROR, error=error)
    return CheckResult(_FAILURES.get(str(kind), Verdict.KILLED), error=_short(status.get("message") or kind))


class CandidateChecker:
    """Checks many candidates at once; owns the sandbox pool (Python mode) until closed."""

    def __init__(self, mode: Mode, config: CheckConfig | None = None, modulus: int | None = None) -> None:
        if mode not in ("dsl", "python"):
            raise ValueError(f"mode must be 'dsl' or 'python', got {mode!r}")
        self.mode, self.config, self.modulus = mode, config or CheckConfig(), modulus
        self._runner: PythonRunner | None = None

    def _python(self) -> PythonRunner:
        if self._runner is None:
            c = self.config
            workers = c.workers or os.cpu_count() or 1
            self._runner = PythonRunner(c.timeout_s, c.memory_mb, workers)
        return self._runner

    def check(
        self, codes: Sequence[str | None], sequences: Sequence[Sequence[int]], progress: bool = False
    ) -> list[CheckResult]:
        """One result per (code, sequence); identical Python programs run once."""
        if len(codes) != len(sequences):
            raise ValueError(f"{len(codes)} programs for {len(sequences)} sequences")
        if self.mode == "dsl":
            return [check_dsl(code, seq, self.config, self.modulus) for code, seq in zip(codes, sequences)]
        results: list[CheckResult | None] = [None] * len(codes)
        to_run: dict[tuple[str, int], list[int]] = {}  # syntax errors too: compiling runs in parallel in the pool
        for i, (code, sequence) in enumerate(zip(codes, sequences)):
            if code is None:
                results[i] = CheckResult(Verdict.NO_CODE)
            else:
                to_run.setdefault((code, len(sequence) + self.config.output_margin), []).append(i)
        if to_run:
            statuses = self._python().run([c for c, _ in to_run], [k for _, k in to_run], progress)
            for indices, status in zip(to_run.values(), statuses, strict=True):
                for i in indices:
                    results[i] = from_status(status, sequences[i], self.modulus)
        return [r for r in results if r is not None]

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
            self._runner = None

    def __enter__(self) -> CandidateChecker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = [
    "EXECUTABLE",
    "CandidateChecker",
    "CheckConfig",
    "CheckResult",
    "Verdict",
    "check_dsl",
    "from_status",
    "judge",
]
