"""`kt sandbox run FILE`: run a Python file in the sandbox, print the verdict as JSON; `--explain`: the isolation."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from kt_train.cli import fail
from kt_train.options import add_options, options_from
from kt_train.sandbox import SandboxConfig, SandboxUnavailable, explain, run_code


def _run(args: argparse.Namespace) -> int:
    config = options_from(SandboxConfig, args)
    if args.explain:
        try:
            print(explain(config))
        except SandboxUnavailable as exc:
            return fail(str(exc))
        if args.file is None:
            return 0
    if args.file is None:
        return fail("give a Python file to run (or --explain)")
    path = Path(args.file)
    try:
        code = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        return fail(f"cannot read {path}: {exc.strerror if isinstance(exc, OSError) else exc}")
    try:
        result = run_code(code, config)
    except SandboxUnavailable as exc:
        return fail(str(exc))
    print(json.dumps(result.to_dict(), indent=2))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `sandbox` command group."""
    parser = subparsers.add_parser("sandbox", help="run untrusted Python in an isolated, limited process")
    commands = parser.add_subparsers(dest="sandbox_command", metavar="COMMAND", required=True)
    run = commands.add_parser(
        "run",
        help="run a Python file; print the verdict as JSON (exit 0 for any verdict)",
    )
    run.add_argument("file", nargs="?", help="the Python file to run")
    run.add_argument(
        "--explain", action="store_true", help="print the isolation in force (namespaces, limits, what is visible)"
    )
    add_options(run, SandboxConfig)
    run.set_defaults(handler=_run)
