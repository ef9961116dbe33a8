"""Can a from-scratch SeqCoder copy numbers from its prompt? The probe behind issue 20's diagnosis and its copy
curriculum (`dsl.copy_curriculum`).

Each row is a SeqCoder chat whose program is `set_list` of the prompt's numbers (5..`--max-length` numbers in
0..`--max-value`-1, or phase after phase with `--phases VALUES:MAX_LENGTH:STEPS ...`), so every number of the program
is a copy. A seeded model of `--size` trains on those rows, `--batch` a step (plain torch AdamW, linear warm-up,
completion-only loss), and every 100 steps the script prints the mean loss of the number tokens over those steps:
chance is ln(values), copying drives it to 0.

    python bench/bench_copy_probe.py --size tiny --lr 1e-3 --max-value 10 --max-length 8 --steps 600  # ~1 min
    python bench/bench_copy_probe.py --size tiny --lr 1e-3 --steps 1500                             # 0..255: ~4 min
    python bench/bench_copy_probe.py --size tiny --lr 1e-3 --phases 10:8:300 256:8:500 256:30:700   # ~3 min
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import torch

from dsl.copy_curriculum import CopyPhase, copy_rows
from dsl.seqcoder_model import SIZES, SeqCoderInit, init_seqcoder


def encode(values: list[int], program: str, tokenizer, separator: str) -> tuple[list[int], list[int]]:
    """Token ids and labels (-100 on the prompt) of one copy chat."""
    prompt = [{"role": "user", "content": separator.join(map(str, values))}]
    head = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)
    full = tokenizer.apply_chat_template([*prompt, {"role": "assistant", "content": program}], tokenize=False)
    ids = tokenizer(full, add_special_tokens=False)["input_ids"]
    start = len(tokenizer(head, add_special_tokens=False)["input_ids"])
    return ids, [-100] * start + ids[start:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="tiny", choices=list(SIZES))
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--max-value", type=int, default=256)
    parser.add_argument("--max-length", type=int, default=30)
    parser.add_argument(
        "--phases",
        nargs="+",
        default=None,
        help="VALUES:MAX_LENGTH:STEPS phase after phase (then --steps is their sum)",
    )
    parser.add_argument("--separator", default=" ", help="between the prompt's numbers (the SeqCoder prompt: ' ')")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    specs = args.phases or [f"{args.max_value}:{args.max_length}:{args.steps}"]
    phases = [CopyPhase.parse(spec) for spec in specs]  # ROWS read as steps here, then made rows
    phases = [CopyPhase(p.values, p.max_length, p.rows * args.batch) for p in phases]
    args.steps = sum(p.rows for p in phases) // args.batch
    values_at = [p.values for p in phases for _ in range(p.rows // args.batch)]
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    model, tokenizer = init_seqcoder(SeqCoderInit(size=args.size, seed=args.seed))
    rows = iter(copy_rows(phases, args.seed))
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    warmup = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / max(args.warmup, 1)))
    is_number = torch.tensor([tokenizer.convert_ids_to_tokens(i).isdigit() for i in range(len(tokenizer))])
    number_losses: list[float] = []
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        batch = [next(rows) for _ in range(args.batch)]
        rows_ids = [encode(row["sequence"], row["program"], tokenizer, args.separator) for row in batch]
        width = max(len(ids) for ids, _ in rows_ids)
        ids = torch.tensor([i + [tokenizer.pad_token_id] * (width - len(i)) for i, _ in rows_ids])
        labels = torch.tensor([lab + [-100] * (width - len(lab)) for _, lab in rows_ids])
        mask = (torch.arange(width)[None] < torch.tensor([len(i) for i, _ in rows_ids])[:, None]).long()
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
            print(
                json.dumps(
                    {
                        "size": args.size,
                        "lr": args.lr,
                        "values": values_at[step - 1],
                        "step": step,
                        "number_loss": round(sum(recent) / len(recent), 3),
                        "chance": round(math.log(values_at[step - 1]), 3),
                        "seconds": round(time.perf_counter() - start),
                    }
                ),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
