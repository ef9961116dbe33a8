"""`kt eval rtce`: the four RTCE tasks for a base model and its adapters (or existing completions), scored."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def _rtce_command(args: argparse.Namespace) -> int:
    from eval.rtce.evaluate import RTCEEvalConfig, run_rtce_eval
    from kt_train.options import options_from
    from kt_train.stages import RunOptions

    config = options_from(RTCEEvalConfig, args)
    options = options_from(RunOptions, args)
    summary = run_rtce_eval(config, options=options)
    if options.sharded:
        print(f"shard {options.shard_index} of {options.num_shards}: {summary['rows']} rows in {config.output}")
        return 0
    for row in summary.get("roundtrip", []):
        print(json.dumps(row))
    print(f"report: {Path(config.output) / 'report.md'}")
    return 0


def _rtce_config() -> type:
    from eval.rtce.evaluate import RTCEEvalConfig

    return RTCEEvalConfig


def register_rtce(commands: Any) -> None:
    """Add `kt eval rtce` to the `eval` group."""
    from kt_train.options import add_options_later
    from kt_train.stages import RunOptions

    rtce = commands.add_parser("rtce", help="RTCE: four tasks, EM / ES / Pass@k, round trips, report")
    add_options_later(rtce, _rtce_config)
    add_options_later(
        rtce, lambda: RunOptions, exclude=["retries"]
    )  # the config's own --retries: per request and per rerun
    rtce.set_defaults(handler=_rtce_command)


__all__ = ["register_rtce"]
