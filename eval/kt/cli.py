"""`kt eval kt` (score candidate programs on a KT set) and `kt eval kt-baselines` (Repeat, Upper Bound, Gzip, LMiC)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from kt_train.cli import fail


def _kt_command(args: argparse.Namespace) -> int:
    from eval.kt.dataset import DatasetError
    from eval.kt.evaluate import KTEvalConfig, run_kt_eval
    from kt_train.models import ModelUnavailableError

    try:
        config = KTEvalConfig(
            dataset=args.dataset,
            output=args.output,
            mode=args.mode,
            model=args.model,
            adapter=args.adapter,
            predictions=args.predictions,
            prompt=args.prompt,
            backend=args.backend,
            num_samples=args.num_samples,
            temperature=args.temperature,
            max_new_tokens=args.max_new_tokens,
            batch_size=args.batch_size,
            seed=args.seed,
            limit=args.limit,
            program_prior=args.program_prior,
            gzip_encoding=args.gzip_encoding,
            timeout_s=args.timeout,
            wandb_project=args.wandb_project,
        )
        if config.adapter is not None and not (Path(config.adapter) / "adapter_config.json").is_file():
            raise FileNotFoundError(f"no adapter_config.json in {config.adapter}")
        summary = run_kt_eval(config)
    except (DatasetError, FileNotFoundError, ValueError, ModelUnavailableError, ImportError) as exc:
        return fail(str(exc))
    metrics = summary["metrics"]
    keys = ("accuracy", "compression_rate", "precision", "executable", "num_items")
    print(json.dumps({k: metrics[k] for k in keys}, indent=1))
    print(f"report: {Path(args.output) / 'report.md'}")
    return 0


def _baselines_command(args: argparse.Namespace) -> int:
    from eval.kt.baselines import BaselineConfig, baselines_markdown, compute_baselines
    from eval.kt.dataset import DatasetError, load_kt_dataset

    try:
        dataset = load_kt_dataset(args.dataset, args.limit)
        config = BaselineConfig(args.gzip_encoding, args.chunk_length, args.lmic_items, args.lmic_model)
        result = compute_baselines(dataset, config)
    except (DatasetError, FileNotFoundError, ValueError) as exc:
        return fail(str(exc))
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    (output / "baselines.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    markdown = baselines_markdown(result)
    (output / "baselines.md").write_text(markdown, encoding="utf-8")
    print(markdown, end="")
    return 0


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", required=True, metavar="DIR", help="`kt dsl eval-set` or `kt kt-data` folder")
    parser.add_argument("--output", required=True, metavar="DIR")
    parser.add_argument("--limit", type=int, default=None, help="the first N sequences only")
    parser.add_argument("--gzip-encoding", choices=["bytes", "latin1-utf8"], default="bytes")


def register_kt(commands: Any) -> None:
    """Add `kt eval kt` and `kt eval kt-baselines` to the `eval` group."""
    kt = commands.add_parser("kt", help="KT: check and score candidate programs (generated or given)")
    _common(kt)
    kt.add_argument("--mode", choices=["dsl", "python"], required=True, help="candidates are DSL or Python programs")
    source = kt.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", help="generate with this model (embedded name, path or hub id)")
    source.add_argument("--predictions", metavar="FILE", help="JSONL rows `id`, `completion` to score")
    kt.add_argument("--adapter", metavar="DIR", help="a LoRA adapter of --model")
    kt.add_argument("--prompt", choices=["zero-shot", "cot"], default="zero-shot")
    kt.add_argument("--backend", choices=["transformers", "vllm"], default="transformers")
    kt.add_argument("--num-samples", type=int, default=1, help="completions per sequence; the best one is kept")
    kt.add_argument("--temperature", type=float, default=0.0, help="0: greedy")
    kt.add_argument("--max-new-tokens", type=int, default=512)
    kt.add_argument("--batch-size", type=int, default=8)
    kt.add_argument("--seed", type=int, default=42)
    kt.add_argument("--program-prior", choices=["uniform", "gzip"], default=None, help="default: dsl uniform, gzip")
    kt.add_argument("--timeout", type=float, default=5.0, help="seconds per Python program")
    kt.add_argument("--wandb-project", default=None, help="log the summary and plots to W&B (offline if logged out)")
    kt.set_defaults(handler=_kt_command)

    baselines = commands.add_parser("kt-baselines", help="KT: Repeat, Upper Bound, Gzip and LMiC on a set")
    _common(baselines)
    baselines.add_argument("--chunk-length", type=int, default=128, help="chunk length of the chunked Gzip figure")
    baselines.add_argument("--lmic-items", type=int, default=0, help="sequences to code with LMiC (slow; 0: skip)")
    baselines.add_argument("--lmic-model", default=None, help="LMiC's model (default: the embedded model)")
    baselines.set_defaults(handler=_baselines_command)


__all__ = ["register_kt"]
