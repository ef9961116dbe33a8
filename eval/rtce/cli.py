"""`kt eval rtce`: the four RTCE tasks for a base model and its adapters (or existing completions), scored."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from kt_train.cli import fail


def _adapters(specs: list[str]) -> dict[str, str]:
    adapters = {}
    for spec in specs:
        label, sep, path = spec.partition("=")
        if not sep or not label or not path:
            raise ValueError(f"--adapter takes LABEL=DIR, got {spec!r}")
        if label == "base":
            raise ValueError("the label 'base' is the base model's; name the adapter otherwise")
        if not (Path(path) / "adapter_config.json").is_file():
            raise FileNotFoundError(f"no adapter_config.json in {path} (adapter {label})")
        adapters[label] = path
    return adapters


def _rtce_command(args: argparse.Namespace) -> int:
    from eval.rtce.evaluate import RTCEEvalConfig, run_rtce_eval
    from kt_train.models import ModelUnavailableError

    try:
        config = RTCEEvalConfig(
            benchmark=args.benchmark,
            output=args.output,
            model=args.model,
            adapters=_adapters(args.adapter),
            predictions=args.predictions,
            algorithms=args.algorithms,
            tasks=args.tasks,
            ids=args.ids,
            items=args.items,
            temperatures=args.temperatures,
            n=args.n,
            top_p=args.top_p,
            max_new_tokens=args.max_new_tokens,
            seed=args.seed,
            backend=args.backend,
            batch_size=args.batch_size,
            roundtrip=not args.no_roundtrip,
            adapter_scope=args.adapter_scope,
            reflection_rounds=args.reflection_rounds,
            format_repair=args.format_repair,
            reflection_gen_tokens=args.reflection_gen_tokens,
            wandb_project=args.wandb_project,
        )
        summary = run_rtce_eval(config)
    except (FileNotFoundError, ValueError, KeyError, ModelUnavailableError, ImportError) as exc:
        return fail(str(exc))
    for row in summary.get("roundtrip", []):
        print(json.dumps(row))
    print(f"report: {Path(args.output) / 'report.md'}")
    return 0


def register_rtce(commands: Any) -> None:
    """Add `kt eval rtce` to the `eval` group."""
    from eval.rtce.items import ALGORITHM_NAMES, TASK_NAMES

    rtce = commands.add_parser("rtce", help="RTCE: four tasks, EM / ES / Pass@k, round trips, report")
    rtce.add_argument("--benchmark", required=True, metavar="DIR", help="folder with rtce.json (`kt rtce build`)")
    rtce.add_argument("--output", required=True, metavar="DIR")
    source = rtce.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", help="base model (embedded name, path or hub id)")
    source.add_argument("--predictions", metavar="FILE", help="JSONL rows `id`, `completions` to score")
    rtce.add_argument("--adapter", action="append", default=[], metavar="LABEL=DIR", help="repeatable")
    rtce.add_argument("--algorithms", nargs="+", default=list(ALGORITHM_NAMES), choices=ALGORITHM_NAMES)
    rtce.add_argument("--tasks", nargs="+", default=list(TASK_NAMES), choices=TASK_NAMES)
    rtce.add_argument("--ids", metavar="FILE", help="input ids to evaluate (JSON list or one a line)")
    rtce.add_argument("--items", type=int, default=None, help="inputs per algorithm (the first N by id)")
    rtce.add_argument("--temperatures", nargs="+", type=float, default=[0.2, 0.8])
    rtce.add_argument("--n", type=int, default=5, help="completions per prompt")
    rtce.add_argument("--top-p", type=float, default=0.95)
    rtce.add_argument("--max-new-tokens", type=int, default=16384)
    rtce.add_argument("--seed", type=int, default=42)
    rtce.add_argument("--backend", choices=["transformers", "vllm"], default="transformers")
    rtce.add_argument("--batch-size", type=int, default=8)
    rtce.add_argument("--no-roundtrip", action="store_true", help="skip the round-trip second calls")
    rtce.add_argument(
        "--adapter-scope",
        choices=["own", "all"],
        default="own",
        help="own: an adapter named after an algorithm (lzw=DIR) answers that algorithm's prompts only",
    )
    rtce.add_argument("--format-repair", action="store_true", help="rewrite answerless completions before scoring")
    rtce.add_argument("--reflection-rounds", type=int, default=0, help="self-reflection rounds (the paper: 2)")
    rtce.add_argument("--reflection-gen-tokens", type=int, default=512, help="tokens per reflection call")
    rtce.add_argument("--wandb-project", default=None)
    rtce.set_defaults(handler=_rtce_command)


__all__ = ["register_rtce"]
