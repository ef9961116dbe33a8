"""Sandbox records: the verdicts, a job's limits, a job and its result."""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

UID_BASE = 1_500_000_000
"""Jobs run as uid/gid UID_BASE + pid of the job process when the supervisor is root."""


class Verdict(enum.StrEnum):
    """How a job ended: a closed set of values."""

    OK = "ok"
    TIMEOUT = "timeout"
    ERROR = "error"
    MEMORY = "memory"
    KILLED = "killed"


DEFAULT_TIMEOUT_S = 5.0
"""CPU seconds a job may use unless told otherwise (the RTCE paper's limit per traced run)."""


@dataclass(frozen=True)
class SandboxConfig:
    """Limits of one job."""

    timeout_s: float = field(
        default=DEFAULT_TIMEOUT_S,
        metadata={
            "help": "CPU-time limit of a job in seconds (user + system time of its process and the children it "
            "waited for): what decides `timeout`, whatever the machine's load",
            "aliases": ["--timeout"],
        },
    )
    wall_timeout_s: float | None = field(
        default=None,
        metadata={"help": "wall-clock safety net for a job that sleeps or blocks (None: 2 x timeout_s + 1)"},
    )
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
    max_result_bytes: int = field(
        default=16 * 1024 * 1024,
        metadata={"help": "largest result (JSON bytes) a job may report; a larger one is cut off and is an error"},
    )
    max_result_values: int = field(
        default=100_000,
        metadata={"help": "most JSON values (lists, objects, items) a result may hold: its decoding is bounded too"},
    )
    tmp_size_mb: int = field(
        default=64, metadata={"help": "size (MiB) of each private writable tmpfs a worker's jobs see (/tmp, /dev/shm)"}
    )
    tmp_inodes: int = field(
        default=4096,
        metadata={
            "help": "files and folders each private tmpfs holds at most (tmpfs size counts blocks, not inodes: "
            "without it, empty files fill the worker's memory with kernel objects)"
        },
    )
    network: bool = field(default=False, metadata={"help": "allow network access (off: empty network namespace)"})
    allow_weak_isolation: bool = field(
        default=False,
        metadata={
            "help": "where no private filesystem view can be made (no bubblewrap, no user namespaces), run jobs with "
            "process limits only instead of refusing"
        },
    )
    tmp_dir: str | None = field(
        default=None,
        metadata={
            "help": "weak isolation only: where the per-job directories are made (None: /dev/shm if writable, else "
            "$TMPDIR or /tmp)"
        },
    )
    drop_privileges: bool = field(
        default=True,
        metadata={
            "help": "when root, run jobs as a uid of their own: per worker inside the boundary (UID_BASE + the "
            "worker's host pid; one job at a time, everything of the uid removed between jobs), else UID_BASE + pid"
        },
    )

    def __post_init__(self) -> None:
        if self.timeout_s <= 0 or self.grace_s < 0:
            raise ValueError("timeout_s must be > 0 and grace_s >= 0")
        sizes = (self.memory_mb, self.file_size_mb, self.max_processes, self.max_output_bytes, self.max_result_bytes)
        if min(*sizes, self.tmp_size_mb, self.tmp_inodes) <= 0:
            raise ValueError(
                "memory_mb, file_size_mb, max_processes, max_output_bytes, max_result_bytes, tmp_size_mb and "
                "tmp_inodes must be > 0"
            )
        if self.cpu_s is not None and self.cpu_s <= 0:
            raise ValueError("cpu_s must be > 0")
        if self.wall_timeout_s is not None and self.wall_timeout_s < self.timeout_s:
            raise ValueError("wall_timeout_s must be >= timeout_s (a job cannot use more CPU time than wall time)")

    @property
    def wall_limit_s(self) -> float:
        """The wall-clock safety net in seconds."""
        return self.wall_timeout_s if self.wall_timeout_s is not None else 2 * self.timeout_s + 1

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
    cpu_s: float = 0.0
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
