"""The job process: set itself up (cgroup, session, directory, limits, uid, network) and run the untrusted code.

The job reports how it ended through its exit status, which the supervisor reads from the kernel: 0 after the code
ran to its end (a function's JSON return value on the result descriptor), `EXIT_ERROR` after an exception (its type
and message on the result descriptor, treated as untrusted text), `EXIT_MEMORY` after a MemoryError. Whatever the
code writes itself (on any descriptor) can at most turn its own verdict into a failure or give it a return value it
could have returned anyway; a job killed, timed out or exiting otherwise never has its result read.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import marshal
import os
import resource
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kt_train.sandbox.boundary import BASE_ENV, JOB_DIR
from kt_train.sandbox.config import UID_BASE, SandboxConfig, SandboxJob
from kt_train.sandbox.system import (
    Limits,
    disarm_sockets,
    drop_privileges,
    install_filter,
    new_session_keyring,
    set_capabilities,
    set_limits,
)

RESULT_FD = 3
EXIT_ERROR = 113
EXIT_MEMORY = 114


def _redirect(null: int, out_w: int, err_w: int, res_w: int) -> None:
    """stdin from /dev/null, stdout/stderr into the capture pipes, the result pipe on fd 3; close the rest.

    sys.stdout and sys.stderr already write to fds 1 and 2 (`worker_context` made sure of it).
    """
    for source, target in ((null, 0), (out_w, 1), (err_w, 2), (res_w, RESULT_FD)):
        os.dup2(source, target)
    os.closerange(RESULT_FD + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])


def _prepare_child(context: JobContext, workdir: str, uid: int | None, limits: Limits) -> None:
    os.setsid()
    os.chdir(workdir)
    if workdir != JOB_DIR:  # weak isolation: a directory of its own (inside the boundary HOME is always /tmp)
        if uid is not None:
            os.chown(workdir, uid, uid)
        os.environ["HOME"] = os.environ["TMPDIR"] = workdir
    set_limits(limits)
    if uid is not None:
        drop_privileges(uid, context.capability)
    else:  # the worker's uid, which owns the worker's keyring: a keyring of its own, and still no capabilities
        new_session_keyring()
        if context.capability is not None:
            set_capabilities(context.capability)
    if context.namespace_filter is not None:
        install_filter(context.namespace_filter)
    if context.block_net:
        disarm_sockets()


def _print_traceback(exc: BaseException) -> None:
    import traceback

    try:
        exc.__traceback__ = exc.__traceback__.tb_next if exc.__traceback__ else None  # hide the sandbox's frame
        traceback.print_exception(exc, file=sys.stderr)
    except Exception:  # a broken __str__ must not hide the verdict
        pass


def _describe(exc: BaseException) -> bytes:
    try:
        text = json.dumps({"error_type": type(exc).__name__, "error_message": str(exc)[:2000]})
    except Exception:  # a hostile __str__
        text = json.dumps({"error_type": "Exception", "error_message": "(unprintable exception)"})
    return text.encode()


def _execute(job: Job, context: JobContext) -> tuple[int, bytes]:
    """Run the job in this process: its exit status and what goes on the result descriptor.

    A return value is encoded by a JSON encoder built before the fork, which looks nothing up in the builtins; on
    the error paths the builtins are put back first (the worker's copy), so code that replaced them (isinstance,
    say) still gets the verdict it earned. Anything else it breaks in its own process can only spoil its own
    verdict.
    """
    code, function_name, args = job
    namespace: dict[str, Any] = {**context.prelude, "__name__": "__main__" if function_name is None else "__sandbox__"}
    try:
        if code:
            exec(compile(code, "<sandbox>", "exec"), namespace)
        if function_name is None:
            return 0, b""
        function = namespace.get(function_name)
        if not callable(function):
            raise NameError(f"the code defines no function {function_name!r}")
        value = function(*args)
        try:
            return 0, context.encode(value)
        except (TypeError, ValueError, RecursionError) as exc:
            _restore_builtins(context)
            raise TypeError(f"the return value of {function_name}() is not JSON-serializable: {exc}") from None
    except MemoryError as exc:
        namespace.clear()
        _restore_builtins(context)
        return EXIT_MEMORY, _describe(exc)
    except SystemExit as exc:
        _restore_builtins(context)
        if exc.code in (None, 0):
            return 0, b"" if function_name is None else b"null"  # a function job always reports a value
        return EXIT_ERROR, json.dumps({"error_type": "SystemExit", "error_message": str(exc.code)[:2000]}).encode()
    except BaseException as exc:
        _restore_builtins(context)
        _print_traceback(exc)
        return EXIT_ERROR, _describe(exc)


def _restore_builtins(context: JobContext) -> None:
    builtins.__dict__.clear()
    builtins.__dict__.update(context.saved_builtins)


def result_encoder() -> Callable[[Any], bytes]:
    """JSON encoding of a return value (as json.dumps) that runs no Python code and looks up no builtin."""

    def refuse(value: Any, type: Any = type, TypeError: Any = TypeError) -> Any:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

    encode = json.encoder.c_make_encoder(  # type: ignore[attr-defined]
        None, refuse, json.encoder.encode_basestring_ascii, None, ": ", ", ", False, False, True
    )
    join = "".join

    def encode_value(value: Any) -> bytes:
        return join(encode(value, 0)).encode()

    return encode_value


def write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


@dataclass(frozen=True)
class JobContext:
    """What a worker decided once at start and every job process of it inherits."""

    config: SandboxConfig
    drop: bool  # run jobs as a uid of their own (`job_uid`)
    block_net: bool  # no network namespace: disarm the socket module instead
    tmp_root: str  # weak isolation: where per-job directories are made ('' inside the boundary)
    devnull: int
    oom_fd: int | None = None  # the cgroup's out-of-memory counter (None: no cgroup)
    bounded: bool = False  # inside the boundary: the worker's pid namespace holds only it and its jobs
    prelude: dict[str, Any] = field(default_factory=dict)  # names every job starts with (the pool's prelude)
    capability: Any = None  # weak isolation as root: prebuilt capset arguments keeping CAP_DAC_READ_SEARCH
    worker_uid: int | None = None  # inside the boundary: the uid of this worker's jobs (unique on the host)
    namespace_filter: Any = None  # a prebuilt seccomp filter refusing new user namespaces (`user_namespace_filter`)
    saved_builtins: dict[str, Any] = field(default_factory=lambda: dict(builtins.__dict__))  # as the worker had them
    encode: Callable[[Any], bytes] = field(default_factory=result_encoder)  # return values to JSON

    def job_uid(self, pid: int) -> int | None:
        """The uid the job process `pid` runs as: inside the boundary the worker's own (pids restart at 1 in every
        worker's namespace, so UID_BASE + pid would be shared by jobs of two workers), else UID_BASE + pid."""
        if not self.drop:
            return None
        return self.worker_uid if self.worker_uid is not None else UID_BASE + pid


Job = tuple[str, "str | None", Sequence[Any]]  # code, function, args


def encode_job(job: SandboxJob) -> bytes:
    """The job as the worker reads it: marshal (cheap to load in the job process) of its JSON-checked parts."""
    return marshal.dumps((job.code, job.function, json.loads(json.dumps(list(job.args)))))


def decode_job(frame: bytes | bytearray | memoryview) -> Job:
    return marshal.loads(frame)


def child_main(
    frame: memoryview, context: JobContext, workdir: str, fds: tuple[int, int, int], limits: Limits
) -> None:
    """Body of the job process: never returns. `frame` is the job as the pool sent it (`encode_job`)."""
    kill, getresuid, exit_now, write = os.kill, os.getresuid, os._exit, write_all  # the job may replace them
    uid = context.job_uid(os.getpid())
    status, report = EXIT_ERROR, b""
    try:
        if context.oom_fd is not None:  # the kernel kills a job's process at the cgroup's limit, not the worker
            fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
            os.write(fd, b"1000")
            os.close(fd)
        _redirect(context.devnull, *fds)
        job = decode_job(frame)
        _prepare_child(context, workdir, uid, limits)
        status, report = _execute(job, context)
    except BaseException as exc:  # setting up failed (e.g. a limit could not be set)
        status, report = EXIT_ERROR, _describe(RuntimeError(f"sandbox setup failed: {exc}"))
    with contextlib.suppress(BaseException):
        sys.stdout.flush()
        sys.stderr.flush()
    if uid is not None and getresuid() == (uid, uid, uid):  # never as root: kill(-1) would hit everything
        with contextlib.suppress(OSError):
            kill(-1, signal.SIGKILL)  # every other process of this job's uid: what the job left behind
    try:
        write(RESULT_FD, report)
    finally:
        exit_now(status)


__all__ = [
    "BASE_ENV",
    "EXIT_ERROR",
    "EXIT_MEMORY",
    "RESULT_FD",
    "JobContext",
    "child_main",
    "decode_job",
    "encode_job",
    "write_all",
]
