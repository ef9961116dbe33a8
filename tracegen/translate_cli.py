"""`kt traces translate` (traces -> reasoning text) and `kt sft-data build` (SFT corpus); see `tracegen.translate`.

`add_translate_command(commands)` adds `translate` to the `traces` group's subcommands; `register_sft_data` is the
plugin for the `sft-data` group.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kt_train.cli import fail
from kt_train.generation import BackendOptions
from kt_train.models import DEFAULT_MODEL
from tracegen.translate import BACKENDS, DEFAULT_MAX_STEPS, DEFAULT_MIN_VALUE_SHARE

DEFAULT_MAX_CHARS = 32768


@dataclass
class TranslateConfig(BackendOptions):
    """The options of `kt traces translate`."""

    traces: str = field(metadata={"help": "directory with traces.jsonl", "metavar": "DIR"})
    output: str = field(metadata={"help": "directory for translations.jsonl and summary.json", "metavar": "DIR"})
    backend: str = field(  # type: ignore[assignment]  # BackendOptions' names, and the template
        default="template",
        kw_only=True,
        metadata={
            "help": "template: no model; transformers, vllm (in process) or openai (--base-url)",
            "choices": BACKENDS,
        },
    )
    model: str | None = field(
        default=None, metadata={"help": "model of the LLM backends (transformers: none = the embedded model)"}
    )
    max_steps: int = field(default=DEFAULT_MAX_STEPS, metadata={"help": "template: narrated steps"})
    min_value_share: float = field(
        default=DEFAULT_MIN_VALUE_SHARE, metadata={"help": "LLM backends: least share of the trace's values stated"}
    )
    max_new_tokens: int = field(default=8192, metadata={"help": "LLM backends: tokens per translation"})
    temperature: float = field(default=0.6, metadata={"help": "LLM backends: sampling temperature"})
    seed: int = field(default=42, metadata={"help": "LLM backends: sampling seed"})
    quiet: bool = field(default=False, metadata={"help": "no progress bar"})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.backend == "openai" and not self.model:
            raise ValueError("--model (the name the server serves) is required with --backend openai")
        if self.max_steps < 2:
            raise ValueError("--max-steps must be >= 2")
        if not 0.0 <= self.min_value_share <= 1.0:
            raise ValueError("--min-value-share must be between 0 and 1")
        self.check_model(self.model)


def _translate(args: argparse.Namespace) -> int:
    from kt_train.options import options_from
    from kt_train.stages import RunOptions
    from tracegen.translate import translate_traces

    config = options_from(TranslateConfig, args)
    sampling, model = None, config.model
    if config.backend != "template":
        from kt_train.generation import SamplingConfig
        from kt_train.models import DEFAULT_MODEL

        model = model or DEFAULT_MODEL
        sampling = SamplingConfig(
            max_new_tokens=config.max_new_tokens, temperature=config.temperature, seed=config.seed
        )
    summary = translate_traces(
        config.traces,
        config.output,
        backend=config.backend,
        model=model,
        sampling=sampling,
        progress=not config.quiet,
        max_steps=config.max_steps,
        min_value_share=config.min_value_share,
        options=options_from(RunOptions, args),
        backend_options=None if config.backend == "template" else config,
    )
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
            length_tokenizer=None if args.length_tokenizer == "none" else args.length_tokenizer,
            command=_sft_data_command(args),
            completions=args.completions,
        )
    except (FileNotFoundError, ImportError, OSError) as exc:
        return fail(str(exc))
    except json.JSONDecodeError as exc:
        return fail(f"invalid JSON: {exc}")
    except (ValueError, KeyError, TypeError) as exc:
        return fail(str(exc) or type(exc).__name__)
    print(json.dumps(summary, indent=2))
    return 0


def _sft_data_command(args: argparse.Namespace) -> str:
    """The `kt sft-data build` command, with every option that decides the output (not where it goes)."""
    parts = ["kt sft-data build --translations", args.translations, "--output OUT --max-chars", str(args.max_chars)]
    for flag, value in (
        ("--benchmark", args.benchmark),
        ("--eval-ids", args.eval_ids),
        ("--tokenizer", args.tokenizer),
        ("--length-tokenizer", args.length_tokenizer),
        ("--completions", args.completions if args.completions != "trace" else None),
    ):
        if value:
            parts += [flag, str(value)]
    return " ".join(parts)


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
    from kt_train.options import add_options_later
    from kt_train.stages import RunOptions

    add_options_later(translate, lambda: TranslateConfig)
    add_options_later(translate, lambda: RunOptions)
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
    build.add_argument(
        "--length-tokenizer",
        default=DEFAULT_MODEL,
        metavar="NAME",
        help=f"tokenizer whose token lengths the cards report, with a warning over common max_length (default "
        f"{DEFAULT_MODEL}; none: no token lengths)",
    )
    build.add_argument(
        "--completions",
        choices=("trace", "answer", "both"),  # tracegen.sft_data.COMPLETIONS (not imported: `kt --help` stays light)
        default="trace",
        help="assistant turns: trace (narrated execution ending in the answer; default), answer (the answer block "
        "alone: short rows for small models), both (a row of each)",
    )
    build.set_defaults(handler=_build)
