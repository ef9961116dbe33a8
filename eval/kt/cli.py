"""`kt eval kt` (score candidate programs on a KT set), `kt eval kt-baselines` (Repeat, Upper Bound, Gzip, LMiC)
and `kt eval kt-compare` (two evaluations of one set, with 95% CIs)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from kt_train.cli import fail


def _kt_command(args: argparse.Namespace) -> int:
    from eval.kt.evaluate import KTEvalConfig, run_kt_eval
    from kt_train.options import options_from
    from kt_train.stages import RunOptions

    config = options_from(KTEvalConfig, args)
    if config.adapter is not None and not (Path(config.adapter) / "adapter_config.json").is_file():
        raise FileNotFoundError(f"no adapter_config.json in {config.adapter}")
    options = options_from(RunOptions, args)
    summary = run_kt_eval(config, options=options)
    if options.sharded:
        print(f"shard {options.shard_index} of {options.num_shards}: {summary['items']} items in {config.output}")
        return 0
    metrics = summary["metrics"]
    keys = ("accuracy", "compression_rate", "precision", "executable", "num_items")
    print(json.dumps({k: metrics[k] for k in keys}, indent=1))
    print(f"report: {Path(config.output) / 'report.md'}")
    return 0


def _baselines_command(args: argparse.Namespace) -> int:
    from eval.kt.baselines import (
        BaselineConfig,
        check_output,
        compute_baselines,
        log_baselines_to_wandb,
        write_baselines,
    )
    from eval.kt.dataset import DatasetError, load_kt_dataset
    from kt_train.options import options_from

    output = Path(args.output)
    try:
        check_output(output)
        dataset = load_kt_dataset(args.dataset, args.limit)
        config = options_from(BaselineConfig, args)
        result = compute_baselines(dataset, config)
    except (DatasetError, FileNotFoundError, ValueError) as exc:
        return fail(str(exc))
    print(write_baselines(result, output), end="")
    if config.wandb_project:
        log_baselines_to_wandb(result, dataset, config, output)
    return 0


def _compare_command(args: argparse.Namespace) -> int:
    from eval.kt.compare import compare_kt, compare_markdown

    try:
        result = compare_kt(Path(args.first), Path(args.second), args.seed, args.gzip_encoding)
    except (FileNotFoundError, ValueError) as exc:
        return fail(str(exc))
    if args.output:
        Path(args.output).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(compare_markdown(result), end="")
    return 0


def _kt_config() -> type:
    from eval.kt.evaluate import KTEvalConfig

    return KTEvalConfig


def _baseline_config() -> type:
    from eval.kt.baselines import BaselineConfig

    return BaselineConfig


def register_kt(commands: Any) -> None:
    """Add `kt eval kt`, `kt eval kt-baselines` and `kt eval kt-compare` to the `eval` group."""
    from kt_train.options import add_options_later
    from kt_train.stages import RunOptions

    kt = commands.add_parser("kt", help="KT: check and score candidate programs (generated or given)")
    add_options_later(kt, _kt_config)
    add_options_later(kt, lambda: RunOptions)
    kt.set_defaults(handler=_kt_command)

    baselines = commands.add_parser("kt-baselines", help="KT: Repeat, Upper Bound, Gzip and LMiC on a set")
    baselines.add_argument("--dataset", required=True, metavar="DIR", help="`kt dsl eval-set` or `kt kt-data` folder")
    baselines.add_argument("--output", required=True, metavar="DIR", help="folder for summary.json and report.md")
    baselines.add_argument("--limit", type=int, default=None, help="the first N sequences only (default: all)")
    add_options_later(baselines, _baseline_config)
    baselines.set_defaults(handler=_baselines_command)

    compare = commands.add_parser(
        "kt-compare", help="KT: two evaluations of one set, the change in Accuracy and CompressionRate with 95% CIs"
    )
    compare.add_argument("first", metavar="FIRST", help="`kt eval kt` output folder (the start, or greedy decoding)")
    compare.add_argument("second", metavar="SECOND", help="`kt eval kt` output folder of the same sequences")
    compare.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    compare.add_argument(
        "--gzip-encoding",
        default="bytes",
        choices=["bytes", "latin1-utf8"],
        help="what gzip sees of a sequence in the comparison with Gzip per sequence (default: %(default)s)",
    )
    compare.add_argument("--output", metavar="FILE", help="also write the comparison as JSON here")
    compare.set_defaults(handler=_compare_command)


__all__ = ["register_kt"]
