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
import struct
import sys
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from kt_train.sandbox.config import SandboxConfig, SandboxJob, SandboxResult, Verdict
from kt_train.sandbox.job import write_all
from kt_train.sandbox.supervisor import supervise, worker_context

if TYPE_CHECKING:
    import subprocess


_HEADER = struct.Struct("!Q")
_PIPELINE_BYTES = 16384  # a second job is queued to a busy worker only if this small: the pipe never fills


def _frame(payload: dict[str, Any]) -> bytes:
    data = json.dumps(payload).encode()
    return _HEADER.pack(len(data)) + data


def _send(fd: int, payload: dict[str, Any]) -> None:
    write_all(fd, _frame(payload))


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
from kt_train.sandbox.pool import worker_main; worker_main(p)"


def worker_main(payload: dict[str, Any]) -> None:
    """Body of a pool worker (a fresh interpreter): preload, then supervise jobs one at a time until EOF."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    job_r, res_w = payload["fds"]
    context = worker_context(SandboxConfig(**payload["config"]))
    for name in payload["preload"]:
        importlib.import_module(name)
    gc.freeze()  # the collector never walks (so never writes to) what the worker set up: fewer copy-on-write faults
    while (message := _recv(job_r)) is not None:
        job = SandboxJob(message["code"], message["function"], message["args"])
        try:
            result = supervise(job, context)
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
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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
