"""`kt nl ...`: the NL round-trip study: the expression suite, fine-tuning data and the N x N protocol run."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def _suite_command(args: argparse.Namespace) -> int:
    from dsl.expr.suite import SuiteConfig, make_suite, suite_report
    from kt_train.options import options_from

    print(suite_report(make_suite(options_from(SuiteConfig, args), args.output, progress=not args.quiet)))
    return 0


def _ft_data_command(args: argparse.Namespace) -> int:
    from dsl.expr.ft_data import FTDataConfig, make_ft_data
    from kt_train.options import options_from

    records = make_ft_data(options_from(FTDataConfig, args), args.output)
    print(json.dumps({split: len(rows) for split, rows in records.items()} | {"output": str(Path(args.output))}))
    return 0


def _run_command(args: argparse.Namespace) -> int:
    from eval.nl.protocol import NLRunConfig, run_nl
    from kt_train.options import options_from
    from kt_train.stages import RunOptions

    config = options_from(NLRunConfig, args)
    options = options_from(RunOptions, args)
    summary = run_nl(config, progress=not args.quiet, options=options)
    if options.sharded:
        print(json.dumps(summary))
        return 0
    matrix = summary.get("matrix") or {}
    headline = {"expressions": summary.get("n_expressions"), "round_trips": summary.get("n_rows")}
    headline |= {"mean_cell": matrix.get("mean_cell"), "q_G": matrix.get("q_G"), "q_E": matrix.get("q_E")}
    print(json.dumps(headline))
    print(f"report: {Path(config.output) / 'report.md'}")
    return 0


def _suite_config() -> type:
    from dsl.expr.suite import SuiteConfig

    return SuiteConfig


def _ft_data_config() -> type:
    from dsl.expr.ft_data import FTDataConfig

    return FTDataConfig


def _run_config() -> type:
    from eval.nl.config import NLRunConfig

    return NLRunConfig


def register(subparsers: Any) -> None:
    """Add the `nl` command group."""
    from kt_train.options import add_options_later
    from kt_train.stages import RunOptions

    group = subparsers.add_parser("nl", help="NL round trip: expression suite, fine-tuning data, N x N protocol")
    commands = group.add_subparsers(dest="nl_command", metavar="SUBCOMMAND", required=True)

    suite = commands.add_parser("suite", help="enumerate skeletons and instantiate the expression suite")
    suite.add_argument("--output", required=True, metavar="DIR", help="folder to write the suite to")
    add_options_later(suite, _suite_config)
    suite.add_argument("--quiet", action="store_true", help="no progress bar")
    suite.set_defaults(handler=_suite_command)

    ft = commands.add_parser("ft-data", help="fine-tuning chats (arithmetic Q..Z / 11..20, or assembly)")
    ft.add_argument("--output", required=True, metavar="DIR", help="folder to write the dataset to")
    add_options_later(ft, _ft_data_config)
    ft.set_defaults(handler=_ft_data_command)

    run = commands.add_parser("run", help="the round trip for every generator x extractor pair, with the report")
    add_options_later(run, _run_config)
    add_options_later(run, lambda: RunOptions, exclude=["retries"])
    run.add_argument("--quiet", action="store_true", help="no progress bars")
    run.set_defaults(handler=_run_command)


__all__ = ["register"]
