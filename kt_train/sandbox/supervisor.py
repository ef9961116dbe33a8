"""Supervise one job: fork it, enforce the timeout, capture capped output, clean up, decide the verdict.

The verdict comes from what this process observes: its own clock (timeout), the job's exit status and signal, the
CPU-time signal and the cgroup's out-of-memory counter. The job's result descriptor is read only up to
`max_result_bytes` (a job that writes more is killed at once) and handed on as raw bytes: the supervisor never
decodes anything a job wrote.

The supervisor keeps no job's data in Python objects: the job frame and everything read from the job's pipes go
into buffers allocated once per worker and zeroed after every job, so a job forked later inherits no byte of an
earlier one.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kt_train.sandbox.boundary import BASE_ENV, JOB_DIR, SCRATCH_DIRS
from kt_train.sandbox.cgroup import oom_kills
from kt_train.sandbox.config import SandboxConfig, Verdict
from kt_train.sandbox.job import EXIT_ERROR, EXIT_MEMORY, JobContext
from kt_train.sandbox.protocol import INT, STATUS, Buffer, recv_exactly, send_go
from kt_train.sandbox.system import (
    PR_SET_CHILD_SUBREAPER,
    PR_SET_KEEPCAPS,
    PR_SET_NO_NEW_PRIVS,
    _libc,
    invalidate_user_keyrings,
    new_session_keyring,
    no_capabilities,
    prctl,
    read_search_capability,
    sealed_session_keyring,
    unshare_network,
    user_namespace_filter,
)

_READ_CHUNK = 65536


@dataclass
class JobIO:
    """A worker's buffers: the job frame, the job's stdout, stderr and result."""

    frame: Buffer
    out: Buffer
    err: Buffer
    res: Buffer
    discard: bytearray

    @classmethod
    def for_config(cls, config: SandboxConfig) -> JobIO:
        return cls(
            Buffer(1 << 40),
            Buffer(config.max_output_bytes),
            Buffer(config.max_output_bytes),
            Buffer(config.max_result_bytes + 1),  # one byte over the limit tells that the job wrote too much
            bytearray(_READ_CHUNK),
        )

    def wipe(self) -> None:
        for buffer in (self.frame, self.out, self.err, self.res):
            buffer.wipe()
        self.discard[:] = bytes(len(self.discard))


def _read_ready(ready: list[int], streams: dict[int, Buffer], discard: bytearray) -> None:
    """Read once from each ready pipe; drop a pipe from `streams` at EOF."""
    for fd in ready:
        if not streams[fd].read_from(fd, discard):
            os.close(fd)
            del streams[fd]


def _kill_job(context: JobContext, uid: int | None) -> None:
    """SIGKILL every process the job may have left: inside the boundary, everything in the worker's pid namespace
    but this supervisor and the fork server (kill(-1) from pid 2 spares pid 1); else every process of the job's
    uid."""
    if context.bounded:
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)
    elif uid is not None:
        _kill_uid(uid)


def _as_uid(uid: int, action: Callable[[], object], before: Callable[[], object] | None = None) -> None:
    """Run `action` in a helper process that became `uid` (after `before`, run while still privileged)."""
    helper = os.fork()
    if helper == 0:
        try:
            if before is not None:
                before()
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            if os.getresuid() == (uid, uid, uid):  # never as root: kill(-1) would hit everything
                action()
        finally:
            os._exit(0)
    os.waitpid(helper, 0)


def _kill_uid(uid: int) -> None:
    """SIGKILL every process of `uid`."""
    _as_uid(uid, lambda: os.kill(-1, signal.SIGKILL))


def _remove_keys(uid: int) -> None:
    """If `uid` owns keys (the job made some: they outlive it, in keyrings of its uid), invalidate its keyrings from a
    helper process running as that uid."""
    try:
        with open("/proc/key-users", "rb") as f:
            listed = any(line.split(b":", 1)[0].strip() == str(uid).encode() for line in f)
    except OSError:  # no keyrings in this kernel
        return
    if listed:  # a new session keyring first, as root: not the caller's (never link the job's keys there)
        _as_uid(uid, invalidate_user_keyrings, before=new_session_keyring)


def _killpg(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


_TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(stat_fd: int | None) -> float | None:
    """CPU seconds (user + system, with the children it waited for) of the process whose /proc/PID/stat is open;
    None once it is gone."""
    if stat_fd is None:
        return None
    try:
        data = os.pread(stat_fd, 4096, 0)
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()  # after "pid (comm) ": state is field 3, utime 14 .. cstime 17
    return sum(int(v) for v in fields[11:15]) / _TICKS if len(fields) > 14 else None


def _wait(
    channel: socket.socket,
    streams: dict[int, Buffer],
    io: JobIO,
    res_r: int,
    start: float,
    config: SandboxConfig,
    stat_fd: int | None,
) -> str:
    """Read the pipes until the fork server reports the job's exit: 'exited', 'cpu' (over its CPU time), 'wall' (over
    the wall-clock safety net) or 'overflow' (result over the cap).

    The CPU time is looked at when it could first be over the limit (at `timeout_s` of wall time), then again when
    what is left of it could be used up: a job is stopped for the CPU time it used, however loaded the machine is."""
    watched = [channel.fileno(), *streams]
    wall_end = start + config.wall_limit_s
    check_at = start + config.timeout_s
    while True:
        now = time.monotonic()
        if now >= check_at:
            used = _cpu_seconds(stat_fd)
            if used is not None and used >= config.timeout_s:
                return "cpu"
            check_at = wall_end if used is None else now + max(config.timeout_s - used, 0.01)
        if now >= wall_end:
            return "wall"
        ready = select.select(watched, [], [], min(check_at, wall_end) - now)[0]
        if ready and ready[0] == watched[0]:
            return "exited"
        _read_ready(ready, streams, io.discard)
        if res_r in streams and io.res.size == io.res.limit:
            return "overflow"
        watched = [watched[0], *streams]


def _exit_status(channel: socket.socket, timeout: float | None) -> tuple[int, float] | None:
    """The job's wait status and CPU seconds as the fork server reports them once it reaped the job; None if not
    within `timeout`."""
    if timeout is not None and not select.select([channel], [], [], max(0.0, timeout))[0]:
        return None
    message = recv_exactly(channel, STATUS.size)
    if message is None:
        raise ForkServerGone("the fork server stopped during a job")
    status, cpu_us = STATUS.unpack(message)
    return status, cpu_us / 1e6


def _verdict(
    status: int, ending: str, cpu_s: float, memory_killed: bool, config: SandboxConfig
) -> tuple[Verdict, str | None]:
    """The verdict from what the supervisor saw, and its own message (None: the job's report describes an error)."""
    if ending == "cpu" or (ending == "exited" and cpu_s > config.timeout_s):
        return Verdict.TIMEOUT, f"CPU-time limit of {config.timeout_s:g} s exceeded"
    if ending == "wall":
        return Verdict.TIMEOUT, (
            f"wall-clock safety limit of {config.wall_limit_s:g} s exceeded (it used {cpu_s:.2f} s of CPU time)"
        )
    if ending == "overflow":
        return Verdict.ERROR, f"the result is larger than max_result_bytes ({config.max_result_bytes})"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU:
            return Verdict.TIMEOUT, "CPU time limit exceeded"
        if memory_killed:
            return Verdict.MEMORY, "killed at the memory limit of the job's cgroup"
        return Verdict.KILLED, f"killed by signal {signal.Signals(sig).name}"
    code = os.waitstatus_to_exitcode(status)
    if code == 0:
        return Verdict.OK, None
    if code == EXIT_ERROR:
        return Verdict.ERROR, None
    if code == EXIT_MEMORY:
        return Verdict.MEMORY, None
    return Verdict.KILLED, f"exited with status {code} without reporting a result"


def _make_workdir(root: str) -> str:
    """A new private directory under `root` with an unpredictable name (weak isolation)."""
    while True:
        path = os.path.join(root, f"kt-sandbox-{os.urandom(6).hex()}")
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:
            continue


class ForkServerGone(RuntimeError):
    """The fork server ended (its job pipe closed, or it died): the worker stops."""


def supervise(context: JobContext, io: JobIO, channel: socket.socket) -> dict[str, Any]:
    """Let the fork server start the next job, supervise it and clean up after it; the verdict header (the output
    stays in `io`). Raises ForkServerGone when the fork server has stopped."""
    workdir = JOB_DIR if not context.tmp_root else _make_workdir(context.tmp_root)
    try:
        oom_before = oom_kills(context.oom_fd)
        send_go(channel, workdir)
        message, fds, _, _ = socket.recv_fds(channel, INT.size, 4)
        if len(message) != INT.size or len(fds) != 4:
            for fd in fds:
                os.close(fd)
            raise ForkServerGone("the fork server stopped")
        return _supervise_job(context, io, channel, INT.unpack(message)[0], fds, oom_before)
    finally:
        if context.tmp_root:
            _remove(workdir)
        else:
            clean_scratch()


_WRAPPER_STATUSES = (0, EXIT_ERROR, EXIT_MEMORY)


def _open_stat(pid: int) -> int | None:
    try:
        return os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:  # already gone (its status is on its way)
        return None


def _supervise_job(
    context: JobContext, io: JobIO, channel: socket.socket, pid: int, fds: list[int], oom_before: int
) -> dict[str, Any]:
    """Collect the output and verdict of the job `pid` (forked by the fork server, which reaps it) and kill whatever
    it left behind. `fds`: the read ends of its stdout, stderr and result pipes, and its pidfd."""
    start = time.monotonic()
    config = context.config
    out_r, err_r, res_r, pidfd = fds
    streams = {out_r: io.out, err_r: io.err, res_r: io.res}
    uid = context.job_uid(pid)
    stat_fd = _open_stat(pid)
    ending, exited = "wall", None
    try:
        ending = _wait(channel, streams, io, res_r, start, config, stat_fd)
        if ending == "exited":
            exited = _exit_status(channel, None)
        else:
            if ending in ("cpu", "wall"):
                _killpg(pid, signal.SIGTERM)
            exited = _exit_status(channel, config.grace_s if ending != "overflow" else 0.0)
    finally:
        clean = exited is not None and os.WIFEXITED(exited[0]) and os.WEXITSTATUS(exited[0]) in _WRAPPER_STATUSES
        if context.bounded or not clean:
            _kill_job(context, uid)  # inside the boundary a single kill(-1); else only if the job could not do it
        if exited is None:
            _killpg(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        os.close(pidfd)
        if stat_fd is not None:
            os.close(stat_fd)
    if exited is None:
        exited = _exit_status(channel, None)
    status, cpu_s = exited
    duration = time.monotonic() - start
    if uid is not None:
        _remove_keys(uid)
    _drain(streams, io)
    verdict, message = _verdict(status, ending, cpu_s, oom_kills(context.oom_fd) > oom_before, config)
    if message is not None:  # not an exit status the job's wrapper gives: its result descriptor is not read
        io.res.wipe()
    elif io.res.size > config.max_result_bytes:
        verdict, message = Verdict.ERROR, f"the result is larger than max_result_bytes ({config.max_result_bytes})"
        io.res.wipe()
    return {
        "verdict": str(verdict),
        "message": message,
        "duration_s": round(duration, 6),
        "cpu_s": round(cpu_s, 6),
        "truncated": io.out.truncated or io.err.truncated,
        "sizes": [io.out.size, io.err.size, io.res.size],
    }


def _drain(streams: dict[int, Buffer], io: JobIO, timeout: float = 0.2) -> None:
    """Read the pipes to EOF for up to `timeout` seconds (all writers are dead), then close them."""
    end = time.monotonic() + timeout
    while streams:
        remaining = end - time.monotonic()
        if remaining <= 0:
            break
        _read_ready(select.select(list(streams), [], [], remaining)[0], streams, io.discard)
    for fd in streams:
        os.close(fd)
    streams.clear()


def _remove(directory: str) -> None:
    try:
        os.rmdir(directory)  # the common case: the job wrote no files
    except OSError:
        _remove_tree(directory)
        with contextlib.suppress(OSError):
            os.rmdir(directory)


def _remove_tree(path: str) -> None:
    """Remove `path` whatever the job did to it (deep trees, odd modes): shutil first, `rm -rf` if that fails."""
    import shutil
    import subprocess

    try:
        shutil.rmtree(path)
    except (OSError, RecursionError):
        subprocess.run(["rm", "-rf", "--one-file-system", "--", path], check=False, env=BASE_ENV)


class ScratchNotClean(RuntimeError):
    """A job left something the worker could not remove: the worker must not run another job."""


_SYSVIPC_FILES = ("/proc/sysvipc/shm", "/proc/sysvipc/msg", "/proc/sysvipc/sem")
_SYSVIPC_REMOVERS = ("shmctl", "msgctl", "semctl")
_sysvipc_fds: list[int | None] = []


def clean_scratch() -> None:
    """Empty /tmp and /dev/shm and remove SysV IPC objects: what the last job left inside the boundary."""
    for directory in SCRATCH_DIRS:
        names = os.listdir(directory)
        if not names:
            continue
        for name in names:
            path = os.path.join(directory, name)
            if os.path.isdir(path) and not os.path.islink(path):
                _remove_tree(path)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
        if os.listdir(directory):
            raise ScratchNotClean(f"the last job left files in {directory}")
    _remove_sysv_ipc()


def _read_whole(fd: int) -> bytes:
    """All of a /proc file from its start (one read of a seq file returns about a page: a long table needs more)."""
    chunks: list[bytes] = []
    offset = 0
    while chunk := os.pread(fd, 1 << 16, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _remove_sysv_ipc() -> None:
    """Remove every SysV shared-memory segment, message queue and semaphore set of this IPC namespace.

    IPC_RMID needs the owner (or CAP_SYS_ADMIN, which the worker does not keep): a helper running as the owner's uid
    removes them."""
    if not _sysvipc_fds:
        for path in _SYSVIPC_FILES:
            try:
                _sysvipc_fds.append(os.open(path, os.O_RDONLY | os.O_CLOEXEC))
            except OSError:
                _sysvipc_fds.append(None)
    objects: list[tuple[str, int, int]] = []
    for fd, remover in zip(_sysvipc_fds, _SYSVIPC_REMOVERS, strict=True):
        if fd is None:
            continue
        header, *rows = _read_whole(fd).split(b"\n")
        columns = header.split()
        for row in rows:
            fields = row.split()
            if len(fields) == len(columns):
                objects.append((remover, int(fields[1]), int(fields[columns.index(b"uid")])))

    def remove(uid: int) -> None:
        for remover, ident, owner in objects:
            if owner == uid:
                args = (ident, 0, 0, 0) if remover == "semctl" else (ident, 0, None)  # IPC_RMID == 0
                getattr(_libc(), remover)(*args)

    for uid in {uid for _, _, uid in objects}:
        _as_uid(uid, lambda uid=uid: remove(uid))


# ----- the worker


def _default_tmp_dir() -> str:
    """/dev/shm (a tmpfs: creating and removing the job directories is cheap) if usable, else $TMPDIR or /tmp."""
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK | os.X_OK):
        return "/dev/shm"
    return os.environ.get("TMPDIR") or "/tmp"


def _streams_on_standard_fds() -> None:
    """Make sys.stdout and sys.stderr write to fds 1 and 2, which the job processes point into their pipes."""
    for name, fd in (("stdout", 1), ("stderr", 2)):
        stream = getattr(sys, name)
        try:
            ok = stream.fileno() == fd
        except (AttributeError, ValueError, OSError):
            ok = False
        if not ok:
            setattr(sys, name, open(fd, "w", closefd=False, encoding="utf-8", errors="backslashreplace"))  # noqa: SIM115


def worker_context(
    config: SandboxConfig,
    bounded: bool,
    oom_fd: int | None = None,
    prelude: dict[str, Any] | None = None,
    worker_uid: int | None = None,
) -> JobContext:
    """Set this worker's fork server up (subreaper, no new privileges, network, session keyring, environment) and
    describe what its jobs inherit.

    `bounded`: the worker runs inside the boundary (its own namespaces, /tmp and /dev/shm private to it).
    """
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    root = os.geteuid() == 0
    drop = config.drop_privileges and root and (bounded or prctl(PR_SET_KEEPCAPS, 1))
    block_net = not config.network and not bounded and not unshare_network()
    if drop:
        capability = None if bounded else read_search_capability()
    else:
        capability = no_capabilities() if bounded and root else None
    tmp_root = "" if bounded else config.tmp_dir or _default_tmp_dir()
    if drop:  # else every job joins a keyring of its own (they share the uid that would own this one)
        sealed_session_keyring()
    _streams_on_standard_fds()
    os.environ.clear()  # jobs see only this, plus HOME and TMPDIR: no secrets of the caller
    os.environ.update(BASE_ENV)
    if bounded:
        os.environ["HOME"] = os.environ["TMPDIR"] = JOB_DIR  # with weak isolation, each job's own directory
    return JobContext(
        config,
        drop,
        block_net,
        tmp_root,
        os.open(os.devnull, os.O_RDONLY),
        oom_fd=oom_fd,
        bounded=bounded,
        worker_uid=worker_uid if bounded else None,
        prelude=prelude or {},
        capability=capability,
        namespace_filter=user_namespace_filter(),
    )
