"""`kt eval ...`: score models on the benchmarks."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from eval.kt.cli import register_kt
from eval.rtce.cli import register_rtce
from kt_train.cli import fail


def _adapters(specs: list[str]) -> dict[str, str]:
    adapters = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--adapter takes NAME=DIR, got {spec!r}")
        if not (Path(path) / "adapter_config.json").is_file():
            raise FileNotFoundError(f"no adapter_config.json in {path} (adapter {name})")
        adapters[name] = path
    return adapters


def _adapters_command(args: argparse.Namespace) -> int:
    from eval.adapters import compare_adapters, held_out_items
    from kt_train.generation import SamplingConfig
    from kt_train.models import DEFAULT_MODEL

    try:
        adapters = _adapters(args.adapter)
        algorithms = args.algorithms or sorted({n for n in adapters if n in {"lzw", "ae", "rle", "huffman"}})
        if not algorithms:
            raise ValueError("give --algorithms, or adapters named after algorithms (lzw=DIR, ...)")
        items = held_out_items(args.benchmark, args.ids, algorithms, args.tasks, args.items)
        sampling = SamplingConfig(
            temperature=args.temperature, max_new_tokens=args.max_new_tokens, seed=args.seed, stop=["[/ANSWER]"]
        )
        summary = compare_adapters(args.model or DEFAULT_MODEL, adapters, items, args.output, sampling)
    except (FileNotFoundError, ValueError, KeyError) as exc:
        return fail(str(exc))
    print(json.dumps(summary["results"], indent=1))
    print(f"report: {Path(args.output) / 'report.md'}")
    return 0


def register(subparsers: Any) -> None:
    """Add the `eval` command group."""
    group = subparsers.add_parser("eval", help="score models")
    commands = group.add_subparsers(dest="eval_command", metavar="SUBCOMMAND", required=True)
    adapters = commands.add_parser("adapters", help="RTCE: base model vs adapters on held-out inputs")
    adapters.add_argument("--benchmark", required=True, metavar="DIR", help="folder with rtce.json")
    adapters.add_argument("--ids", metavar="FILE", help="held-out item ids (JSON list or one a line); default all")
    adapters.add_argument("--output", required=True, metavar="DIR")
    adapters.add_argument("--model", default=None, help="base model (default: the embedded smollm2-135m-instruct)")
    adapters.add_argument("--adapter", action="append", default=[], metavar="NAME=DIR", help="repeatable")
    adapters.add_argument("--algorithms", nargs="+", default=None, help="default: the adapters' algorithm names")
    adapters.add_argument("--tasks", nargs="+", default=["output_pred"])
    adapters.add_argument("--items", type=int, default=None, help="inputs per algorithm (default: all held out)")
    adapters.add_argument("--max-new-tokens", type=int, default=512)
    adapters.add_argument("--temperature", type=float, default=0.0, help="0: greedy")
    adapters.add_argument("--seed", type=int, default=42)
    adapters.set_defaults(handler=_adapters_command)
    register_kt(commands)
    register_rtce(commands)
