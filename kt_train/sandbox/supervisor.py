"""Supervise one job: fork it, enforce the timeout, capture capped output, clean up, decide the verdict."""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import sys
import time
from typing import Any

from kt_train.sandbox.config import UID_BASE, SandboxConfig, SandboxJob, SandboxResult, Verdict
from kt_train.sandbox.job import BASE_ENV, JobContext, child_main
from kt_train.sandbox.system import (
    PR_SET_CHILD_SUBREAPER,
    PR_SET_KEEPCAPS,
    PR_SET_NO_NEW_PRIVS,
    address_space,
    job_limits,
    prctl,
    read_search_capability,
    unshare_network,
)

_READ_CHUNK = 65536


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


def _wait(pidfd: int, streams: dict[int, _Capped], deadline: float) -> bool:
    """Read the pipes until the job process has exited; False on timeout. One select per wake-up."""
    watched = [pidfd, *streams]
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        ready = select.select(watched, [], [], remaining)[0]
        if ready and ready[0] == pidfd:
            return True
        _read_ready(ready, streams)
        watched = [pidfd, *streams]


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


def supervise(job: SandboxJob, context: JobContext) -> SandboxResult:
    """Run one job in a fresh child process with a private directory, and remove the directory afterwards."""
    workdir = _make_workdir(context.tmp_root)
    try:
        return _run_child(job, context, workdir)
    finally:
        _remove(workdir)


def _run_child(job: SandboxJob, context: JobContext, workdir: str) -> SandboxResult:
    """Fork the job process, collect its output and verdict, and kill whatever it left behind.

    Between fork and the job's exit this process runs as little Python as it can: every page it writes then is
    copied (copy-on-write), which is most of the cost of a short job.
    """
    config = context.config
    limits = job_limits(config, context.drop, address_space())
    (out_r, out_w), (err_r, err_w), (res_r, res_w) = os.pipe(), os.pipe(), os.pipe()
    out, err, res = _Capped(config.max_output_bytes), _Capped(config.max_output_bytes), _Capped(None)
    streams = {out_r: out, err_r: err, res_r: res}
    sys.stdout.flush()
    sys.stderr.flush()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        child_main(job, context, workdir, (out_w, err_w, res_w), limits)
    pidfd = os.pidfd_open(pid)
    os.close(out_w)
    os.close(err_w)
    os.close(res_w)
    finished = _wait(pidfd, streams, start + config.timeout_s)
    uid = UID_BASE + pid if context.drop else None
    if finished:
        _killpg(pid, signal.SIGKILL)
    else:
        _terminate(pid, pidfd, config, uid)
    _, status = os.waitpid(pid, 0)
    os.close(pidfd)
    duration = time.monotonic() - start
    _drain(streams, until_closed=res_r)  # a descendant that escaped the kill may still hold a pipe
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


def _drain(streams: dict[int, _Capped], timeout: float = 0.2, until_closed: int | None = None) -> None:
    """Read the pipes to EOF for up to `timeout` seconds (all writers are dead or about to be), then close them.

    With `until_closed`, stop as soon as that pipe is at EOF and leave the others open.
    """
    end = time.monotonic() + timeout
    while streams and (until_closed is None or until_closed in streams):
        remaining = end - time.monotonic()
        if remaining <= 0:
            break
        _pump(streams, remaining)
    if until_closed is None:
        for fd in streams:
            os.close(fd)
        streams.clear()


# ----- the pool


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


def worker_context(config: SandboxConfig) -> JobContext:
    """Set this worker up (subreaper, no new privileges, network namespace) and describe what its jobs inherit."""
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    drop = config.drop_privileges and os.geteuid() == 0 and prctl(PR_SET_KEEPCAPS, 1)
    block_net = not config.network and not unshare_network()
    capability = read_search_capability() if drop else None
    tmp_root = config.tmp_dir or _default_tmp_dir()
    _streams_on_standard_fds()
    os.environ.clear()  # jobs see only this, plus HOME and TMPDIR: no secrets of the caller
    os.environ.update(BASE_ENV)
    return JobContext(config, drop, capability, block_net, tmp_root, os.open(os.devnull, os.O_RDONLY))
