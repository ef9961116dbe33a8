"""A cgroup per pool worker, which its jobs inherit: memory, process and CPU limits for the job as a whole.

rlimits bind one process each (six forked children may each map `memory_mb`); the cgroup binds all of a job's
processes together: memory (what the worker itself uses, plus `memory_mb`, plus 64 MiB for the interpreter pages a
job copies on write; tmpfs files included), process count (`max_processes`, plus the worker's fork server and
supervisor) and CPU (one core at most). A worker runs one job at a time and kills everything the job left before
the next one, so the cgroup holds the worker and at most one job. Made by the pool (outside the boundary) under the
caller's own cgroup, in cgroup v1 hierarchies or cgroup v2, whichever is writable; the worker joins it first thing,
through file descriptors it inherited, and sets the memory limit once it has imported its modules (jobs raise their
OOM score, so the kernel kills a job's process, not the worker). Where no cgroup can be made (not root, read-only
/sys/fs/cgroup) jobs keep the rlimits only, and `kt sandbox run --explain` says so.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from dataclasses import dataclass, field

from kt_train.sandbox.config import SandboxConfig

ROOT = "/sys/fs/cgroup"
NAME_PREFIX = "kt-sandbox-"
HEADROOM_MB = 64
_SERIAL = itertools.count()  # cgroup names are unique within this process, whatever the number of pools
_CPU_PERIOD_US = 100_000


def _own_paths() -> dict[str, str]:
    """Controller (or '' for cgroup v2) -> this process's cgroup path, from /proc/self/cgroup."""
    paths: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                for controller in controllers.split(",") if controllers else [""]:
                    paths[controller] = path
    except OSError:
        pass
    return paths


def _write(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_stale(base: str) -> None:
    """Remove the empty cgroups of pools whose process is gone (e.g. killed with kill -9)."""
    with contextlib.suppress(OSError):
        for name in os.listdir(base):
            if name.startswith(NAME_PREFIX):
                pid = name[len(NAME_PREFIX) :].split("-")[0]
                if pid.isdigit() and not _alive(int(pid)):
                    with contextlib.suppress(OSError):
                        os.rmdir(os.path.join(base, name))


_V1_MEMORY_FILES = ("memory.oom_control", "memory.usage_in_bytes", "memory.limit_in_bytes")
_V2_MEMORY_FILES = ("memory.events", "memory.current", "memory.max")
WORKER_START_MB = 512  # the memory limit while the worker starts (it sets the real one itself)


def job_memory_bytes(config: SandboxConfig) -> int:
    """What a job may add to the worker's own memory in its cgroup."""
    return (config.memory_mb + HEADROOM_MB) * 1024 * 1024


def _memory_limit(config: SandboxConfig) -> int:
    return job_memory_bytes(config) + WORKER_START_MB * 1024 * 1024


def _v1_settings(config: SandboxConfig) -> dict[str, dict[str, str]]:
    return {
        "memory": {"memory.limit_in_bytes": str(_memory_limit(config))},
        "pids": {"pids.max": str(config.max_processes + 2)},
        "cpu": {"cpu.cfs_period_us": str(_CPU_PERIOD_US), "cpu.cfs_quota_us": str(_CPU_PERIOD_US)},
    }


def _v2_settings(config: SandboxConfig) -> dict[str, dict[str, str]]:
    return {
        "memory": {"memory.max": str(_memory_limit(config)), "memory.swap.max": "0"},
        "pids": {"pids.max": str(config.max_processes + 2)},
        "cpu": {"cpu.max": f"{_CPU_PERIOD_US} {_CPU_PERIOD_US}"},
    }


@dataclass
class JobCgroup:
    """The cgroup(s) of one worker's jobs and the descriptors a job joins them through."""

    dirs: list[str] = field(default_factory=list)
    procs_fds: list[int] = field(default_factory=list)
    oom_fd: int | None = None  # memory.oom_control (v1) or memory.events (v2): its oom_kill counter
    memory_fds: tuple[int, int] | None = None  # (usage, limit) of the memory controller, for the worker
    limits: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls, config: SandboxConfig, tag: str) -> JobCgroup | None:
        """A new cgroup named after this process, `tag` and a counter; None where none can be made."""
        if os.geteuid() != 0 or not os.path.isdir(ROOT):
            return None
        group = cls()
        name = f"{NAME_PREFIX}{os.getpid()}-{tag}-{next(_SERIAL)}"
        own = _own_paths()
        try:
            if os.path.exists(os.path.join(ROOT, "cgroup.controllers")):  # cgroup v2 only
                group._add_v2(os.path.join(ROOT, own.get("", "/").lstrip("/")), name, config)
            else:
                for controller, settings in _v1_settings(config).items():
                    base = os.path.join(ROOT, controller, own.get(controller, "/").lstrip("/"))
                    if os.access(base, os.W_OK):
                        group._add(base, name, settings, _V1_MEMORY_FILES if controller == "memory" else None)
        except OSError as exc:
            import logging  # here, not at the top: the workers never log, and logging's fork hooks cost every job

            logging.getLogger(__name__).warning(
                "no cgroup for the sandbox's jobs (%s): memory and process limits per process only", exc
            )
            group.close()
            return None
        if not group.dirs:
            return None
        return group

    def _add(self, base: str, name: str, settings: dict[str, str], memory: tuple[str, str, str] | None) -> None:
        """Make the cgroup `name` under `base` with `settings`; `memory`: its OOM-counter, usage and limit files."""
        _remove_stale(base)
        path = os.path.join(base, name)
        os.mkdir(path)
        self.dirs.append(path)
        for key, value in settings.items():
            _write(os.path.join(path, key), value)
            self.limits[key] = value
        self.procs_fds.append(os.open(os.path.join(path, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC))
        if memory:
            oom, usage, limit = (os.path.join(path, f) for f in memory)
            self.oom_fd = os.open(oom, os.O_RDONLY | os.O_CLOEXEC)
            self.memory_fds = (os.open(usage, os.O_RDONLY | os.O_CLOEXEC), os.open(limit, os.O_WRONLY | os.O_CLOEXEC))

    def _add_v2(self, base: str, name: str, config: SandboxConfig) -> None:
        with open(os.path.join(base, "cgroup.subtree_control")) as f:
            enabled = set(f.read().split())
        settings = {k: v for c, s in _v2_settings(config).items() if c in enabled for k, v in s.items()}
        if settings:
            self._add(base, name, settings, _V2_MEMORY_FILES if "memory" in enabled else None)

    def inherited_fds(self) -> list[int]:
        """Every descriptor the worker needs."""
        return [*self.procs_fds, *([self.oom_fd] if self.oom_fd is not None else []), *(self.memory_fds or ())]

    def close_descriptors(self) -> None:
        for fd in self.inherited_fds():
            with contextlib.suppress(OSError):
                os.close(fd)
        self.procs_fds, self.oom_fd, self.memory_fds = [], None, None

    def close(self) -> None:
        """Close the descriptors and remove the cgroups (their processes are gone: the workers have exited)."""
        self.close_descriptors()
        for path in self.dirs:
            for _ in range(50):  # a killed process leaves its cgroup a moment after it is reaped
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
        self.dirs = []


def join(procs_fds: list[int]) -> None:
    """Move this process into the cgroup(s) (run by the worker before anything else)."""
    for fd in procs_fds:
        os.write(fd, b"0")
        os.close(fd)


def limit_memory(memory_fds: list[int] | None, job_bytes: int) -> None:
    """Set the memory limit to what this worker uses now plus `job_bytes` (run by the worker once it is set up)."""
    if memory_fds:
        usage_fd, limit_fd = memory_fds
        usage = int(os.pread(usage_fd, 64, 0).split()[0])
        os.write(limit_fd, str(usage + job_bytes).encode())
        os.close(usage_fd)
        os.close(limit_fd)


def oom_kills(oom_fd: int | None) -> int:
    """How many processes the kernel has killed for the cgroup's memory limit so far."""
    if oom_fd is None:
        return 0
    for line in os.pread(oom_fd, 4096, 0).split(b"\n"):
        key, _, value = line.partition(b" ")
        if key == b"oom_kill":
            return int(value)
    return 0


__all__ = ["JobCgroup", "job_memory_bytes", "join", "limit_memory", "oom_kills"]
