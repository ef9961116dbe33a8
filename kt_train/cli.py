"""The `kt` command. Subcommand groups are plugins found through the `kt_train.commands` entry point group.

A plugin is a function `register(subparsers)` that adds its parser and sets `handler(args) -> int` as a default. The
data packages (dsl, tracegen, eval) register themselves in pyproject.toml, so this runtime module imports none of them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points

ENTRY_POINT_GROUP = "kt_train.commands"
USAGE_ERROR = 2


def fail(message: str) -> int:
    """Print one error line and return the usage-error exit status."""
    print(f"kt: error: {message}", file=sys.stderr)
    return USAGE_ERROR


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        return fail("interrupted")


if __name__ == "__main__":
    sys.exit(main())
