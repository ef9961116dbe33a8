"""Run candidate programs and record what each produced: a verdict from a closed set, never a crash of the run.

DSL programs (SeqCoder output) are parsed and run by the DSL interpreter, which has no `exec` and bounded sizes.
Python programs (prompted models) run in `kt_train.sandbox` (own forked process, rlimits, no network, 5 s wall clock)
and must assign `output` a list of ints; only the head of `output` (the sequence's length plus a margin) comes back.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from dsl.interpreter import run_program
from dsl.parser import parse_program
from dsl.program import DSLError
from kt_train.sandbox import SandboxConfig, SandboxJob, SandboxPool
from kt_train.sandbox import Verdict as SandboxVerdict

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
    BAD_OUTPUT = "bad_output"  # `output` is not a list of ints


EXECUTABLE = frozenset({Verdict.CORRECT, Verdict.WRONG_OUTPUT})


@dataclass(frozen=True)
class CheckConfig:
    """Limits for running candidates."""

    timeout_s: float = field(default=5.0, metadata={"help": "wall-clock limit per Python program (seconds)"})
    memory_mb: int = field(default=512, metadata={"help": "address space a Python program may map (MiB)"})
    workers: int | None = field(default=None, metadata={"help": "sandbox processes (None: one per CPU core)"})
    max_dsl_elements: int = field(
        default=100_000, metadata={"help": "largest list a DSL line may build; larger programs are runtime errors"}
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


# Runs inside the sandbox: execute the candidate in a fresh namespace and return the head of its `output`.
_CHECK_SOURCE = """
def kt_check(code, keep):
    namespace = {"__name__": "__main__"}
    exec(compile(code, "<candidate>", "exec"), namespace)
    if "output" not in namespace:
        return {"status": "no_output"}
    output = namespace["output"]
    if type(output) is not list:
        return {"status": "bad_output", "error": "output is a " + type(output).__name__ + ", not a list"}
    head = output[:keep]
    for value in head:
        if not isinstance(value, int):
            return {"status": "bad_output", "error": "output holds a " + type(value).__name__}
    return {"status": "ok", "output": [int(v) for v in head], "length": len(output)}
"""

_SYNTAX_ERRORS = frozenset({"SyntaxError", "IndentationError", "TabError"})
_SANDBOX_VERDICTS = {
    SandboxVerdict.TIMEOUT: Verdict.TIMEOUT,
    SandboxVerdict.MEMORY: Verdict.MEMORY,
    SandboxVerdict.KILLED: Verdict.KILLED,
    SandboxVerdict.ERROR: Verdict.RUNTIME_ERROR,
}


def _short(message: object, limit: int = 200) -> str:
    text = " ".join(str(message).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def judge(output: Sequence[int], length: int, sequence: Sequence[int], modulus: int | None) -> CheckResult:
    """The verdict for an executable program's output (mod `modulus` first, for natural data)."""
    values = [v % modulus for v in output] if modulus else list(output)
    correct = length == len(sequence) and values == list(sequence)
    return CheckResult(Verdict.CORRECT if correct else Verdict.WRONG_OUTPUT, values, length)


def check_dsl(code: str | None, sequence: Sequence[int], config: CheckConfig, modulus: int | None) -> CheckResult:
    """Parse and run a DSL program with the interpreter."""
    if code is None:
        return CheckResult(Verdict.NO_CODE)
    try:
        program = parse_program(code)
    except DSLError as exc:
        return CheckResult(Verdict.SYNTAX_ERROR, error=_short(exc))
    try:
        output = run_program(program, max_length=config.max_dsl_elements)
    except DSLError as exc:
        return CheckResult(Verdict.RUNTIME_ERROR, error=_short(exc))
    return judge(output[: len(sequence) + config.output_margin], len(output), sequence, modulus)


def _from_sandbox(result: Any, sequence: Sequence[int], modulus: int | None) -> CheckResult:
    if result.verdict != SandboxVerdict.OK:
        message = result.error_message or result.verdict
        error = f"{result.error_type}: {message}" if result.error_type else str(message)
        syntax = result.error_type in _SYNTAX_ERRORS
        return CheckResult(Verdict.SYNTAX_ERROR if syntax else _SANDBOX_VERDICTS[result.verdict], error=_short(error))
    value = result.return_value
    if value is None:  # sys.exit(0) before the check could report
        return CheckResult(Verdict.NO_OUTPUT, error="the program exited before `output` was read")
    if not isinstance(value, dict) or value.get("status") not in {"ok", "no_output", "bad_output"}:
        return CheckResult(Verdict.KILLED, error="the checking code did not report")
    if value["status"] == "no_output":
        return CheckResult(Verdict.NO_OUTPUT, error="the program never assigns `output`")
    if value["status"] == "bad_output":
        return CheckResult(Verdict.BAD_OUTPUT, error=_short(value.get("error", "")))
    return judge(value["output"], int(value["length"]), sequence, modulus)


class CandidateChecker:
    """Checks many candidates at once; owns the sandbox pool (Python mode) until closed."""

    def __init__(self, mode: Mode, config: CheckConfig | None = None, modulus: int | None = None) -> None:
        if mode not in ("dsl", "python"):
            raise ValueError(f"mode must be 'dsl' or 'python', got {mode!r}")
        self.mode, self.config, self.modulus = mode, config or CheckConfig(), modulus
        self._pool: SandboxPool | None = None

    def _sandbox(self) -> SandboxPool:
        if self._pool is None:
            limits = SandboxConfig(timeout_s=self.config.timeout_s, memory_mb=self.config.memory_mb)
            self._pool = SandboxPool(workers=self.config.workers or os.cpu_count() or 1, config=limits)
        return self._pool

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
        jobs = [SandboxJob(_CHECK_SOURCE, "kt_check", [code, n]) for code, n in to_run]
        outcomes = self._sandbox().map(jobs, progress=progress) if jobs else []
        for indices, outcome in zip(to_run.values(), outcomes, strict=True):
            for i in indices:
                results[i] = _from_sandbox(outcome, sequences[i], self.modulus)
        return [r for r in results if r is not None]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

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
    "judge",
]
