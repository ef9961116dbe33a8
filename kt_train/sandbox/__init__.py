"""Run untrusted Python in a separate, limited process and get back a verdict.

Verdicts (`Verdict`): `ok`; `timeout` (wall clock, or the CPU-time rlimit); `error` (an exception: `error_type`,
`error_message`, traceback on stderr; also a syntax error, a missing function, a non-JSON return value, sys.exit(n)
with n != 0); `memory` (MemoryError, e.g. at the address-space limit); `killed` (died by a signal or exited without
reporting, e.g. os._exit, SIGKILL, a segfault).

Every job runs in its own freshly forked child of a supervisor: a `SandboxPool` worker, a fresh small interpreter
(`python -I -S`) that imported the `preload` modules once (`run_code`/`call_function` start a one-worker pool for
one job). The job process:

- becomes a session leader, gets a private working directory (under /dev/shm when usable, removed afterwards),
  stdin from /dev/null, stdout/stderr into pipes the supervisor reads and caps (`max_output_bytes` each, the excess
  dropped and `truncated` set), and an environment of PATH, LANG, HOME and TMPDIR only (the last two: its directory);
- gets rlimits: address space (`memory_mb` on top of what the interpreter already maps), CPU seconds, file size, no
  core files and, when it runs as its own uid, the process count;
- when the supervisor is root (and `drop_privileges` is on), runs as uid/gid `UID_BASE + its pid` with no groups,
  `PR_SET_NO_NEW_PRIVS` and one capability left, CAP_DAC_READ_SEARCH (read any file, so that it can import modules
  from root-only paths such as /root/.pyenv): it cannot write into root-owned directories, cannot signal the
  supervisor, the caller or other jobs, and RLIMIT_NPROC (which root ignores) bounds fork bombs;
- has no network: each worker moves itself into a new, empty network namespace (`unshare(CLONE_NEWNET)` through
  libc, only a loopback that is down) at start; where that is not permitted, the job's `socket` module is disarmed
  instead (socket creation raises PermissionError).

The supervisor enforces the wall-clock timeout (SIGTERM to the job's process group, SIGKILL after `grace_s`) and,
after every job, kills what the job left behind: `kill(-1, SIGKILL)` run as the job's uid (atomic with respect to
fork, so processes that called setsid die too), `killpg`, and, being a child subreaper, it kills and reaps every
orphan re-parented to it before it takes the next job.

Not isolated (honest limits): there is no file-system namespace. A job can read any file (as root would, through
CAP_DAC_READ_SEARCH; as the caller when not root) and write into world-writable places such as /tmp and /dev/shm
(each file capped by RLIMIT_FSIZE, not the number of files; those files outlive the job). It shares the kernel, the
pid namespace, CPU and memory bandwidth with everything else, and can forge its own verdict (the reporting code runs
in its process). When the supervisor is not root, jobs run as the calling user: they can write wherever that user
can, signal the user's processes, RLIMIT_NPROC is not set (it would count all of the user's processes), and a
descendant that calls setsid while its parent lives escapes the group kill until the subreaper inherits it. Socket
disarming (only without a network namespace) stops Python code, not a subprocess (`os.system("curl ...")`). Linux
only (pidfd, prctl, /proc). A guard against accidents and careless or hostile-but-simple code, not a security
boundary against a determined attacker (use a VM or gVisor for that)."""

from kt_train.sandbox.boundary import SandboxUnavailable
from kt_train.sandbox.config import UID_BASE, SandboxConfig, SandboxJob, SandboxResult, Verdict
from kt_train.sandbox.explain import explain
from kt_train.sandbox.pool import SandboxPool, call_function, run_code, run_job

__all__ = [
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
