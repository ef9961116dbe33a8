"""`kt traces ...`: collect snoop execution traces of the RTCE programs (see `tracegen.traces`)."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from typing import Any

from kt_train.sandbox import DEFAULT_TIMEOUT_S
from tracegen.traces import DEFAULT_MAX_LINES
from tracegen.translate_cli import add_translate_command


@dataclass
class CollectConfig:
    """The options of `kt traces collect`."""

    benchmark: str = field(metadata={"help": "directory with rtce.json (`kt rtce build`)", "metavar": "DIR"})
    output: str = field(metadata={"help": "directory for traces.jsonl and summary.json", "metavar": "DIR"})
    workers: int | None = field(default=None, metadata={"help": "sandbox workers (none: the CPU count)"})
    max_lines: int = field(default=DEFAULT_MAX_LINES, metadata={"help": "longest kept trace, in lines"})
    algorithm: list[str] | None = field(
        default=None, metadata={"help": "only these algorithms (none: all)", "metavar": "NAME"}
    )
    timeout_s: float = field(default=DEFAULT_TIMEOUT_S, metadata={"help": "CPU seconds per traced run (the paper: 5)"})
    quiet: bool = field(default=False, metadata={"help": "no progress bar"})

    def __post_init__(self) -> None:
        if self.workers is not None and self.workers < 1:
            raise ValueError("--workers must be >= 1")
        if self.max_lines < 1:
            raise ValueError("--max-lines must be >= 1")
        if self.timeout_s <= 0:
            raise ValueError("--timeout-s must be > 0")


def _collect(args: argparse.Namespace) -> int:
    from kt_train.options import options_from
    from kt_train.sandbox import SandboxConfig
    from kt_train.stages import RunOptions
    from tracegen.traces import DEFAULT_MAX_OUTPUT_BYTES, collect_traces

    config = options_from(CollectConfig, args)
    options = options_from(RunOptions, args)
    try:
        summary = collect_traces(
            config.benchmark,
            config.output,
            workers=config.workers,
            algorithms=config.algorithm,
            max_lines=config.max_lines,
            progress=not config.quiet,
            config=SandboxConfig(timeout_s=config.timeout_s, max_output_bytes=DEFAULT_MAX_OUTPUT_BYTES),
            options=options,
        )
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid rtce.json: {exc}") from None
    print(json.dumps(summary, indent=2))
    return 0


def register(subparsers: Any) -> None:
    """Add the `traces` command group."""
    from kt_train.options import add_options_later
    from kt_train.stages import RunOptions

    traces = subparsers.add_parser("traces", help="Execution traces of the RTCE programs (snoop, in the sandbox)")
    commands = traces.add_subparsers(dest="traces_command", metavar="SUBCOMMAND", required=True)
    collect = commands.add_parser(
        "collect",
        help="Trace the encoder on x and the decoder on z of every benchmark item into DIR/traces.jsonl "
        "(resumable, shardable); print the kept/dropped summary as JSON.",
    )
    add_options_later(collect, lambda: CollectConfig)
    add_options_later(collect, lambda: RunOptions)
    collect.set_defaults(handler=_collect)
    add_translate_command(commands)
