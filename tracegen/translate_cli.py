"""`kt traces translate` (traces -> reasoning text) and `kt sft-data build` (SFT corpus); see `tracegen.translate`.

`add_translate_command(commands)` adds `translate` to the `traces` group's subcommands; `register_sft_data` is the
plugin for the `sft-data` group.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from kt_train.cli import fail
from tracegen.translate import BACKENDS, DEFAULT_MAX_STEPS, DEFAULT_MIN_VALUE_SHARE

DEFAULT_MAX_CHARS = 32768


def _translate(args: argparse.Namespace) -> int:
    from tracegen.translate import translate_traces

    if args.backend == "vllm" and not args.model:
        return fail("--model is required with --backend vllm")
    if args.max_steps < 2:
        return fail("--max-steps must be >= 2")
    if not 0.0 <= args.min_value_share <= 1.0:
        return fail("--min-value-share must be between 0 and 1")
    sampling = None
    if args.backend != "template":
        from kt_train.generation import SamplingConfig
        from kt_train.models import DEFAULT_MODEL

        args.model = args.model or DEFAULT_MODEL

        sampling = SamplingConfig(max_new_tokens=args.max_new_tokens, temperature=args.temperature, seed=args.seed)
    try:
        summary = translate_traces(
            Path(args.traces),
            Path(args.output),
            backend=args.backend,
            model=args.model,
            sampling=sampling,
            progress=not args.quiet,
            max_steps=args.max_steps,
            min_value_share=args.min_value_share,
        )
    except (FileNotFoundError, ImportError) as exc:
        return fail(str(exc))
    except (ValueError, KeyError, TypeError) as exc:
        return fail(str(exc) or type(exc).__name__)
    print(json.dumps(summary, indent=2))
    return 0


def _build(args: argparse.Namespace) -> int:
    from tracegen.sft_data import build_sft_data

    if args.max_chars < 1:
        return fail("--max-chars must be >= 1")
    try:
        tokenizer = _load_tokenizer(args.tokenizer) if args.tokenizer else None
        summary = build_sft_data(
            Path(args.translations),
            Path(args.output),
            benchmark_dir=args.benchmark,
            eval_ids=args.eval_ids,
            max_chars=args.max_chars,
            tokenizer=tokenizer,
        )
    except (FileNotFoundError, ImportError, OSError) as exc:
        return fail(str(exc))
    except json.JSONDecodeError as exc:
        return fail(f"invalid JSON: {exc}")
    except (ValueError, KeyError, TypeError) as exc:
        return fail(str(exc) or type(exc).__name__)
    print(json.dumps(summary, indent=2))
    return 0


def _load_tokenizer(name: str) -> Any:
    from kt_train.models import get_tokenizer

    return get_tokenizer(name)


def add_translate_command(commands: Any) -> None:
    """Add `translate` to the subcommands of the `traces` group."""
    translate = commands.add_parser(
        "translate",
        help="Turn the kept traces of DIR/traces.jsonl into step-by-step reasoning ending in an [ANSWER] block "
        "(OUTPUT/translations.jsonl, resumable); print the summary as JSON.",
    )
    translate.add_argument("--traces", required=True, metavar="DIR", help="directory with traces.jsonl")
    translate.add_argument("--output", required=True, metavar="DIR")
    translate.add_argument("--backend", choices=BACKENDS, default="template", help="template: no model (default)")
    translate.add_argument(
        "--model",
        default=None,
        metavar="M",
        help="model for the LLM backends (transformers: default the embedded smollm2-135m-instruct)",
    )
    translate.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS, help="template: narrated steps")
    translate.add_argument(
        "--min-value-share",
        type=float,
        default=DEFAULT_MIN_VALUE_SHARE,
        help="LLM backends: least share of the trace's values the text must state",
    )
    translate.add_argument("--max-new-tokens", type=int, default=8192, help="LLM backends: tokens per translation")
    translate.add_argument("--temperature", type=float, default=0.6, help="LLM backends: sampling temperature")
    translate.add_argument("--seed", type=int, default=42, help="LLM backends: sampling seed")
    translate.add_argument("--quiet", action="store_true", help="no progress bar")
    translate.set_defaults(handler=_translate)


def register_sft_data(subparsers: Any) -> None:
    """Add the `sft-data` command group."""
    group = subparsers.add_parser("sft-data", help="SFT corpora from trace translations")
    commands = group.add_subparsers(dest="sft_data_command", metavar="SUBCOMMAND", required=True)
    build = commands.add_parser(
        "build",
        help="Build two-turn chat datasets (per algorithm and combined) from DIR/translations.jsonl; print the "
        "summary as JSON.",
    )
    build.add_argument("--translations", required=True, metavar="DIR", help="directory with translations.jsonl")
    build.add_argument("--output", required=True, metavar="DIR")
    build.add_argument("--benchmark", default=None, metavar="DIR", help="rtce.json directory (prompts taken from it)")
    build.add_argument("--eval-ids", default=None, metavar="FILE", help="item ids to hold out (JSON list or lines)")
    build.add_argument("--max-chars", type=int, default=DEFAULT_MAX_CHARS, help="longest kept chat, in characters")
    build.add_argument("--tokenizer", default=None, metavar="NAME", help="measure length on its chat template")
    build.set_defaults(handler=_build)
