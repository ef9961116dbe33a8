"""Training speed of the from-scratch SeqCoder sizes (`dsl.seqcoder_model.SIZES`) on CPU, to choose among them.

Each size is made by `init_seqcoder`; a step is forward, backward and an AdamW update (fp32) on a batch of
`--batch` rows of `--length` tokens cut from the SeqCoder chats of a `kt dsl generate` corpus (the chats'
median is ~210 tokens), every token in the loss. The first step is a warm-up and not timed; tokens/s is the timed
steps' tokens over their wall time, with `--threads` torch threads. Prints one JSON line per size.

    python bench/bench_seqcoder_sizes.py --threads 1 --steps 3        # ~1 min on one core
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
import torch

from dsl.seqcoder import to_seqcoder_chat
from dsl.seqcoder_model import SIZES, SeqCoderInit, init_seqcoder, num_parameters
from dsl.seqcoder_tokenizer import seqcoder_tokenizer
from kt_train.cli import main as kt_main


def corpus_tokens(num_pairs: int, seed: int) -> list[int]:
    """The token ids of every chat of a fresh corpus, one after the other."""
    tokenizer = seqcoder_tokenizer()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "corpus"
        args = ["dsl", "generate", "--num-pairs", str(num_pairs), "--seed", str(seed), "--output", str(out)]
        if kt_main([*args, "--workers", "1", "--quiet"]) != 0:
            raise RuntimeError("kt dsl generate failed")
        rows = pq.ParquetDataset(sorted((out / "data").glob("*.parquet"))).read().to_pylist()
    ids: list[int] = []
    for row in rows:
        chat = to_seqcoder_chat(row)
        ids += tokenizer.apply_chat_template(chat["prompt"] + chat["completion"], tokenize=True, return_dict=True)[
            "input_ids"
        ]
    return ids


def measure(size: str, ids: torch.Tensor, batch: int, length: int, steps: int) -> dict[str, float | int | str]:
    model, _ = init_seqcoder(SeqCoderInit(size=size))
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    blocks = ids[: (len(ids) // length) * length].view(-1, length)
    times, losses = [], []
    for step in range(steps + 1):
        rows = blocks[(step * batch) % len(blocks) :][:batch]
        start = time.perf_counter()
        loss = model(input_ids=rows, labels=rows).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step:
            times.append(time.perf_counter() - start)
        losses.append(round(loss.item(), 3))
    return {
        "size": size,
        "parameters": num_parameters(model),
        "tokens_per_step": batch * length,
        "seconds_per_step": round(sum(times) / len(times), 3),
        "tokens_per_second": round(batch * length * len(times) / sum(times)),
        "losses": losses,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES), help="Sizes to measure.")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1).")
    parser.add_argument("--steps", type=int, default=3, help="Timed steps per size (after one warm-up).")
    parser.add_argument("--batch", type=int, default=8, help="Rows per step.")
    parser.add_argument("--length", type=int, default=256, help="Tokens per row.")
    parser.add_argument("--pairs", type=int, default=300, help="Corpus pairs the rows are cut from.")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    ids = torch.tensor(corpus_tokens(args.pairs, seed=1))
    for size in args.sizes:
        result = measure(size, ids, args.batch, args.length, args.steps)
        print(json.dumps({**result, "threads": args.threads}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
