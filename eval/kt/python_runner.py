"""Run Python candidates in the sandbox: each candidate in a process of its own, forked from a warm worker.

The checking code (`CHECK_SOURCE`) runs once per worker (the pool's prelude); each candidate is then a sandbox job
of its own: a fresh fork of that warm worker, which inherits the checking function but nothing of any other
candidate (the worker never holds a candidate's code or output in its own memory, `kt_train.sandbox.supervisor`),
with its own limits, uid, /tmp and verdict. A candidate can therefore neither read a batch-mate's code or output nor
change how a later candidate is checked. (Running many candidates in one process, with the interpreter's state put
back in between, was 5x faster and was given up: one candidate could read the others' outputs from memory or replace
the checking function for the rest of its batch.)

Candidates never see the sequences: correctness is judged outside the sandbox, from the head of `output` that the
checking function reports. Syntax errors and programs that only assign list literals are judged without a process
(`eval.kt.literal_programs`: nothing of them runs), with the statuses the checking function would give.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eval.kt.literal_programs import literal_status
from kt_train.sandbox import DEFAULT_TIMEOUT_S, SandboxConfig, SandboxJob, SandboxPool, SandboxResult
from kt_train.sandbox import Verdict as SandboxVerdict

# Run once per worker: `kt_check` runs one candidate in a fresh namespace and returns the head of its `output`
# (statuses: ok, no_output, bad_output; errors surface as the sandbox's verdicts).
CHECK_SOURCE = """
def kt_check(code, keep, type=type, list=list, int=int, len=len, exec=exec, compile=compile):
    # the builtins are bound here: a candidate that replaces them (in its own process) cannot change this report
    namespace = {"__name__": "__main__"}
    exec(compile(code, "<candidate>", "exec"), namespace)
    if "output" not in namespace:
        return {"status": "no_output"}
    output = namespace["output"]
    if type(output) is not list:
        return {"status": "bad_output", "error": "output is a " + type(output).__name__ + ", not a list"}
    head = output[:keep]
    for value in head:
        if type(value) is not int and type(value) is not bool:
            return {"status": "bad_output", "error": "output holds a " + type(value).__name__}
    return {"status": "ok", "output": [int(v) for v in head], "length": len(output)}
"""


FORGED_REPORT = "the result channel holds a report the checking code cannot write"


def _is_int(value: Any) -> bool:
    return type(value) is int  # JSON true / false arrive as bool: not what `kt_check` sends


def reported_status(value: Any, keep: int) -> dict[str, Any]:
    """The status a candidate's result channel holds, checked against what `kt_check` can send: the candidate runs in
    that process and may write its own bytes there (fd 3) and exit, so anything else (an `ok` without a list of ints
    or with the wrong head for its length, unknown keys or statuses) is that candidate's `bad_output`."""
    if value is None:  # sys.exit(0) before the check could report
        return {"status": "exited"}
    kind = value.get("status") if isinstance(value, dict) else None
    if kind == "no_output" and value.keys() == {"status"}:
        return {"status": "no_output"}
    if kind == "bad_output" and value.keys() == {"status", "error"} and isinstance(value["error"], str):
        return {"status": "bad_output", "error": value["error"]}
    if kind == "ok" and value.keys() == {"status", "output", "length"}:
        output, length = value["output"], value["length"]
        well_formed = isinstance(output, list) and all(map(_is_int, output)) and _is_int(length)
        if well_formed and length >= 0 and len(output) == min(keep, length):
            return {"status": "ok", "output": output, "length": length}
    return {"status": "bad_output", "error": f"{FORGED_REPORT}: {repr(value)[:80]}"}


def _status(result: SandboxResult, keep: int) -> dict[str, Any]:
    """A candidate's sandbox result as a checking status."""
    if result.verdict == SandboxVerdict.OK:
        return reported_status(result.return_value, keep)
    if result.verdict == SandboxVerdict.ERROR:
        return {"status": "error", "type": result.error_type, "message": result.error_message}
    return {"status": str(result.verdict), "message": result.error_message}


class PythonRunner:
    """Runs Python candidates and returns one status dict per (code, keep)."""

    def __init__(self, timeout_s: float = DEFAULT_TIMEOUT_S, memory_mb: int = 512, workers: int = 2) -> None:
        self.config = SandboxConfig(timeout_s=timeout_s, memory_mb=memory_mb)
        self.workers = workers
        self._pool: SandboxPool | None = None

    def run(self, codes: Sequence[str], keeps: Sequence[int], progress: bool = False) -> list[dict[str, Any]]:
        """Statuses in the order of `codes`: ok (with `output`, `length`), no_output, bad_output, exited, timeout,
        memory, killed, error (with `type`, `message`)."""
        statuses = [literal_status(code, keep) for code, keep in zip(codes, keeps, strict=True)]
        to_run = [i for i, status in enumerate(statuses) if status is None]
        if to_run:
            if self._pool is None:
                self._pool = SandboxPool(workers=self.workers, config=self.config, prelude=CHECK_SOURCE)
            jobs = [SandboxJob("", "kt_check", [codes[i], keeps[i]]) for i in to_run]
            for i, result in zip(to_run, self._pool.map(jobs, progress=progress), strict=True):
                statuses[i] = _status(result, keeps[i])
        return [status for status in statuses if status is not None]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None


__all__ = ["CHECK_SOURCE", "PythonRunner"]
