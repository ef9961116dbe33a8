"""The job process: set itself up (session, directory, limits, uid, network) and run the untrusted code."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import sys
from dataclasses import dataclass
from typing import Any

from kt_train.sandbox.config import UID_BASE, SandboxConfig, SandboxJob, Verdict
from kt_train.sandbox.system import Limits, disarm_sockets, drop_privileges, set_limits

_RESULT_FD = 3


def _redirect(null: int, out_w: int, err_w: int, res_w: int) -> None:
    """stdin from /dev/null, stdout/stderr into the capture pipes, the result pipe on fd 3; close the rest.

    sys.stdout and sys.stderr already write to fds 1 and 2 (`worker_context` made sure of it).
    """
    for source, target in ((null, 0), (out_w, 1), (err_w, 2), (res_w, _RESULT_FD)):
        os.dup2(source, target)
    os.closerange(_RESULT_FD + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])


def _prepare_child(context: JobContext, workdir: str, uid: int | None, limits: Limits) -> None:
    os.setsid()
    os.chdir(workdir)
    if uid is not None:
        os.chown(workdir, uid, uid)
    os.environ["HOME"] = os.environ["TMPDIR"] = workdir  # the rest was set by the worker (BASE_ENV)
    set_limits(limits)
    if uid is not None:
        drop_privileges(uid, context.capability)
    if context.block_net:
        disarm_sockets()


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


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


@dataclass(frozen=True)
class JobContext:
    """What a worker decided once at start and every job process of it inherits."""

    config: SandboxConfig
    drop: bool  # run jobs as uid UID_BASE + pid
    capability: Any  # prebuilt capset arguments (when drop)
    block_net: bool  # no network namespace: disarm the socket module instead
    tmp_root: str
    devnull: int


BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


def child_main(job: SandboxJob, context: JobContext, workdir: str, fds: tuple[int, int, int], limits: Limits) -> None:
    """Body of the job process: never returns."""
    kill, getresuid = os.kill, os.getresuid  # the job may replace them; keep the real ones
    uid = UID_BASE + os.getpid() if context.drop else None
    try:
        _redirect(context.devnull, *fds)
        _prepare_child(context, workdir, uid, limits)
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
        write_all(_RESULT_FD, json.dumps(outcome).encode())
    finally:
        os._exit(0)


# ----- the supervisor
