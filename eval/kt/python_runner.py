"""Run Python candidates in the sandbox, in batches: one fresh sandboxed process runs up to `batch_size` candidates.

A fork per candidate costs about 1-2 ms on a 2-core virtual machine (see docs/benchmarks.md, `sandbox`), more than a
typical KT candidate takes to run; a batch shares that cost. Inside a batch process each candidate gets:

- its own namespace and its own copy of the builtins; afterwards the module table, the attributes of every module
  loaded before the batch (builtins and sys included) and the interpreter hooks (trace, profile, recursion limit,
  gc) are put back as they were, and a module it imported is imported afresh by the next one;
- its own wall-clock limit (SIGALRM after `timeout_s`); the process keeps the sandbox's limits (rlimits, own uid,
  private directory, no network).

A batch that does not report (a candidate killed the process, swallowed its alarm, exhausted memory) is run again
one candidate per process (`kt_train.sandbox`'s usual jobs), which gives each of its candidates its own verdict.
Candidates never see the sequences: correctness is judged outside the sandbox, so a hostile candidate can at worst
spoil the verdicts of its batch-mates (all from the same model), never make a wrong program count as correct.
`batch_size=1` runs every candidate alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from kt_train.sandbox import SandboxConfig, SandboxJob, SandboxPool, SandboxResult
from kt_train.sandbox import Verdict as SandboxVerdict

# One candidate: run it in a fresh namespace and return the head of its `output` (statuses: ok, no_output,
# bad_output; errors surface as the sandbox's verdicts).
SINGLE_SOURCE = """
def kt_check(code, keep):
    namespace = {"__name__": "__main__"}
    exec(compile(code, "<candidate>", "exec"), namespace)
    return kt_report(namespace, keep)


def kt_report(namespace, keep, type=type, list=list, isinstance=isinstance, int=int, len=len):
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

# Many candidates in one process; `budget_s` bounds the batch: candidates not started by then come back unrun.
BATCH_SOURCE = (
    SINGLE_SOURCE
    + """
import builtins as _builtins
import gc as _gc
import signal as _signal
import sys as _sys
import time as _time

_PRISTINE_BUILTINS = dict(_builtins.__dict__)
_RECURSION_LIMIT = _sys.getrecursionlimit()


class _CandidateTimeout(BaseException):
    pass


def _alarm(signum, frame):
    raise _CandidateTimeout()


def _snapshot():
    modules = {n: m for n, m in _sys.modules.items() if type(getattr(m, "__dict__", None)) is dict}
    return modules, {n: dict(m.__dict__) for n, m in modules.items()}


def _restore(modules, saved):
    for name, module in (("sys", _sys), ("builtins", _builtins)):  # first: the rest below uses them
        module.__dict__.clear()
        module.__dict__.update(saved[name])
    table = _sys.modules
    for name in [n for n in table if n not in modules]:  # imported by the candidate: imported afresh next time
        del table[name]
    for name, module in modules.items():
        table[name] = module
        if module.__dict__ != saved[name]:  # an attribute was patched: put the module back as it was
            module.__dict__.clear()
            module.__dict__.update(saved[name])
    _sys.settrace(None)
    _sys.setprofile(None)
    _sys.setrecursionlimit(_RECURSION_LIMIT)
    _gc.enable()


def _one(code, keep, timeout):
    namespace = {"__name__": "__main__", "__builtins__": dict(_PRISTINE_BUILTINS)}
    try:
        _signal.setitimer(_signal.ITIMER_REAL, timeout)
        try:
            exec(compile(code, "<candidate>", "exec"), namespace)
        finally:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
        return kt_report(namespace, keep)
    except _CandidateTimeout:
        return {"status": "timeout"}
    except MemoryError:
        return {"status": "memory"}
    except SystemExit as exc:
        if exc.code in (None, 0):
            return {"status": "exited"}
        return {"status": "error", "type": "SystemExit", "message": str(exc.code)}
    except BaseException as exc:
        return {"status": "error", "type": type(exc).__name__, "message": str(exc)[:500]}
    finally:
        namespace.clear()


def kt_check_batch(codes, keeps, timeout, budget):
    _signal.signal(_signal.SIGALRM, _alarm)
    modules, saved = _snapshot()
    start = _time.monotonic()
    results = []
    for code, keep in zip(codes, keeps):
        if _time.monotonic() - start > budget:
            break
        results.append(_one(code, keep, timeout))
        _restore(modules, saved)
    return results
"""
)


def _single_status(result: SandboxResult) -> dict[str, Any]:
    """A lone job's sandbox result in the batch's status vocabulary."""
    if result.verdict == SandboxVerdict.OK:
        value = result.return_value
        if value is None:  # sys.exit(0) before the check could report
            return {"status": "exited"}
        if isinstance(value, dict) and value.get("status") in {"ok", "no_output", "bad_output"}:
            return value
        return {"status": "killed", "message": "the checking code did not report"}
    if result.verdict == SandboxVerdict.ERROR:
        return {"status": "error", "type": result.error_type, "message": result.error_message}
    return {"status": str(result.verdict), "message": result.error_message}


class PythonRunner:
    """Runs Python candidates and returns one status dict per (code, keep)."""

    def __init__(
        self,
        timeout_s: float = 5.0,
        memory_mb: int = 512,
        workers: int = 2,
        batch_size: int = 32,
        batch_budget_s: float = 1.0,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.timeout_s, self.memory_mb, self.workers = timeout_s, memory_mb, workers
        self.batch_size, self.batch_budget_s = batch_size, batch_budget_s
        self._pools: dict[str, SandboxPool] = {}

    def _pool(self, kind: str) -> SandboxPool:
        if kind not in self._pools:
            seconds = self.timeout_s if kind == "single" else self.batch_budget_s + self.timeout_s + 1.0
            config = SandboxConfig(timeout_s=seconds, memory_mb=self.memory_mb, cpu_s=math.ceil(seconds) + 1)
            self._pools[kind] = SandboxPool(workers=self.workers, config=config)
        return self._pools[kind]

    def run(self, codes: Sequence[str], keeps: Sequence[int], progress: bool = False) -> list[dict[str, Any]]:
        """Statuses in the order of `codes`: ok (with `output`, `length`), no_output, bad_output, exited, timeout,
        memory, killed, error (with `type`, `message`)."""
        statuses: list[dict[str, Any] | None] = [None] * len(codes)
        alone: list[int] = list(range(len(codes))) if self.batch_size == 1 else []
        if self.batch_size > 1:
            batches = [
                list(range(i, min(i + self.batch_size, len(codes)))) for i in range(0, len(codes), self.batch_size)
            ]
            jobs = [
                SandboxJob(
                    BATCH_SOURCE,
                    "kt_check_batch",
                    [[codes[i] for i in batch], [keeps[i] for i in batch], self.timeout_s, self.batch_budget_s],
                )
                for batch in batches
            ]
            for batch, result in zip(batches, self._pool("batch").map(jobs, progress=progress), strict=True):
                reported = result.return_value if result.verdict == SandboxVerdict.OK else None
                done = reported if isinstance(reported, list) else []
                for i, status in zip(batch, done):
                    statuses[i] = status if isinstance(status, dict) else None
                alone += [i for i in batch if statuses[i] is None]
        if alone:
            jobs = [SandboxJob(SINGLE_SOURCE, "kt_check", [codes[i], keeps[i]]) for i in alone]
            for i, result in zip(alone, self._pool("single").map(jobs), strict=True):
                statuses[i] = _single_status(result)
        return [s if s is not None else {"status": "killed"} for s in statuses]

    def close(self) -> None:
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()


__all__ = ["BATCH_SOURCE", "SINGLE_SOURCE", "PythonRunner"]
