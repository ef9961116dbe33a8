"""Logging and error reporting for every entry point (`kt`, the recipes), set up once per process.

`--debug` (anywhere on the command line) or `KT_DEBUG=1` turns on debug logs and shows the traceback behind what is
otherwise one error line; it is passed on to child processes (accelerate launches, workers) through the environment.
"""

from __future__ import annotations

import logging
import os
import sys
import traceback
from collections.abc import Sequence

DEBUG_FLAG = "--debug"
DEBUG_ENV = "KT_DEBUG"
PACKAGES = ("kt_train", "dsl", "tracegen", "eval", "recipes", "__main__")  # ours: INFO by default, the rest WARNING
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, OSError, LookupError)  # bad input: exit status 2
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def take_debug_flag(argv: Sequence[str]) -> tuple[list[str], bool]:
    """`argv` without `--debug`, and whether debugging is on (the flag, or KT_DEBUG set and not 0)."""
    args = [arg for arg in argv if arg != DEBUG_FLAG]
    debug = len(args) != len(argv) or os.environ.get(DEBUG_ENV, "").strip() not in ("", "0")
    if debug:
        os.environ[DEBUG_ENV] = "1"
    return args, debug


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever sys.stderr is at the time (test runners and progress bars replace it)."""

    def __init__(self) -> None:
        super().__init__()

    @property  # type: ignore[override]
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:
        pass


def configure_logging(debug: bool, level: int = logging.INFO) -> None:
    """Our packages log at `level` (DEBUG when debugging), every other library at WARNING (INFO when debugging), to
    stderr; calling it again only changes the levels."""
    root = logging.getLogger()
    if not any(isinstance(handler, _StderrHandler) for handler in root.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter(FORMAT, "%H:%M:%S"))
        root.addHandler(handler)
    root.setLevel(logging.INFO if debug else logging.WARNING)
    for name in PACKAGES:
        logging.getLogger(name).setLevel(logging.DEBUG if debug else level)


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type's name when it has none)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def report_error(prog: str, exc: BaseException, debug: bool) -> int:
    """Print what went wrong: one line (the traceback first when debugging); exit status 2 for bad input (a value,
    file or key), 1 for anything else."""
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    message = " ".join(str(exc).split()) or type(exc).__name__  # one line, whatever the library wrote
    if not isinstance(exc, USER_ERRORS) or isinstance(exc, KeyError):
        message = f"{type(exc).__name__}: {message}"
    hint = "" if debug else f" (run with {DEBUG_FLAG} or {DEBUG_ENV}=1 for the traceback)"
    print(f"{prog}: error: {message}{hint}", file=sys.stderr)
    return 2 if isinstance(exc, USER_ERRORS) else 1


__all__ = ["DEBUG_ENV", "DEBUG_FLAG", "configure_logging", "first_line", "report_error", "take_debug_flag"]
