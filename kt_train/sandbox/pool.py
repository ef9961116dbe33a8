"""Pre-forked sandbox workers (`SandboxPool`) and the one-job helpers `run_job`, `run_code`, `call_function`."""

from __future__ import annotations

import contextlib
import gc
import importlib
import importlib.util
import json
import os
import select
import signal
import socket
import sys
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from kt_train.sandbox import cgroup
from kt_train.sandbox.boundary import BASE_ENV, SCRATCH_DIRS, WORKER_CAPS, isolation
from kt_train.sandbox.cgroup import JobCgroup
from kt_train.sandbox.config import UID_BASE, SandboxConfig, SandboxJob, SandboxResult, Verdict
from kt_train.sandbox.forkserver import serve
from kt_train.sandbox.job import JobContext, encode_job, write_all
from kt_train.sandbox.protocol import FRAME_HEADER, read_exactly
from kt_train.sandbox.supervisor import ForkServerGone, JobIO, supervise, worker_context
from kt_train.sandbox.system import keep_capabilities, mount_scratch

if TYPE_CHECKING:
    import subprocess


_PIPELINE_BYTES = 16384  # a second job is queued to a busy worker only if this small: the pipe never fills


def _frame(payload: dict[str, Any]) -> bytes:
    data = json.dumps(payload).encode()
    return FRAME_HEADER.pack(len(data)) + data


def _send(fd: int, payload: dict[str, Any]) -> None:
    write_all(fd, _frame(payload))


def _encode_job(job: SandboxJob | str) -> bytes:
    data = encode_job(SandboxJob(job) if isinstance(job, str) else job)
    return FRAME_HEADER.pack(len(data)) + data


def _recv(fd: int, limit: int) -> dict[str, Any] | None:
    """One JSON frame, or None at EOF (or a frame over `limit` bytes: the sender is broken)."""
    header = read_exactly(fd, FRAME_HEADER.size)
    if header is None:
        return None
    size = FRAME_HEADER.unpack(header)[0]
    if size > limit:
        return None
    body = read_exactly(fd, size)
    return None if body is None else json.loads(body)


_BOOT = (
    "import json, os, struct, sys\n"
    "fd = int(sys.argv[1]); size = struct.unpack('!Q', os.read(fd, 8))[0]; body = b''\n"
    "while len(body) < size: body += os.read(fd, size - len(body))\n"
    "p = json.loads(body); sys.path[:0] = p['path']\n"
    "from kt_train.sandbox.pool import worker_main; worker_main(p)"
)


def worker_main(payload: dict[str, Any]) -> None:
    """Body of a pool worker (a fresh interpreter): preload, fork the supervisor, then serve as the fork server."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    job_r, res_w = payload["fds"]
    cgroup.join(payload["cgroup_fds"])
    config = SandboxConfig(**payload["config"])
    if payload["bounded"]:  # the scratch tmpfs bounded in inodes too, then the mount capability dropped
        root = os.geteuid() == 0
        try:
            mount_scratch(SCRATCH_DIRS, config.tmp_size_mb * 1024 * 1024, config.tmp_inodes)
        except OSError:
            if root:  # the case with a memory cgroup, whose kernel objects a flood of files would fill (issue 38)
                raise
            # not root: some kernels refuse tmpfs mounts in a user namespace; `kt sandbox run --explain` tells
        keep_capabilities(WORKER_CAPS if root else ())
    for name in payload["preload"]:
        importlib.import_module(name)
    prelude: dict[str, Any] = {}
    if payload["prelude"]:
        exec(compile(payload["prelude"], "<sandbox prelude>", "exec"), prelude)
    sys.stdout.flush()
    sys.stderr.flush()
    context = worker_context(config, payload["bounded"], payload["oom_fd"], prelude, payload["uid"])
    cgroup.limit_memory(payload["memory_fds"], cgroup.job_memory_bytes(config))
    server_end, supervisor_end = socket.socketpair()
    gc.freeze()  # the collector never walks (so never writes to) what the worker set up: fewer copy-on-write faults
    supervisor = os.fork()
    if supervisor == 0:
        server_end.close()
        os.close(job_r)
        _supervisor_main(context, supervisor_end, res_w)
    supervisor_end.close()
    os.close(res_w)
    try:
        serve(job_r, server_end, context, supervisor)
    finally:
        os._exit(0)  # pid 1 of the boundary: its namespace, the supervisor included, goes with it


def _supervisor_main(context: JobContext, channel: socket.socket, res_w: int) -> None:
    """Supervise the fork server's jobs one at a time and send each verdict to the pool; never returns."""
    io = JobIO.for_config(context.config)
    write_all(res_w, _frame({"ready": True}))  # both processes are up: the pool may count on them
    while True:
        retire = False
        try:
            header = supervise(context, io, channel)
        except ForkServerGone:
            os._exit(0)
        except Exception as exc:  # ScratchNotClean, or something unforeseen: this worker runs no further job
            header = {"verdict": str(Verdict.ERROR), "message": f"sandbox: {exc}", "sizes": [0, 0, 0]}
            retire = True
        header["retire"] = retire
        try:
            _send_result(res_w, header, io)
        except BrokenPipeError:  # the pool is gone
            os._exit(0)
        finally:
            io.wipe()
        if retire:
            os._exit(1)


def _send_result(fd: int, header: dict[str, Any], io: JobIO) -> None:
    """The verdict header, then the raw stdout, stderr and result bytes it counts."""
    if header["sizes"] == [0, 0, 0]:
        io.out.wipe()
        io.err.wipe()
        io.res.wipe()
    write_all(fd, _frame(header))
    for buffer in (io.out, io.err, io.res):
        write_all(fd, buffer.view())


def _job_report(raw: bytes) -> tuple[str | None, str | None]:
    """The error type and message a job reported (untrusted: strings only, capped)."""
    try:
        report = json.loads(raw)
    except (ValueError, RecursionError):
        return None, None
    if not isinstance(report, dict):
        return None, None
    kind, message = report.get("error_type"), report.get("error_message")
    kind = kind[:100] if isinstance(kind, str) and kind.isidentifier() else None
    return kind, message[:2000] if isinstance(message, str) else None


def decode_result(
    header: dict[str, Any],
    out: bytes,
    err: bytes,
    res: bytes,
    expects_value: bool = False,
    max_values: int = SandboxConfig.max_result_values,
) -> SandboxResult:
    """A SandboxResult from the supervisor's header and the job's raw bytes (decoded here, outside the boundary).

    `expects_value`: a function job, whose wrapper always reports a JSON value; exiting with status 0 and no value
    means the code ended its process itself (os._exit) before it returned."""
    verdict, message = Verdict(header["verdict"]), header.get("message")
    result = SandboxResult(
        verdict,
        stdout=out.decode("utf-8", errors="replace"),
        stderr=err.decode("utf-8", errors="replace"),
        duration_s=float(header.get("duration_s", 0.0)),
        cpu_s=float(header.get("cpu_s", 0.0)),
        truncated=bool(header.get("truncated")),
        error_message=message,
    )
    if verdict == Verdict.OK and expects_value and not res:
        result.verdict = Verdict.KILLED
        result.error_message = "exited with status 0 without reporting a result"
    elif verdict == Verdict.OK and res.count(b",") + res.count(b"[") + res.count(b"{") > max_values:
        result.verdict, result.error_type = Verdict.ERROR, "ValueError"  # 15 MB of "[]," would be 5M lists here
        result.error_message = f"the job's return value holds more than max_result_values ({max_values}) values"
    elif verdict == Verdict.OK and res:
        try:
            result.return_value = json.loads(res)
        except (ValueError, RecursionError):
            result.verdict, result.error_type = Verdict.ERROR, "ValueError"
            result.error_message = "the job's return value is not valid JSON (or nested too deeply)"
    elif verdict in (Verdict.ERROR, Verdict.MEMORY) and message is None:
        result.error_type, result.error_message = _job_report(res)
        if result.error_type is None:
            result.error_type = "MemoryError" if verdict == Verdict.MEMORY else "Exception"
    return result


@dataclass
class _Worker:
    process: subprocess.Popen[bytes]
    job_w: int
    res_r: int
    cgroup: JobCgroup | None


class SandboxPool:
    """Pre-forked workers that already imported `preload`; each job runs in its own fresh child of a worker.

    Workers run inside the boundary (`kt_train.sandbox.boundary`); `prelude`, trusted source run once in every
    worker, defines names every job starts with (each job gets its own copy, in its own process).
    """

    def __init__(
        self,
        workers: int | None = None,
        preload: Sequence[str] = ("json",),
        config: SandboxConfig | None = None,
        prelude: str | None = None,
    ) -> None:
        self.config = config or SandboxConfig()
        self.preload = tuple(preload)
        self.prelude = prelude
        missing = [name for name in self.preload if importlib.util.find_spec(name) is None]
        if missing:
            raise ValueError(f"cannot preload missing module(s): {', '.join(missing)}")
        self.isolation = isolation(self.config, self.preload)
        self._spawned = 0
        self._functions: list[bool] = []  # per job of the current map: a function job (it reports a value)
        limit = 2 * self.config.max_output_bytes + self.config.max_result_bytes + 1
        self._payload_limit = limit
        self._workers: list[_Worker] = []
        try:
            for _ in range(workers or os.cpu_count() or 1):
                self._workers.append(self._spawn())
            for worker in self._workers:
                self._ready(worker)
        except BaseException:
            self.close()
            raise

    def _spawn(self) -> _Worker:
        """Start a worker: a fresh, small interpreter (forking it per job is cheaper than forking this process)."""
        import subprocess

        self._spawned += 1
        group = JobCgroup.create(self.config, str(self._spawned))
        job_r, job_w = os.pipe()
        res_r, res_w = os.pipe()
        payload = {
            "fds": [job_r, res_w],
            "config": asdict(self.config),
            "preload": list(self.preload),
            "prelude": self.prelude,
            "path": list(self.isolation.sys_path),
            "bounded": self.isolation.private_view,
            "cgroup_fds": list(group.procs_fds) if group else [],
            "oom_fd": group.oom_fd if group else None,
            "memory_fds": list(group.memory_fds) if group and group.memory_fds else None,
        }
        interpreter = self.isolation.interpreter if self.isolation.private_view else sys.executable
        command = [*self.isolation.prefix, interpreter, "-I", "-S", "-c", _BOOT, str(job_r)]
        inherited = (job_r, res_w, *(group.inherited_fds() if group else ()))
        try:
            process = subprocess.Popen(
                command, pass_fds=inherited, stdin=subprocess.DEVNULL, env=dict(BASE_ENV), cwd="/"
            )
        except BaseException:
            for fd in (job_r, job_w, res_r, res_w):
                os.close(fd)
            if group:
                group.close()
            raise
        os.close(job_r)
        os.close(res_w)
        if group:  # the worker holds its own copies
            group.close_descriptors()
        payload["uid"] = UID_BASE + process.pid  # unique among the host's live processes: one uid per worker
        _send(job_w, payload)
        return _Worker(process, job_w, res_r, group)

    def _ready(self, worker: _Worker) -> None:
        """Wait until the worker's fork server and supervisor are up (its first frame says so)."""
        if _recv(worker.res_r, 1 << 10) != {"ready": True}:
            raise RuntimeError("a sandbox worker failed to start (its error is on stderr above)")

    def _retire(self, worker: _Worker) -> None:
        for fd in (worker.job_w, worker.res_r):
            with contextlib.suppress(OSError):
                os.close(fd)
        worker.process.kill()
        worker.process.wait()
        if worker.cgroup:
            worker.cgroup.close()

    def _replace(self, slot: int) -> None:
        self._retire(self._workers[slot])
        self._workers[slot] = self._spawn()
        self._ready(self._workers[slot])

    def map(self, jobs: Iterable[SandboxJob | str], progress: bool = False) -> list[SandboxResult]:
        """Run the jobs (a str is a script) on all workers; the results in the order of the jobs."""
        jobs = [SandboxJob(j) if isinstance(j, str) else j for j in jobs]
        self._functions = [job.function is not None for job in jobs]
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
                    write_all(self._workers[slot].job_w, item[1])
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
        worker = self._workers[slot]
        header = _recv(worker.res_r, 1 << 20)
        payload = None
        if header is not None:
            sizes = header.get("sizes")
            if isinstance(sizes, list) and len(sizes) == 3 and sum(sizes) <= self._payload_limit:
                payload = [read_exactly(worker.res_r, n) if n else b"" for n in sizes]
        if header is not None and payload is not None and None not in payload:
            result = decode_result(
                header,
                *payload,  # type: ignore[arg-type]
                expects_value=self._functions[index],
                max_values=self.config.max_result_values,
            )
            if header.get("retire"):
                queue.extendleft(reversed(sent))
                sent.clear()
                self._replace(slot)
            return index, result
        queue.extendleft(reversed(sent))
        sent.clear()
        self._replace(slot)
        return index, SandboxResult(Verdict.KILLED, error_message="the sandbox worker died while running the job")

    def run(self, job: SandboxJob | str) -> SandboxResult:
        """Run one job."""
        return self.map([job])[0]

    def close(self) -> None:
        """Stop the workers (their namespaces, files and processes go with them) and remove their cgroups."""
        workers, self._workers = self._workers, []
        for worker in workers:
            os.close(worker.job_w)
        for worker in workers:
            os.close(worker.res_r)
            try:
                worker.process.wait(timeout=self.config.wall_limit_s + self.config.grace_s + 5.0)
            except Exception:
                worker.process.kill()
                worker.process.wait()
            if worker.cgroup:
                worker.cgroup.close()

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
