"""Run untrusted Python in an isolated, limited process and get back a verdict the supervisor observed.

Verdicts (`Verdict`): `ok`; `timeout` (the job's CPU time over `timeout_s`, or the wall-clock safety net); `error`
(an exception: `error_type`, `error_message`, traceback on stderr; also a syntax error, a missing function, a
non-JSON return value, sys.exit(n) with n != 0, a result over `max_result_bytes`); `memory` (MemoryError at the
address-space limit, or killed at the job's cgroup memory limit); `killed` (died by a signal or exited without
reporting, e.g. os._exit, SIGKILL, a segfault).

Every job runs in its own fresh fork of a `SandboxPool` worker (`run_code`/`call_function` start a one-worker pool
for one job). Workers run inside bubblewrap (`boundary.py`): a private read-only filesystem view (interpreter,
stdlib, site-packages, this package; private /tmp and /dev/shm), their own pid, IPC, UTS and network namespaces, a
clean environment, a cgroup bounding each job as a whole (`cgroup.py`), and they die with the caller. Jobs run as a
uid of their own with no capabilities; the supervisor (`supervisor.py`) derives the verdict from the exit status,
signals, its own clock and the cgroup, reads results size-capped, kills everything a job left and empties the
scratch directories after each job. Without bubblewrap the pool refuses unless `allow_weak_isolation` is set.
Threat model, what is not isolated (kernel bugs, side channels) and how it is tested: docs/sandbox.md."""

from kt_train.sandbox.boundary import SandboxUnavailable
from kt_train.sandbox.config import DEFAULT_TIMEOUT_S, UID_BASE, SandboxConfig, SandboxJob, SandboxResult, Verdict
from kt_train.sandbox.explain import explain
from kt_train.sandbox.pool import SandboxPool, call_function, run_code, run_job

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "UID_BASE",
    "SandboxConfig",
    "SandboxJob",
    "SandboxPool",
    "SandboxResult",
    "SandboxUnavailable",
    "Verdict",
    "call_function",
    "explain",
    "run_code",
    "run_job",
]
