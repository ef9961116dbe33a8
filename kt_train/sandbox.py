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
boundary against a determined attacker (use a VM or gVisor for that).
"""

from __future__ import annotations

import contextlib
import ctypes
import enum
import gc
import importlib
import importlib.util
import json
import math
import os
import resource
import select
import shutil
import signal
import struct
import sys
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import subprocess

UID_BASE = 1_500_000_000
"""Jobs run as uid/gid UID_BASE + pid of the job process when the supervisor is root."""

_CLONE_NEWNET = 0x40000000
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_KEEPCAPS = 8
_CAPABILITY_VERSION_3 = 0x20080522
_CAP_DAC_READ_SEARCH = 2
_RESULT_FD = 3
_HEADER = struct.Struct("!Q")
_READ_CHUNK = 65536
_PIPELINE_BYTES = 16384  # a second job is queued to a busy worker only if this small: the pipe never fills


class Verdict(enum.StrEnum):
    """How a job ended: a closed set of values."""

    OK = "ok"
    TIMEOUT = "timeout"
    ERROR = "error"
    MEMORY = "memory"
    KILLED = "killed"


@dataclass(frozen=True)
class SandboxConfig:
    """Limits of one job."""

    timeout_s: float = field(default=5.0, metadata={"help": "wall-clock limit of a job in seconds"})
    grace_s: float = field(default=0.5, metadata={"help": "seconds between SIGTERM and SIGKILL after a timeout"})
    memory_mb: int = field(
        default=512, metadata={"help": "address space (MiB) a job may map on top of the interpreter's own"}
    )
    cpu_s: int | None = field(
        default=None, metadata={"help": "CPU-time limit in seconds (None: the timeout rounded up, plus 1)"}
    )
    file_size_mb: int = field(default=16, metadata={"help": "largest file (MiB) a job may write"})
    max_processes: int = field(
        default=64, metadata={"help": "processes a job may have at once (enforced when jobs run as their own uid)"}
    )
    max_output_bytes: int = field(
        default=64 * 1024, metadata={"help": "bytes kept of stdout and of stderr each; the rest is dropped"}
    )
    network: bool = field(default=False, metadata={"help": "allow network access (off: empty network namespace)"})
    tmp_dir: str | None = field(
        default=None,
        metadata={"help": "where the per-job directories are made (None: /dev/shm if writable, else $TMPDIR or /tmp)"},
    )
    drop_privileges: bool = field(
        default=True, metadata={"help": "when root, run each job as a uid of its own (UID_BASE + pid)"}
    )

    def __post_init__(self) -> None:
        if self.timeout_s <= 0 or self.grace_s < 0:
            raise ValueError("timeout_s must be > 0 and grace_s >= 0")
        if min(self.memory_mb, self.file_size_mb, self.max_processes, self.max_output_bytes) <= 0:
            raise ValueError("memory_mb, file_size_mb, max_processes and max_output_bytes must be > 0")
        if self.cpu_s is not None and self.cpu_s <= 0:
            raise ValueError("cpu_s must be > 0")

    @property
    def cpu_limit_s(self) -> int:
        """The RLIMIT_CPU soft limit in seconds."""
        return self.cpu_s if self.cpu_s is not None else math.ceil(self.timeout_s) + 1


@dataclass
class SandboxResult:
    """The verdict of one job and what it printed and returned."""

    verdict: Verdict
    stdout: str = ""
    stderr: str = ""
    return_value: Any = None
    error_type: str | None = None
    error_message: str | None = None
    duration_s: float = 0.0
    truncated: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (the verdict as its string)."""
        return {**self.__dict__, "verdict": str(self.verdict)}  # shallow: the return value is JSON data already

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SandboxResult:
        return cls(**{**data, "verdict": Verdict(data["verdict"])})


@dataclass(frozen=True)
class SandboxJob:
    """A script to run, or, with `function`, code that defines a function and the arguments to call it with."""

    code: str
    function: str | None = None
    args: Sequence[Any] = ()


# ----- the job process


_LIBC: ctypes.CDLL | None = None


def _libc() -> ctypes.CDLL:
    """The C library (loaded once per process, before the job processes are forked)."""
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
        for name in ("prctl", "capset", "unshare"):
            getattr(_LIBC, name, None)  # resolve the symbols now, not in every job process
    return _LIBC


def _unshare_network() -> bool:
    """Move this process into a new, empty network namespace; False where not permitted."""
    try:
        return _libc().unshare(_CLONE_NEWNET) == 0
    except (OSError, AttributeError):
        return False


def _prctl(option: int, value: int) -> bool:
    try:
        return _libc().prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _disarm_sockets() -> None:
    """Make socket creation raise in this process (used where no network namespace is available)."""
    import _socket
    import socket

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError("network access is disabled in the sandbox")

    for module in (socket, _socket):
        for name in ("socket", "socketpair", "fromfd", "create_connection", "create_server", "getaddrinfo"):
            if hasattr(module, name):
                setattr(module, name, refuse)


def _address_space() -> int:
    """Current virtual memory size of this process in bytes."""
    fd = os.open("/proc/self/statm", os.O_RDONLY)
    try:
        return int(os.read(fd, 256).split()[0]) * resource.getpagesize()
    finally:
        os.close(fd)


def _set_limits(config: SandboxConfig, own_uid: bool) -> None:
    memory = _address_space() + config.memory_mb * 1024 * 1024
    cpu = config.cpu_limit_s
    limits = [
        (resource.RLIMIT_AS, memory, memory),
        (resource.RLIMIT_CPU, cpu, cpu + 1),
        (resource.RLIMIT_FSIZE, config.file_size_mb * 1024 * 1024, config.file_size_mb * 1024 * 1024),
        (resource.RLIMIT_CORE, 0, 0),
    ]
    if own_uid:
        limits.append((resource.RLIMIT_NPROC, config.max_processes, config.max_processes))
    for which, soft, hard in limits:
        resource.setrlimit(which, (soft, hard))


def _drop_privileges(uid: int, capability: Any) -> None:
    """Become `uid`/gid `uid` with no groups, keeping only CAP_DAC_READ_SEARCH (to import from root-only paths).

    The supervisor set PR_SET_KEEPCAPS, so the permitted set survives setresuid; capset then cuts it down, and a
    failure there must stop the job (it would keep every capability).
    """
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    if capability is not None and _libc().capset(*capability) != 0:
        raise PermissionError(f"capset failed: {os.strerror(ctypes.get_errno())}")


def _read_search_capability() -> Any:
    """capset(2) arguments that keep only CAP_DAC_READ_SEARCH (effective and permitted), built before forking."""
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_VERSION_3, 0)
    bit = 1 << _CAP_DAC_READ_SEARCH
    return header, (ctypes.c_uint32 * 6)(bit, bit, 0, 0, 0, 0)  # effective, permitted, inheritable (x2)


def _redirect(null: int, out_w: int, err_w: int, res_w: int) -> None:
    """stdin from /dev/null, stdout/stderr into the capture pipes, the result pipe on fd 3; close the rest."""
    for source, target in ((null, 0), (out_w, 1), (err_w, 2), (res_w, _RESULT_FD)):
        os.dup2(source, target)
    os.closerange(_RESULT_FD + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    for name, fd in (("stdout", 1), ("stderr", 2)):  # the worker's own streams already use fds 1 and 2
        stream = getattr(sys, name)
        try:
            ok = stream.fileno() == fd
        except (AttributeError, ValueError, OSError):
            ok = False
        if not ok:
            setattr(sys, name, open(fd, "w", closefd=False, encoding="utf-8", errors="backslashreplace"))  # noqa: SIM115


def _prepare_child(config: SandboxConfig, workdir: str, uid: int | None, capability: Any, block_net: bool) -> None:
    os.setsid()
    os.chdir(workdir)
    if uid is not None:
        os.chown(workdir, uid, uid)
    os.environ["HOME"] = os.environ["TMPDIR"] = workdir  # the rest was set by the worker (_BASE_ENV)
    _set_limits(config, own_uid=uid is not None)
    if uid is not None:
        _drop_privileges(uid, capability)
    if block_net:
        _disarm_sockets()


def _error(exc: BaseException) -> dict[str, Any]:
    return {"verdict": Verdict.ERROR, "error_type": type(exc).__name__, "error_message": str(exc)}


def _print_traceback(exc: BaseException) -> None:
    import traceback

    try:
        exc.__traceback__ = exc.__traceback__.tb_next if exc.__traceback__ else None  # hide the sandbox's frame
        traceback.print_exception(exc, file=sys.stderr)
    except Exception:  # a broken __str__ must not hide the verdict
        pass


def _execute(job: SandboxJob) -> dict[str, Any]:
    """Run the job in this process; the outcome as a result dict (without output and duration)."""
    namespace: dict[str, Any] = {"__name__": "__main__" if job.function is None else "__sandbox__"}
    try:
        exec(compile(job.code, "<sandbox>", "exec"), namespace)
        if job.function is None:
            return {"verdict": Verdict.OK}
        function = namespace.get(job.function)
        if not callable(function):
            raise NameError(f"the code defines no function {job.function!r}")
        value = function(*job.args)
        try:
            return {"verdict": Verdict.OK, "return_json": json.dumps(value)}
        except (TypeError, ValueError) as exc:
            return {
                "verdict": Verdict.ERROR,
                "error_type": "TypeError",
                "error_message": f"the return value of {job.function}() is not JSON-serializable: {exc}",
            }
    except MemoryError as exc:
        namespace.clear()
        return {"verdict": Verdict.MEMORY, "error_type": "MemoryError", "error_message": str(exc)}
    except SystemExit as exc:
        if exc.code in (None, 0):
            return {"verdict": Verdict.OK}
        return {"verdict": Verdict.ERROR, "error_type": "SystemExit", "error_message": str(exc.code)}
    except BaseException as exc:
        _print_traceback(exc)
        return _error(exc)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


@dataclass(frozen=True)
class _Context:
    """What a worker decided once at start and every job process of it inherits."""

    config: SandboxConfig
    drop: bool  # run jobs as uid UID_BASE + pid
    capability: Any  # prebuilt capset arguments (when drop)
    block_net: bool  # no network namespace: disarm the socket module instead
    tmp_root: str
    devnull: int


_BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


def _child_main(job: SandboxJob, context: _Context, workdir: str, fds: tuple[int, int, int]) -> None:
    """Body of the job process: never returns."""
    kill, getresuid = os.kill, os.getresuid  # the job may replace them; keep the real ones
    uid = UID_BASE + os.getpid() if context.drop else None
    try:
        _redirect(context.devnull, *fds)
        _prepare_child(context.config, workdir, uid, context.capability, context.block_net)
        outcome = _execute(job)
    except BaseException as exc:  # setting up failed (e.g. a limit could not be set)
        outcome = _error(exc)
        outcome["error_message"] = f"sandbox setup failed: {exc}"
    with contextlib.suppress(BaseException):
        sys.stdout.flush()
        sys.stderr.flush()
    if uid is not None and getresuid() == (uid, uid, uid):  # never as root: kill(-1) would hit everything
        with contextlib.suppress(OSError):
            kill(-1, signal.SIGKILL)  # every other process of this job's uid: what the job left behind
    try:
        _write_all(_RESULT_FD, json.dumps(outcome).encode())
    finally:
        os._exit(0)


# ----- the supervisor


class _Capped:
    """Bytes read from a pipe, at most `limit` of them kept."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.data = bytearray()
        self.truncated = False

    def add(self, chunk: bytes) -> None:
        room = len(chunk) if self.limit is None else max(0, self.limit - len(self.data))
        self.data += chunk[:room]
        self.truncated |= room < len(chunk)

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def _exited(pidfd: int, timeout: float = 0.0) -> bool:
    """Whether the process of `pidfd` has ended, waiting up to `timeout` seconds (without reaping it)."""
    return bool(select.select([pidfd], [], [], max(0.0, timeout))[0])


def _read_ready(ready: list[int], streams: dict[int, _Capped]) -> None:
    """Read once from each ready pipe; drop a pipe from `streams` at EOF."""
    for fd in ready:
        chunk = os.read(fd, _READ_CHUNK)
        if chunk:
            streams[fd].add(chunk)
        else:
            os.close(fd)
            del streams[fd]


def _pump(streams: dict[int, _Capped], timeout: float) -> None:
    """Read what is ready on the pipes within `timeout` seconds."""
    if streams:
        _read_ready(select.select(list(streams), [], [], max(0.0, timeout))[0], streams)


def _kill_uid(uid: int) -> None:
    """SIGKILL every process of `uid` (from a helper process running as that uid)."""
    helper = os.fork()
    if helper == 0:
        try:
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            if os.getresuid() == (uid, uid, uid):
                os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(helper, 0)


def _killpg(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _my_children() -> list[int]:
    kids: list[int] = []
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children") as f:
                kids.extend(int(k) for k in f.read().split())
    except OSError:
        pass
    return kids


def _reap_all(timeout: float) -> None:
    """Kill and reap every remaining child (orphans re-parented to this subreaper), for up to `timeout` seconds."""
    end = time.monotonic() + timeout
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid:
            continue
        for kid in _my_children():
            with contextlib.suppress(OSError):
                os.kill(kid, signal.SIGKILL)
        if time.monotonic() > end:
            return
        time.sleep(0.002)


def _terminate(pid: int, pidfd: int, config: SandboxConfig, uid: int | None) -> None:
    """SIGTERM the job's process group; SIGKILL it and the job's uid after the grace period."""
    _killpg(pid, signal.SIGTERM)
    _exited(pidfd, config.grace_s)
    if uid is not None:
        _kill_uid(uid)
    _killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _wait(pidfd: int, streams: dict[int, _Capped], result_fd: int, deadline: float) -> bool:
    """Pump the pipes until the job has exited (and its result pipe is read); False on timeout."""
    while not _exited(pidfd):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        ready, _, _ = select.select([*streams, pidfd], [], [], remaining)
        _read_ready([fd for fd in ready if fd != pidfd], streams)
    end = time.monotonic() + 0.2  # a descendant that escaped the kill may still hold the result pipe
    while result_fd in streams and time.monotonic() < end:
        _pump(streams, end - time.monotonic())
    return True


def _verdict_from_status(status: int, timed_out: bool) -> dict[str, Any]:
    if timed_out:
        return {"verdict": Verdict.TIMEOUT}
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU:
            return {"verdict": Verdict.TIMEOUT, "error_message": "CPU time limit exceeded"}
        return {"verdict": Verdict.KILLED, "error_message": f"killed by signal {signal.Signals(sig).name}"}
    code = os.waitstatus_to_exitcode(status)
    return {"verdict": Verdict.KILLED, "error_message": f"exited with status {code} without reporting a result"}


_OUTCOME_KEYS = {"verdict", "error_type", "error_message", "return_json"}


def _decode_outcome(raw: bytes) -> dict[str, Any] | None:
    """The job's report, or None if it is missing or malformed (the job may have written to the pipe itself)."""
    try:
        outcome = json.loads(raw)
        if not isinstance(outcome, dict) or not set(outcome) <= _OUTCOME_KEYS:
            return None
        outcome["verdict"] = Verdict(outcome["verdict"])
        if "return_json" in outcome:
            outcome["return_value"] = json.loads(outcome.pop("return_json"))
    except (ValueError, TypeError, KeyError):
        return None
    return outcome


def _make_workdir(root: str) -> str:
    """A new private directory under `root` with an unpredictable name."""
    while True:
        path = os.path.join(root, f"kt-sandbox-{os.urandom(6).hex()}")
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:
            continue


def _supervise(job: SandboxJob, context: _Context) -> SandboxResult:
    """Run one job in a fresh child process with a private directory, and remove the directory afterwards."""
    workdir = _make_workdir(context.tmp_root)
    try:
        return _run_child(job, context, workdir)
    finally:
        _remove(workdir)


def _run_child(job: SandboxJob, context: _Context, workdir: str) -> SandboxResult:
    """Fork the job process, collect its output and verdict, and kill whatever it left behind."""
    config = context.config
    (out_r, out_w), (err_r, err_w), (res_r, res_w) = os.pipe(), os.pipe(), os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child_main(job, context, workdir, (out_w, err_w, res_w))
    pidfd = os.pidfd_open(pid)
    for fd in (out_w, err_w, res_w):
        os.close(fd)
    uid = UID_BASE + pid if context.drop else None
    out, err, res = _Capped(config.max_output_bytes), _Capped(config.max_output_bytes), _Capped(None)
    streams = {out_r: out, err_r: err, res_r: res}
    finished = _wait(pidfd, streams, res_r, start + config.timeout_s)
    if finished:
        _killpg(pid, signal.SIGKILL)
    else:
        _terminate(pid, pidfd, config, uid)
    _, status = os.waitpid(pid, 0)
    os.close(pidfd)
    duration = time.monotonic() - start
    outcome = _decode_outcome(bytes(res.data)) if finished else None
    if outcome is None and uid is not None:
        _kill_uid(uid)
    _reap_all(config.grace_s + 1.0)
    _drain(streams)
    if outcome is None:
        outcome = _verdict_from_status(status, timed_out=not finished)
    return SandboxResult(
        stdout=out.text(),
        stderr=err.text(),
        duration_s=round(duration, 6),
        truncated=out.truncated or err.truncated,
        **{**outcome, "verdict": Verdict(outcome["verdict"])},
    )


def _remove(directory: str) -> None:
    try:
        os.rmdir(directory)  # the common case: the job wrote no files
    except OSError:
        shutil.rmtree(directory, ignore_errors=True)


def _drain(streams: dict[int, _Capped], timeout: float = 0.2) -> None:
    """Read the rest of the pipes (all writers are dead or about to be), then close them."""
    end = time.monotonic() + timeout
    while streams and time.monotonic() < end:
        _pump(streams, end - time.monotonic())
    for fd in streams:
        os.close(fd)
    streams.clear()


# ----- the pool


def _frame(payload: dict[str, Any]) -> bytes:
    data = json.dumps(payload).encode()
    return _HEADER.pack(len(data)) + data


def _send(fd: int, payload: dict[str, Any]) -> None:
    _write_all(fd, _frame(payload))


def _encode_job(job: SandboxJob | str) -> bytes:
    job = SandboxJob(job) if isinstance(job, str) else job
    return _frame({"code": job.code, "function": job.function, "args": list(job.args)})


def _read_exactly(fd: int, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _recv(fd: int) -> dict[str, Any] | None:
    header = _read_exactly(fd, _HEADER.size)
    if header is None:
        return None
    body = _read_exactly(fd, _HEADER.unpack(header)[0])
    return None if body is None else json.loads(body)


_BOOT = "import json, sys; p = json.loads(sys.argv[1]); sys.path[:0] = p['path']; \
from kt_train.sandbox import _worker_main; _worker_main(p)"


def _default_tmp_dir() -> str:
    """/dev/shm (a tmpfs: creating and removing the job directories is cheap) if usable, else $TMPDIR or /tmp."""
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK | os.X_OK):
        return "/dev/shm"
    return os.environ.get("TMPDIR") or "/tmp"


def _worker_context(config: SandboxConfig) -> _Context:
    """Set this worker up (subreaper, no new privileges, network namespace) and describe what its jobs inherit."""
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)
    drop = config.drop_privileges and os.geteuid() == 0 and _prctl(_PR_SET_KEEPCAPS, 1)
    block_net = not config.network and not _unshare_network()
    capability = _read_search_capability() if drop else None
    tmp_root = config.tmp_dir or _default_tmp_dir()
    os.environ.clear()  # jobs see only this, plus HOME and TMPDIR: no secrets of the caller
    os.environ.update(_BASE_ENV)
    return _Context(config, drop, capability, block_net, tmp_root, os.open(os.devnull, os.O_RDONLY))


def _worker_main(payload: dict[str, Any]) -> None:
    """Body of a pool worker (a fresh interpreter): preload, then supervise jobs one at a time until EOF."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    job_r, res_w = payload["fds"]
    context = _worker_context(SandboxConfig(**payload["config"]))
    for name in payload["preload"]:
        importlib.import_module(name)
    gc.freeze()  # the collector never walks (so never writes to) what the worker set up: fewer copy-on-write faults
    while (message := _recv(job_r)) is not None:
        job = SandboxJob(message["code"], message["function"], message["args"])
        try:
            result = _supervise(job, context)
        except Exception as exc:
            result = SandboxResult(Verdict.ERROR, error_type=type(exc).__name__, error_message=f"sandbox: {exc}")
        _send(res_w, result.to_dict())


@dataclass
class _Worker:
    process: subprocess.Popen[bytes]
    job_w: int
    res_r: int


class SandboxPool:
    """Pre-forked workers that already imported `preload`; each job runs in its own fresh child of a worker."""

    def __init__(
        self, workers: int | None = None, preload: Sequence[str] = ("json",), config: SandboxConfig | None = None
    ) -> None:
        self.config = config or SandboxConfig()
        self.preload = tuple(preload)
        missing = [name for name in self.preload if importlib.util.find_spec(name) is None]
        if missing:
            raise ValueError(f"cannot preload missing module(s): {', '.join(missing)}")
        self._workers = [self._spawn() for _ in range(workers or os.cpu_count() or 1)]

    def _spawn(self) -> _Worker:
        """Start a worker: a fresh, small interpreter (forking it per job is cheaper than forking this process)."""
        import subprocess

        job_r, job_w = os.pipe()
        res_r, res_w = os.pipe()
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        payload = {
            "fds": [job_r, res_w],
            "config": asdict(self.config),
            "preload": list(self.preload),
            "path": [package_root, *(p for p in sys.path if p)],
        }
        command = [sys.executable, "-I", "-S", "-c", _BOOT, json.dumps(payload)]
        process = subprocess.Popen(command, pass_fds=(job_r, res_w), stdin=subprocess.DEVNULL)
        os.close(job_r)
        os.close(res_w)
        return _Worker(process, job_w, res_r)

    def _retire(self, worker: _Worker) -> None:
        for fd in (worker.job_w, worker.res_r):
            with contextlib.suppress(OSError):
                os.close(fd)
        worker.process.kill()
        worker.process.wait()

    def _replace(self, slot: int) -> None:
        self._retire(self._workers[slot])
        self._workers[slot] = self._spawn()

    def map(self, jobs: Iterable[SandboxJob | str], progress: bool = False) -> list[SandboxResult]:
        """Run the jobs (a str is a script) on all workers; the results in the order of the jobs."""
        queue = deque((i, _encode_job(j)) for i, j in enumerate(jobs))
        results: list[SandboxResult | None] = [None] * len(queue)
        bar = _progress_bar(len(queue)) if progress else None
        inflight: dict[int, deque[tuple[int, bytes]]] = {}  # worker slot -> jobs sent, oldest first
        try:
            while queue or any(inflight.values()):
                self._fill(queue, inflight)
                busy = {self._workers[slot].res_r: slot for slot, sent in inflight.items() if sent}
                ready, _, _ = select.select(list(busy), [], [])
                for fd in ready:
                    index, result = self._collect(busy[fd], inflight, queue)
                    results[index] = result
                    if bar is not None:
                        bar.update(1)
        finally:
            if bar is not None:
                bar.close()
        return [r for r in results if r is not None]

    def _fill(self, queue: deque[tuple[int, bytes]], inflight: dict[int, deque[tuple[int, bytes]]]) -> None:
        """Send jobs to the workers: two small ones in flight per worker (it need not wait for us), else one."""
        for slot in range(len(self._workers)):
            sent = inflight.setdefault(slot, deque())
            while queue and (not sent or (len(sent) < 2 and len(queue[0][1]) <= _PIPELINE_BYTES)):
                item = queue.popleft()
                try:
                    _write_all(self._workers[slot].job_w, item[1])
                except BrokenPipeError:  # the worker died: _collect gives its oldest job the verdict
                    queue.appendleft(item)
                    if not sent:
                        self._replace(slot)
                        continue
                    break
                sent.append(item)

    def _collect(
        self, slot: int, inflight: dict[int, deque[tuple[int, bytes]]], queue: deque[tuple[int, bytes]]
    ) -> tuple[int, SandboxResult]:
        """The result of the oldest job of worker `slot`; `killed` if the worker died (its other jobs go back)."""
        sent = inflight[slot]
        index, _ = sent.popleft()
        message = _recv(self._workers[slot].res_r)
        if message is not None:
            return index, SandboxResult.from_dict(message)
        queue.extendleft(reversed(sent))
        sent.clear()
        self._replace(slot)
        return index, SandboxResult(Verdict.KILLED, error_message="the sandbox worker died while running the job")

    def run(self, job: SandboxJob | str) -> SandboxResult:
        """Run one job."""
        return self.map([job])[0]

    def close(self) -> None:
        """Stop the workers."""
        workers, self._workers = self._workers, []
        for worker in workers:
            os.close(worker.job_w)
        for worker in workers:
            os.close(worker.res_r)
            worker.process.wait()

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _progress_bar(total: int) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc="sandbox", unit="job")


# ----- one-off jobs


def run_job(job: SandboxJob, config: SandboxConfig | None = None) -> SandboxResult:
    """Run one job in a one-worker pool started for it."""
    with SandboxPool(workers=1, preload=(), config=config) as pool:
        return pool.run(job)


def run_code(code: str, config: SandboxConfig | None = None) -> SandboxResult:
    """Run `code` as a script."""
    return run_job(SandboxJob(code), config)


def call_function(
    code: str, function: str, args: Sequence[Any] = (), config: SandboxConfig | None = None
) -> SandboxResult:
    """Run `code`, then `function(*args)`; its JSON-encoded return value (tuples become lists) in `return_value`."""
    return run_job(SandboxJob(code, function, tuple(args)), config)
