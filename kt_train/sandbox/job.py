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
import os
import resource
import signal
import sys
from dataclasses import dataclass
from typing import Any

from kt_train.sandbox.boundary import BASE_ENV, JOB_DIR
from kt_train.sandbox.config import UID_BASE, SandboxConfig, SandboxJob
from kt_train.sandbox.system import (
    Limits,
    disarm_sockets,
    drop_privileges,
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
    if uid is not None and workdir != JOB_DIR:
        os.chown(workdir, uid, uid)
    os.environ["HOME"] = os.environ["TMPDIR"] = workdir  # the rest was set by the worker (BASE_ENV)
    set_limits(limits)
    new_session_keyring()  # still the worker's uid: the new keyring costs the job's uid no key quota
    if uid is not None:
        drop_privileges(uid, context.capability)
    elif context.capability is not None:  # the worker's uid (drop_privileges off): still no capabilities
        set_capabilities(context.capability)
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


def _execute(job: SandboxJob, prelude: dict[str, Any]) -> tuple[int, bytes]:
    """Run the job in this process: its exit status and what goes on the result descriptor.

    The builtins are put back before the outcome is encoded, so that code which replaced them (isinstance, say)
    still gets the verdict it earned; anything else it breaks in its own process can only spoil its own verdict.
    """
    saved = dict(builtins.__dict__)
    try:
        return _run(job, prelude, saved)
    finally:
        builtins.__dict__.clear()
        builtins.__dict__.update(saved)


def _run(job: SandboxJob, prelude: dict[str, Any], saved: dict[str, Any]) -> tuple[int, bytes]:
    namespace: dict[str, Any] = {**prelude, "__name__": "__main__" if job.function is None else "__sandbox__"}
    try:
        if job.code:
            exec(compile(job.code, "<sandbox>", "exec"), namespace)
        if job.function is None:
            return 0, b""
        function = namespace.get(job.function)
        if not callable(function):
            raise NameError(f"the code defines no function {job.function!r}")
        value = function(*job.args)
        builtins.__dict__.update(saved)
        try:
            return 0, json.dumps(value).encode()
        except (TypeError, ValueError, RecursionError) as exc:
            raise TypeError(f"the return value of {job.function}() is not JSON-serializable: {exc}") from None
    except MemoryError as exc:
        namespace.clear()
        return EXIT_MEMORY, _describe(exc)
    except SystemExit as exc:
        if exc.code in (None, 0):
            return 0, b"" if job.function is None else b"null"  # a function job always reports a value
        return EXIT_ERROR, json.dumps({"error_type": "SystemExit", "error_message": str(exc.code)[:2000]}).encode()
    except BaseException as exc:
        builtins.__dict__.update(saved)
        _print_traceback(exc)
        return EXIT_ERROR, _describe(exc)


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
    prelude: dict[str, Any] | None = None  # names every job starts with (the pool's prelude, run once per worker)
    capability: Any = None  # weak isolation as root: prebuilt capset arguments keeping CAP_DAC_READ_SEARCH
    worker_uid: int | None = None  # inside the boundary: the uid of this worker's jobs (unique on the host)

    def job_uid(self, pid: int) -> int | None:
        """The uid the job process `pid` runs as: inside the boundary the worker's own (pids restart at 1 in every
        worker's namespace, so UID_BASE + pid would be shared by jobs of two workers), else UID_BASE + pid."""
        if not self.drop:
            return None
        return self.worker_uid if self.worker_uid is not None else UID_BASE + pid


def decode_job(frame: bytes | bytearray | memoryview) -> SandboxJob:
    message = json.loads(bytes(frame))
    return SandboxJob(message["code"], message["function"], message["args"])


def child_main(
    frame: memoryview, context: JobContext, workdir: str, fds: tuple[int, int, int], limits: Limits
) -> None:
    """Body of the job process: never returns. `frame` is the job as the pool sent it (JSON)."""
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
        status, report = _execute(job, context.prelude or {})
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


__all__ = ["BASE_ENV", "EXIT_ERROR", "EXIT_MEMORY", "RESULT_FD", "JobContext", "child_main", "decode_job", "write_all"]
