"""`kt sandbox run FILE`: run a Python file in the sandbox and print the verdict as JSON."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from kt_train.cli import fail
from kt_train.sandbox import SandboxConfig, run_code


def _run(args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        code = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        return fail(f"cannot read {path}: {exc.strerror if isinstance(exc, OSError) else exc}")
    try:
        config = SandboxConfig(timeout_s=args.timeout, memory_mb=args.memory_mb)
    except ValueError as exc:
        return fail(str(exc))
    result = run_code(code, config)
    print(json.dumps(result.to_dict(), indent=2))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `sandbox` command group."""
    parser = subparsers.add_parser("sandbox", help="run untrusted Python in a limited process")
    commands = parser.add_subparsers(dest="sandbox_command", metavar="COMMAND", required=True)
    run = commands.add_parser("run", help="run a Python file; print the verdict as JSON (exit 0 for any verdict)")
    run.add_argument("file", help="the Python file to run")
    run.add_argument("--timeout", type=float, default=SandboxConfig.timeout_s, help="wall-clock limit in seconds")
    run.add_argument("--memory-mb", type=int, default=SandboxConfig.memory_mb, help="address-space limit in MiB")
    run.set_defaults(handler=_run)
