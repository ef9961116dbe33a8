"""`kt dsl ...`: generate corpora, run, encode and render programs of the KT sequence DSL."""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

import yaml

from dsl.bits import program_bits
from dsl.corpus import CorpusError, CorpusRequest, corpus_command, generate_corpus, merge_corpus
from dsl.dataset_io import read_exclusions
from dsl.interpreter import run_lines, run_program
from dsl.parser import parse_program
from dsl.program import DSLError, render_program, render_python
from dsl.sampler import SamplerConfig, sample_program
from dsl.selection import Target
from kt_train.cli import fail
from kt_train.options import add_options_later

HANDLED = (DSLError, CorpusError, FileNotFoundError, IsADirectoryError, ValueError, yaml.YAMLError)


def _read_text(path: str) -> str:
    return sys.stdin.read() if path == "-" else Path(path).read_text()


def _sampler_config(path: str | None) -> SamplerConfig:
    if path is None:
        return SamplerConfig()
    data = yaml.safe_load(Path(path).read_text()) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of sampler settings")
    known = {f.name for f in fields(SamplerConfig)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"{path}: unknown sampler setting(s) {', '.join(unknown)}")
    return SamplerConfig(**data)


def _print_summary(manifest: dict[str, Any], output: Path) -> None:
    stats = manifest["stats"]
    length, lines = stats["sequence_length"], stats["num_lines"]
    top = sorted(stats["function_share"].items(), key=lambda kv: -kv[1])[:6]
    print(f"wrote {stats['num_pairs']} pairs ({stats['total_bytes']} sequence bytes) to {output}")
    print(
        f"  candidates sampled {manifest['candidates']}, duplicates dropped {manifest['duplicates']}, "
        f"excluded {manifest['excluded']}"
    )
    print(f"  sequence length mean {length['mean']} median {length['median']} std {length['std']}")
    print(f"  lines per program mean {lines['mean']} median {lines['median']}; bits mean {stats['bits']['mean']}")
    print("  most used functions: " + ", ".join(f"{name} {share:.1%}" for name, share in top))


def _corpus(args: argparse.Namespace, target: Target, stream: str, command: str) -> int:
    request = CorpusRequest(
        output=Path(args.output),
        seed=args.seed,
        target=target,
        stream=stream,
        config=_sampler_config(args.sampler_config),
        exclude=read_exclusions([Path(p) for p in args.exclude]),
        workers=args.workers,
        num_shards=args.num_shards,
        shard_index=args.shard_index,
        keep_blocks=args.keep_blocks,
        overwrite=args.overwrite,
        command=corpus_command(command, args.exclude, args.sampler_config),
        progress=not args.quiet,
    )
    manifest = generate_corpus(request)
    if manifest is None:
        print(
            f"built shard {args.shard_index} of {args.num_shards} in {args.output}/.blocks; "
            f"gather all shards with: kt dsl merge --output DIR SHARD_DIR..."
        )
    else:
        _print_summary(manifest, request.output)
    return 0


def _generate(args: argparse.Namespace) -> int:
    command = f"kt dsl generate --num-pairs {args.num_pairs} --seed {args.seed} --output OUT"
    return _corpus(args, Target(pairs=args.num_pairs), "train", command)


def _eval_set(args: argparse.Namespace) -> int:
    command = f"kt dsl eval-set --bytes {args.bytes} --seed {args.seed} --output OUT"
    return _corpus(args, Target(bytes=args.bytes), "eval", command)


def _merge(args: argparse.Namespace) -> int:
    manifest = merge_corpus(Path(args.output), [Path(s) for s in args.sources], args.workers, not args.quiet)
    _print_summary(manifest, Path(args.output))
    return 0


def _run(args: argparse.Namespace) -> int:
    print(json.dumps(run_program(_read_text(args.file))))
    return 0


def _bits(args: argparse.Namespace) -> int:
    print(program_bits(_read_text(args.file), num_functions=args.num_functions))
    return 0


def _render(args: argparse.Namespace) -> int:
    program = parse_program(_read_text(args.file))
    if args.python:
        print(render_python(program), end="")
    else:
        print(render_program(program, run_lines(program) if args.values else None))
    return 0


def _sample(args: argparse.Namespace) -> int:
    config = _sampler_config(args.sampler_config)
    for index in range(args.num):
        program, _ = sample_program(random.Random(f"{args.seed}:{index}"), config)
        lines = run_lines(program) if args.values else None
        print(render_program(program, lines), end="\n\n" if index + 1 < args.num else "\n")
    return 0


def _guarded(handler: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except HANDLED as exc:
            return fail(str(exc))

    return run


def _corpus_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=42, help="Seed of the candidate stream (default 42).")
    parser.add_argument("--output", required=True, help="Dataset directory to write.")
    parser.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, help="Worker processes (default: all cores)."
    )
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="PATH",
        help="Dataset dir or .parquet/.jsonl/.csv whose sequences must not appear (repeatable).",
    )
    parser.add_argument("--sampler-config", metavar="YAML", help="Sampler settings overriding the official defaults.")
    parser.add_argument("--num-shards", type=int, default=1, help="Split block building over this many machines.")
    parser.add_argument("--shard-index", type=int, default=0, help="This machine's shard (0-based).")
    parser.add_argument("--keep-blocks", action="store_true", help="Keep the candidate blocks after finishing.")
    parser.add_argument(
        "--overwrite", action="store_true", help="Start afresh in an --output holding a corpus with other settings."
    )
    parser.add_argument("--quiet", action="store_true", help="No progress bar.")


def _export_chat(args: argparse.Namespace) -> int:
    from dsl.seqcoder import export_chat

    command = f"kt dsl export-chat --corpus {args.corpus} --output {args.output}"
    print(json.dumps(export_chat(Path(args.corpus), Path(args.output), command)))
    return 0


def _init_seqcoder(args: argparse.Namespace) -> int:
    from dsl.seqcoder_model import SeqCoderInit, save_seqcoder
    from kt_train.options import options_from

    try:
        print(json.dumps(save_seqcoder(Path(args.output), options_from(SeqCoderInit, args))))
    except FileExistsError as exc:
        return fail(str(exc))
    return 0


def _seqcoder_init_class() -> type:
    from dsl.seqcoder_model import SeqCoderInit

    return SeqCoderInit


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `kt dsl` and its subcommands."""
    dsl = subparsers.add_parser("dsl", help="KT sequence DSL: corpora, running, bits, rendering.")
    commands = dsl.add_subparsers(dest="dsl_command", metavar="SUBCOMMAND", required=True)

    generate = commands.add_parser("generate", help="Write a deduplicated corpus of N program-sequence pairs.")
    generate.add_argument("--num-pairs", type=int, required=True, help="Number of unique pairs.")
    _corpus_options(generate)
    generate.set_defaults(handler=_guarded(_generate))

    eval_set = commands.add_parser("eval-set", help="Write an evaluation set of at least B sequence bytes.")
    eval_set.add_argument("--bytes", type=int, default=1_000_000, help="Sequence bytes to reach (default 1 MB).")
    _corpus_options(eval_set)
    eval_set.set_defaults(handler=_guarded(_eval_set))

    merge = commands.add_parser("merge", help="Finish a corpus from the blocks of shard runs.")
    merge.add_argument("--output", required=True, help="Dataset directory to write.")
    merge.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="Worker processes for missing blocks.")
    merge.add_argument("--quiet", action="store_true", help="No progress bar.")
    merge.add_argument("sources", nargs="+", help="Output directories of the shard runs.")
    merge.set_defaults(handler=_guarded(_merge))

    export = commands.add_parser(
        "export-chat", help="Write a corpus as SeqCoder chats (prompt/completion) that stock `trl sft` trains on."
    )
    export.add_argument("--corpus", required=True, help="A `kt dsl generate` corpus directory.")
    export.add_argument("--output", required=True, help="Dataset directory to write.")
    export.set_defaults(handler=_guarded(_export_chat))

    init = commands.add_parser(
        "init-seqcoder", help="Write a SeqCoder made from scratch: a seeded small Llama and its DSL tokenizer."
    )
    init.add_argument("--output", required=True, help="Model folder to write (new or empty).")
    add_options_later(init, _seqcoder_init_class, config_file=False)
    init.set_defaults(handler=_guarded(_init_seqcoder))

    run = commands.add_parser("run", help="Run a program file; print its sequence as a JSON list.")
    run.add_argument("file", help="Program file ('-' for stdin).")
    run.set_defaults(handler=_guarded(_run))

    bits = commands.add_parser("bits", help="Print a program's bits under the uniform prior.")
    bits.add_argument("file", help="Program file ('-' for stdin).")
    bits.add_argument("--num-functions", type=int, default=24, help="Functions in the prior (default 24).")
    bits.set_defaults(handler=_guarded(_bits))

    render = commands.add_parser("render", help="Print a program canonically, with values, or as plain Python.")
    render.add_argument("file", help="Program file ('-' for stdin).")
    render.add_argument("--values", action="store_true", help="Append '# [values]' to every line.")
    render.add_argument("--python", action="store_true", help="Standalone Python that assigns `output`.")
    render.set_defaults(handler=_guarded(_render))

    sample = commands.add_parser("sample", help="Print a few sampled programs.")
    sample.add_argument("--seed", type=int, default=0, help="Seed.")
    sample.add_argument("--num", type=int, default=3, help="How many programs.")
    sample.add_argument("--values", action="store_true", help="Append '# [values]' to every line.")
    sample.add_argument("--sampler-config", metavar="YAML", help="Sampler settings overriding the defaults.")
    sample.set_defaults(handler=_guarded(_sample))
