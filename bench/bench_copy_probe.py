"""Can a from-scratch SeqCoder copy numbers from its prompt? The probe behind issue 20's diagnosis.

Each row is a SeqCoder chat whose program is `set_list` of the prompt's numbers (`--min-length`..`--max-length`
numbers in 0..`--max-value`-1), so every number of the program is a copy. A seeded model of `--size` trains on fresh
rows, `--batch` a step (plain torch AdamW, linear warm-up, completion-only loss), and every 100 steps the script
prints the mean loss of the number tokens over those steps: chance is ln(max_value), copying drives it to 0.

    python bench/bench_copy_probe.py --size tiny --max-value 10 --max-length 8 --steps 600    # ~1 min
    python bench/bench_copy_probe.py --size small --max-value 10 --max-length 8 --steps 600   # ~3 min
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time

import torch

from dsl.seqcoder_model import SIZES, SeqCoderInit, init_seqcoder


def copy_row(rng: random.Random, tokenizer, args: argparse.Namespace) -> tuple[list[int], list[int]]:
    """Token ids and labels (-100 on the prompt) of one copy chat."""
    values = [rng.randrange(args.max_value) for _ in range(rng.randint(args.min_length, args.max_length))]
    prompt = [{"role": "user", "content": args.separator.join(map(str, values))}]
    program = f"sequence_1 = set_list([{', '.join(map(str, values))}])\noutput = sequence_1"
    head = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)
    full = tokenizer.apply_chat_template([*prompt, {"role": "assistant", "content": program}], tokenize=False)
    ids = tokenizer(full, add_special_tokens=False)["input_ids"]
    start = len(tokenizer(head, add_special_tokens=False)["input_ids"])
    return ids, [-100] * start + ids[start:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="tiny", choices=list(SIZES))
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--max-value", type=int, default=256)
    parser.add_argument("--min-length", type=int, default=5)
    parser.add_argument("--max-length", type=int, default=30)
    parser.add_argument("--separator", default=" ", help="between the prompt's numbers (the SeqCoder prompt: ' ')")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    model, tokenizer = init_seqcoder(SeqCoderInit(size=args.size, seed=args.seed))
    rng = random.Random(args.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    warmup = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / max(args.warmup, 1)))
    is_number = torch.tensor([tokenizer.convert_ids_to_tokens(i).isdigit() for i in range(len(tokenizer))])
    number_losses: list[float] = []
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        rows = [copy_row(rng, tokenizer, args) for _ in range(args.batch)]
        width = max(len(ids) for ids, _ in rows)
        ids = torch.tensor([i + [tokenizer.pad_token_id] * (width - len(i)) for i, _ in rows])
        labels = torch.tensor([lab + [-100] * (width - len(lab)) for _, lab in rows])
        mask = (torch.arange(width)[None] < torch.tensor([len(i) for i, _ in rows])[:, None]).long()
        logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1]
        targets = labels[:, 1:]
        losses = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="none", ignore_index=-100
        ).view_as(targets)
        scored = targets != -100
        losses[scored].mean().backward()
        optimizer.step()
        optimizer.zero_grad()
        warmup.step()
        number_losses.append(float(losses.detach()[scored & is_number[targets.clamp(min=0)]].mean()))
        if step % 100 == 0 or step == args.steps:
            recent = number_losses[-100:]
            print(json.dumps({
                "size": args.size, "lr": args.lr, "max_value": args.max_value, "step": step,
                "number_loss": round(sum(recent) / len(recent), 3), "chance": round(math.log(args.max_value), 3),
                "seconds": round(time.perf_counter() - start),
            }), flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
