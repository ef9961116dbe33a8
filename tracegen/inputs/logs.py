"""Apache-style structured log lines: 11 categories keyed on endpoint, module, level and duration."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta

Generated = tuple[str, dict]

LEVELS = ("INFO", "DEBUG", "WARNING", "ERROR", "CRITICAL")
METHODS = ("GET", "POST", "PUT", "DELETE")
PLAIN_ENDPOINTS = ("/api/v1/user", "/api/v1/order", "/api/v2/cart", "/home", "/search", "/upload")
MODULES = ("server", "cache", "worker", "scheduler", "gateway")
SLOW_SECONDS = 2.5
BASE_TIME = datetime(2025, 1, 1)


@dataclass(frozen=True)
class LogLine:
    """The fields of one log line."""

    timestamp: str
    level: str
    method: str
    endpoint: str
    user: str
    duration: float
    ip: str
    module: str

    def render(self) -> str:
        return (
            f"[{self.timestamp}] {self.level} - {self.method} {self.endpoint} by user:{self.user} "
            f"in {self.duration:.3f}s from {self.ip} ({self.module})"
        )


def _base(rng: random.Random) -> LogLine:
    """A fast, ordinary request: no category-defining field set yet."""
    stamp = BASE_TIME + timedelta(seconds=rng.randrange(0, 7 * 24 * 3600))
    return LogLine(
        timestamp=stamp.strftime("%Y-%m-%d %H:%M:%S"),
        level=rng.choice(LEVELS),
        method=rng.choice(METHODS),
        endpoint=rng.choice(PLAIN_ENDPOINTS),
        user=f"{rng.getrandbits(32):08x}",
        duration=round(rng.uniform(0.01, SLOW_SECONDS), 3),
        ip=f"192.168.{rng.randint(0, 255)}.{rng.randint(0, 255)}",
        module=rng.choice(MODULES),
    )


def _emit(line: LogLine) -> Generated:
    return line.render(), asdict(line)


def slow_request(rng: random.Random) -> Generated:
    """A request slower than 2.5 s."""
    return _emit(replace(_base(rng), duration=round(rng.uniform(SLOW_SECONDS + 0.001, 9.0), 3)))


def status_check(rng: random.Random) -> Generated:
    """A health check on /status."""
    return _emit(replace(_base(rng), endpoint="/status", method="GET", level=rng.choice(("INFO", "DEBUG"))))


def metrics_request(rng: random.Random) -> Generated:
    """A scrape of /metrics."""
    return _emit(replace(_base(rng), endpoint="/metrics", method="GET"))


def auth_login(rng: random.Random) -> Generated:
    """A successful login on /auth/login."""
    return _emit(replace(_base(rng), endpoint="/auth/login", method="POST", module="auth", level="INFO"))


def auth_failure(rng: random.Random) -> Generated:
    """A warning or error raised by the auth module."""
    level = rng.choice(("WARNING", "ERROR", "CRITICAL"))
    return _emit(replace(_base(rng), module="auth", level=level, endpoint=rng.choice(("/auth/token", "/auth/logout"))))


def db_error(rng: random.Random) -> Generated:
    """An error raised by the database module."""
    return _emit(replace(_base(rng), module="db", level="ERROR"))


def _level(level: str) -> Callable[[random.Random], Generated]:
    def generate(rng: random.Random) -> Generated:
        return _emit(replace(_base(rng), level=level))

    generate.__doc__ = f"An ordinary request logged at {level}."
    return generate


GENERATORS: dict[str, Callable[[random.Random], Generated]] = {
    "slow_request": slow_request,
    "status_check": status_check,
    "metrics_request": metrics_request,
    "auth_login": auth_login,
    "auth_failure": auth_failure,
    "db_error": db_error,
    **{f"level_{level.lower()}": _level(level) for level in LEVELS},
}
