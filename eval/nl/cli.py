"""`kt nl ...`: the NL round-trip study: the expression suite, fine-tuning data and the N x N protocol run."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from kt_train.cli import fail


def _suite_command(args: argparse.Namespace) -> int:
    from dsl.expr.suite import SuiteConfig, build_suite, suite_report, write_suite

    try:
        config = SuiteConfig(
            domain=args.domain, k_min=args.k_min, k_max=args.k_max, d_min=args.d_min, d_max=args.d_max,
            max_skeletons=args.max_skeletons, instances=args.instances, seed=args.seed,
        )  # fmt: skip
        suite = build_suite(config, progress=not args.quiet)
        command = (
            f"kt nl suite --domain {args.domain} --k-min {args.k_min} --k-max {args.k_max} --d-min {args.d_min} "
            f"--d-max {args.d_max} --max-skeletons {args.max_skeletons} --instances {args.instances} "
            f"--seed {args.seed} --output OUT"
        )
        write_suite(suite, args.output, command=command)
    except (ValueError, OSError) as exc:
        return fail(str(exc))
    print(suite_report(suite))
    return 0


def _ft_data_command(args: argparse.Namespace) -> int:
    from dsl.expr.ft_data import FTDataConfig, build_ft_records, write_ft_dataset

    try:
        config = FTDataConfig(
            domain=args.domain, pairs_per_depth=args.pairs_per_depth, depths=tuple(args.depths),
            test_fraction=args.test_fraction, seed=args.seed, generator_shots=args.generator_shots,
        )  # fmt: skip
        records = build_ft_records(config)
        path = write_ft_dataset(records, args.output, config)
    except (ValueError, OSError) as exc:
        return fail(str(exc))
    print(json.dumps({split: len(rows) for split, rows in records.items()} | {"output": str(path)}))
    return 0


def _run_command(args: argparse.Namespace) -> int:
    from eval.nl.protocol import NLRunConfig, run_nl
    from kt_train.options import options_from
    from kt_train.stages import RunOptions

    config = options_from(NLRunConfig, args)
    summary = run_nl(config, progress=not args.quiet, options=options_from(RunOptions, args))
    matrix = summary.get("matrix") or {}
    headline = {"expressions": summary.get("n_expressions"), "round_trips": summary.get("n_rows")}
    headline |= {"mean_cell": matrix.get("mean_cell"), "q_G": matrix.get("q_G"), "q_E": matrix.get("q_E")}
    print(json.dumps(headline))
    print(f"report: {Path(config.output) / 'report.md'}")
    return 0


def register(subparsers: Any) -> None:
    """Add the `nl` command group."""
    group = subparsers.add_parser("nl", help="NL round trip: expression suite, fine-tuning data, N x N protocol")
    commands = group.add_subparsers(dest="nl_command", metavar="SUBCOMMAND", required=True)

    suite = commands.add_parser("suite", help="enumerate skeletons and instantiate the expression suite")
    suite.add_argument("--output", required=True, metavar="DIR")
    suite.add_argument("--domain", choices=["arithmetic", "logic"], default="arithmetic")
    suite.add_argument("--k-min", type=int, default=2, help="smallest operator count")
    suite.add_argument("--k-max", type=int, default=8, help="largest operator count")
    suite.add_argument("--d-min", type=int, default=2, help="smallest depth")
    suite.add_argument("--d-max", type=int, default=6, help="largest depth (logic in the paper: 5)")
    suite.add_argument("--max-skeletons", type=int, default=50, help="skeletons kept per (k, d) cell")
    suite.add_argument("--instances", type=int, default=5, help="instantiations per skeleton")
    suite.add_argument("--seed", type=int, default=0)
    suite.add_argument("--quiet", action="store_true", help="no progress bar")
    suite.set_defaults(handler=_suite_command)

    ft = commands.add_parser("ft-data", help="fine-tuning chats (arithmetic Q..Z / 11..20, or assembly)")
    ft.add_argument("--output", required=True, metavar="DIR")
    ft.add_argument("--domain", choices=["arithmetic", "assembly"], default="arithmetic")
    ft.add_argument("--pairs-per-depth", type=int, default=500)
    ft.add_argument("--depths", type=int, nargs="+", default=[2, 3, 4, 5])
    ft.add_argument("--test-fraction", type=float, default=0.1)
    ft.add_argument("--generator-shots", type=int, default=0, help="exemplars in the e->w prompts")
    ft.add_argument("--seed", type=int, default=0)
    ft.set_defaults(handler=_ft_data_command)

    from eval.nl.config import NLRunConfig
    from kt_train.options import add_options
    from kt_train.stages import RunOptions

    run = commands.add_parser("run", help="the round trip for every generator x extractor pair, with the report")
    add_options(run, NLRunConfig)
    add_options(run, RunOptions, exclude=["retries", "num_shards", "shard_index"])
    run.add_argument("--quiet", action="store_true", help="no progress bars")
    run.set_defaults(handler=_run_command)


__all__ = ["register"]
