"""Torch threads and micro-batches on CPU: one SFT step's work and greedy generation with 1 and 2 threads.

The embedded SmolLM2-135M-Instruct with LoRA (r 16, alpha 32, all linear layers, fp32) in one process; 8 SeqCoder
rows of a `kt dsl generate` corpus (seeded draw, rows of at most 1,024 tokens in the training chat template) are
one optimizer step's work: forward and backward of the 8 rows at micro-batches of 1 (no padding, no mask) and of 2
(padded, with the mask); generation: 4 SeqCoder prompts, 64 new tokens each, greedy, one left-padded batch. Each
measurement alternates the thread counts within a repeat (`torch.set_num_threads`). `--busy` runs one CPU-bound
process (a pure-Python loop) beside the measurements, as another user's job on a shared machine would. Prints one
JSON line (seconds per measurement, every repeat and the median, the load average at each) for
docs/benchmarks.md ("Torch threads on CPU").

    kt dsl generate --num-pairs 10000 --seed 42 --output /tmp/kt10k
    python bench/bench_cpu_threads.py --corpus /tmp/kt10k --repeats 3                 # ~6 min on 2 cores
    python bench/bench_cpu_threads.py --corpus /tmp/kt10k --repeats 2 --busy --measure mb1,gen
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np
import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, help="a `kt dsl generate` corpus folder")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--measure", default="mb1,mb2,gen", help="of mb1 (micro-batch 1), mb2, gen")
    parser.add_argument("--busy", action="store_true", help="one CPU-bound process runs beside the measurements")
    args = parser.parse_args()

    from peft import LoraConfig, get_peft_model

    from dsl.seqcoder import seqcoder_prompt, to_seqcoder_chat
    from kt_train.chat_templates import CHATML_TEMPLATE
    from kt_train.models import DEFAULT_MODEL, get_model, get_tokenizer
    from kt_train.training.data import load_training_dataset

    tokenizer = get_tokenizer(DEFAULT_MODEL)
    tokenizer.chat_template = CHATML_TEMPLATE  # the training template: no default system prompt
    corpus = load_training_dataset(args.corpus)
    drawn = [int(i) for i in np.random.default_rng(42).choice(len(corpus), 64, replace=False)]
    rows: list[list[int]] = []
    for index in drawn:
        chat = to_seqcoder_chat(corpus[index])
        ids = tokenizer.apply_chat_template(chat["prompt"] + chat["completion"], tokenize=True)
        ids = ids["input_ids"] if hasattr(ids, "keys") else ids
        if len(ids) <= 1024:
            rows.append(list(ids))
    rows = rows[:8]
    prompts = [
        tokenizer.apply_chat_template(
            [{"role": "user", "content": seqcoder_prompt(corpus[i]["sequence"])}],
            tokenize=False,
            add_generation_prompt=True,
        )
        for i in drawn[:4]
    ]
    config = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.05, target_modules="all-linear")
    model = get_peft_model(get_model(DEFAULT_MODEL, dtype="float32"), config)
    model.train()

    def step(micro_batch: int) -> None:
        for start in range(0, len(rows), micro_batch):
            batch = rows[start : start + micro_batch]
            width = max(map(len, batch))
            ids = torch.full((len(batch), width), tokenizer.pad_token_id)
            mask = torch.zeros_like(ids)
            for j, row in enumerate(batch):
                ids[j, : len(row)], mask[j, : len(row)] = torch.tensor(row), 1
            labels = ids.masked_fill(mask == 0, -100)
            model(input_ids=ids, attention_mask=mask if micro_batch > 1 else None, labels=labels).loss.backward()
        model.zero_grad(set_to_none=True)

    def generate() -> None:
        model.eval()
        enc = tokenizer(prompts, return_tensors="pt", padding=True, padding_side="left", add_special_tokens=False)
        with torch.inference_mode():
            model.generate(
                **enc, max_new_tokens=64, min_new_tokens=64, do_sample=False, pad_token_id=tokenizer.pad_token_id
            )
        model.train()

    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy else None
    runs: dict[str, list[dict[str, Any]]] = {}
    try:
        for _ in range(args.repeats):
            for threads in (1, 2):
                torch.set_num_threads(threads)
                for name in args.measure.split(","):
                    start = time.perf_counter()
                    if name == "gen":
                        generate()
                    else:
                        step(int(name.removeprefix("mb")))
                    seconds = round(time.perf_counter() - start, 2)
                    runs.setdefault(f"{name}, {threads} threads", []).append(
                        {"s": seconds, "load": round(os.getloadavg()[0], 2)}
                    )
                    print(name, threads, seconds, file=sys.stderr, flush=True)
    finally:
        if busy is not None:
            busy.kill()
    summary = {
        key: {"median_s": statistics.median(r["s"] for r in value), "runs": value} for key, value in runs.items()
    }
    print(json.dumps({"rows_tokens": [len(r) for r in rows], "busy": args.busy, "results": summary}))


if __name__ == "__main__":
    main()
