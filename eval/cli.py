"""`kt eval ...`: score models on the benchmarks."""

from __future__ import annotations

from typing import Any

from eval.kt.cli import register_kt
from eval.rtce.cli import register_rtce


def register(subparsers: Any) -> None:
    """Add the `eval` command group."""
    group = subparsers.add_parser("eval", help="score models")
    commands = group.add_subparsers(dest="eval_command", metavar="SUBCOMMAND", required=True)
    register_kt(commands)
    register_rtce(commands)
