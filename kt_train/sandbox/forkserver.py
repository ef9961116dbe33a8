"""The fork server: the worker's first process, from which every job is forked.

A pool worker is two processes. The fork server (pid 1 of the boundary's pid namespace; with weak isolation a
subreaper) holds the warm interpreter (preloaded modules, the prelude) and only forks: it reads a job's frame, makes
the job's three pipes, forks the job, hands the job's pid and the pipes' read ends to the supervisor
(`supervisor.py`, its first child), wipes the frame, reaps the job and reports its wait status and CPU time. The
supervisor does everything else: the clocks, reading the pipes, killing what the job left, cleaning up, the verdict.

Why two processes: after a fork, every page the parent or the child writes is copied. A fork server that runs a few
lines per job leaves little to copy, and the supervisor, which never forks a job, pays nothing for its bookkeeping
(with one process doing both, those copies were most of the cost of a short job).

Nothing of a job stays here: the frame is wiped once the job is forked and the read ends are closed once handed on,
so a job forked later inherits no byte of an earlier one. The job's orphans (re-parented here) are reaped before the
next job starts, and killed if the supervisor's kill left any.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time

from kt_train.sandbox.job import JobContext, child_main
from kt_train.sandbox.protocol import INT, STATUS, Buffer, next_workdir, read_frame_into
from kt_train.sandbox.system import address_space, job_limits


def _reap_orphans(children: int | None, supervisor: int, alone: bytes, timeout: float) -> None:
    """Reap every child but the supervisor (what the last job left is re-parented here); kill those still alive.
    `alone`: what `children` (this process's /proc/self/task/TID/children) reads with the supervisor alone."""
    end = None
    while True:
        with contextlib.suppress(ChildProcessError):
            while pid := os.waitpid(-1, os.WNOHANG)[0]:
                if pid == supervisor:
                    os._exit(1)
        listed = os.pread(children, 65536, 0) if children is not None else alone
        if listed == alone:
            return
        end = end or time.monotonic() + timeout
        for kid in listed.split():
            if int(kid) != supervisor:
                with contextlib.suppress(OSError):
                    os.kill(int(kid), signal.SIGKILL)
        if time.monotonic() > end:
            return
        time.sleep(0.002)


def _children_file() -> int | None:
    try:
        return os.open(f"/proc/self/task/{os.getpid()}/children", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:  # a kernel without CONFIG_PROC_CHILDREN: zombies are still reaped
        return None


def serve(job_r: int, channel: socket.socket, context: JobContext, supervisor: int) -> None:
    """Fork one job per frame read from `job_r`, each after the supervisor's go, until either side stops."""
    frame = Buffer(1 << 40)
    children, alone = _children_file(), f"{supervisor} ".encode()
    grace = context.config.grace_s + 1.0
    limits, mapped = job_limits(context.config, context.drop, address_space()), len(frame.data)
    while (workdir := next_workdir(channel)) is not None:
        _reap_orphans(children, supervisor, alone, grace)
        if not read_frame_into(job_r, frame):
            return
        if len(frame.data) != mapped:  # a larger frame buffer: the jobs' address-space limit moves with it
            limits, mapped = job_limits(context.config, context.drop, address_space()), len(frame.data)
        (out_r, out_w), (err_r, err_w), (res_r, res_w) = os.pipe(), os.pipe(), os.pipe()
        pid = os.fork()
        if pid == 0:
            child_main(frame.view(), context, workdir, (out_w, err_w, res_w), limits)
        pidfd = os.pidfd_open(pid)
        try:
            socket.send_fds(channel, [INT.pack(pid)], [out_r, err_r, res_r, pidfd])
        except BaseException:  # the supervisor is gone: no job runs unsupervised
            os.kill(pid, signal.SIGKILL)
            raise
        finally:
            for fd in (out_r, out_w, err_r, err_w, res_r, res_w, pidfd):
                os.close(fd)
            frame.wipe()
        _, status, usage = os.wait4(pid, 0)
        channel.sendall(STATUS.pack(status, round((usage.ru_utime + usage.ru_stime) * 1e6)))


__all__ = ["serve"]
