"""`kt traces ...`: collect snoop execution traces of the RTCE programs (see `tracegen.traces`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from kt_train.cli import fail
from tracegen.traces import DEFAULT_MAX_LINES
from tracegen.translate_cli import add_translate_command


def _collect(args: argparse.Namespace) -> int:
    from tracegen.traces import collect_traces

    if args.workers is not None and args.workers < 1:
        return fail("--workers must be >= 1")
    if args.max_lines < 1:
        return fail("--max-lines must be >= 1")
    try:
        summary = collect_traces(
            Path(args.benchmark),
            Path(args.output),
            workers=args.workers,
            algorithms=args.algorithm,
            max_lines=args.max_lines,
            progress=not args.quiet,
        )
    except FileNotFoundError as exc:
        return fail(str(exc))
    except json.JSONDecodeError as exc:
        return fail(f"invalid rtce.json: {exc}")
    except (ValueError, KeyError, TypeError) as exc:
        return fail(str(exc) or type(exc).__name__)
    print(json.dumps(summary, indent=2))
    return 0


def register(subparsers: Any) -> None:
    """Add the `traces` command group."""
    traces = subparsers.add_parser("traces", help="Execution traces of the RTCE programs (snoop, in the sandbox)")
    commands = traces.add_subparsers(dest="traces_command", metavar="SUBCOMMAND", required=True)
    collect = commands.add_parser(
        "collect",
        help="Trace the encoder on x and the decoder on z of every benchmark item into DIR/traces.jsonl "
        "(resumable); print the kept/dropped summary as JSON.",
    )
    collect.add_argument("--benchmark", required=True, metavar="DIR", help="directory with rtce.json (kt rtce build)")
    collect.add_argument("--output", required=True, metavar="DIR")
    collect.add_argument("--workers", type=int, default=None, help="sandbox workers (default: CPU count)")
    collect.add_argument("--max-lines", type=int, default=DEFAULT_MAX_LINES, help="longest kept trace, in lines")
    collect.add_argument(
        "--algorithm", action="append", default=None, metavar="NAME", help="only this algorithm (repeatable)"
    )
    collect.add_argument("--quiet", action="store_true", help="no progress bar")
    collect.set_defaults(handler=_collect)
    add_translate_command(commands)
