"""The `kt` command. Subcommand groups are plugins found through the `kt_train.commands` entry point group.

A plugin is a function `register(subparsers)` that adds its parser and sets `handler(args) -> int` as a default. The
data packages (dsl, tracegen, eval) register themselves in pyproject.toml, so this runtime module imports none of them.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from typing import Any, NoReturn

from kt_train.logs import DEBUG_ENV, DEBUG_FLAG, configure_logging, report_error, take_debug_flag

ENTRY_POINT_GROUP = "kt_train.commands"
USAGE_ERROR = 2


def fail(message: str) -> int:
    """Print one error line and return the usage-error exit status (inside an `except` block with --debug or
    KT_DEBUG=1, the traceback of the exception handled first)."""
    if os.environ.get(DEBUG_ENV) == "1" and sys.exc_info()[1] is not None:
        traceback.print_exc(file=sys.stderr)
    print(f"kt: error: {message}", file=sys.stderr)
    return USAGE_ERROR


class UsageError(ValueError):
    """A command line argparse refused (reported as one line, not the whole usage)."""


class OneLineParser(argparse.ArgumentParser):
    """An argparse parser (and, through `add_subparsers`, its subparsers) whose errors are one line, and whose
    options can be added when it is first used (`defer`): a subcommand imports its config's module only when it
    runs or shows its help, so `kt` starts fast."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deferred: list[Callable[[argparse.ArgumentParser], None]] = []

    def defer(self, populate: Callable[[argparse.ArgumentParser], None]) -> None:
        self._deferred.append(populate)

    def _populate(self) -> None:
        while self._deferred:
            self._deferred.pop(0)(self)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self._populate()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self._populate()
        return super().format_help()

    def format_usage(self) -> str:
        self._populate()
        return super().format_usage()

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="kt",
        description="kt-train: corpora, training and evaluation of code LMs on synthetic program data.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for entry in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            register = entry.load()
        except ImportError as exc:  # a plugin whose optional dependencies are missing: the others still work
            print(f"kt: warning: command group {entry.name!r} unavailable: {exc}", file=sys.stderr)
            continue
        register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one `kt` command: logging set up once; an error is one line (exit 2 for bad input), its traceback with
    `--debug` or KT_DEBUG=1."""
    argv, debug = take_debug_flag(sys.argv[1:] if argv is None else argv)
    configure_logging(debug)
    parser = build_parser()
    parser.epilog = f"{DEBUG_FLAG} (anywhere) or {DEBUG_ENV}=1: debug logs and the traceback behind an error."
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        return fail(str(exc))
    try:
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        return fail("interrupted")
    except Exception as exc:  # one line, not a traceback: bad input (exit 2) or a failure (exit 1)
        return report_error("kt", exc, debug)


if __name__ == "__main__":
    sys.exit(main())
