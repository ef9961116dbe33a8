"""LoRA SFT throughput on CPU: kt-train's settings against TRL's defaults, same data, model, LoRA and loss.

Both methods fine-tune the embedded SmolLM2-135M-Instruct (fp32) with LoRA (r 8, alpha 16, all linear layers,
dropout 0) on the same 64 conversational prompt/completion rows (synthetic execution-trace chats of 100 to 700
tokens, loss on the completion only), 8 rows per optimizer step in the same order, max_length 1024, the same
learning rate and seed. Each run is a subprocess of its own (peak RSS = its VmHWM); runs alternate A, B, A, B, ...
The first optimizer step is a warm-up and not timed; tokens/s counts the real (non-padding) tokens of the rows of
the timed steps, the same rows for both methods. Writes the `sft` section of docs/benchmarks.md.

    python bench/bench_sft.py                        # 3 repeats of 1 + 4 steps per method (~13 min on 2 cores)
    python bench/bench_sft.py --steps 2 --repeats 1 --no-doc
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchutil import DOC, fmt_rate, git_revision, invocation, load_average, machine_line, now, update_doc

KEY = "sft"
TARGET_SPEEDUP = 2.0
MODEL = "smollm2-135m-instruct"
ROWS = 64
MIN_TOKENS, MAX_TOKENS = 100, 700
MAX_LENGTH = 1024
ROWS_PER_STEP = 8
LEARNING_RATE = 1e-4
SEED = 42
LORA = {"lora_r": 8, "lora_alpha": 16, "lora_dropout": 0.0, "lora_target_modules": ["all-linear"]}
METHOD_A, METHOD_B = "TRL defaults", "kt-train"


# ----- data


def _rle_chat(rng: random.Random, runs: int) -> list[dict[str, str]]:
    """Run-length encoding of a random string of `runs` runs, narrated run by run."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    pieces, previous = [], ""
    for _ in range(runs):
        char = rng.choice([c for c in letters if c != previous])
        pieces.append((char, rng.randint(1, 6)))
        previous = char
    text = "".join(c * n for c, n in pieces)
    steps = [
        f"Run {i}: '{c}' repeated {n} time{'s' if n > 1 else ''} (characters {sum(k for _, k in pieces[: i - 1])} to "
        f"{sum(k for _, k in pieces[:i]) - 1}) -> {c}{n}"
        for i, (c, n) in enumerate(pieces, 1)
    ]
    answer = "".join(f"{c}{n}" for c, n in pieces)
    user = (
        f"Run-length encode the string `{text}`. Go through it run by run, say where each run starts and ends, "
        "then give the encoded string."
    )
    assistant = "\n".join([*steps, f"Encoded: {answer}"])
    return [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]


def _sum_chat(rng: random.Random, items: int) -> list[dict[str, str]]:
    """A running total of a random list of `items` integers, narrated item by item."""
    values = [rng.randint(-500, 999) for _ in range(items)]
    total, steps = 0, []
    for i, v in enumerate(values, 1):
        steps.append(f"Step {i}: {total} + ({v}) = {total + v}")
        total += v
    user = (
        f"Here is a list of integers: {values}. Add them up from left to right, showing the running total after "
        "every item, and give the final sum."
    )
    assistant = "\n".join([*steps, f"Final sum: {total}"])
    return [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]


def build_rows(tokenizer: Any, rows: int = ROWS, seed: int = SEED) -> list[dict[str, Any]]:
    """`rows` prompt/completion chats whose template-rendered lengths spread evenly over MIN_TOKENS..MAX_TOKENS."""
    from kt_train.training.data import chat_token_count

    rng = random.Random(seed)
    targets = [MIN_TOKENS + (MAX_TOKENS - MIN_TOKENS) * (i + 0.5) / rows for i in range(rows)]
    rng.shuffle(targets)
    out = []
    for i, target in enumerate(targets):
        make = _rle_chat if i % 2 == 0 else _sum_chat
        size = 1
        while True:
            chat = make(random.Random(seed * 1000 + i), size)
            row = {"prompt": chat[:-1], "completion": chat[-1:]}
            if chat_token_count(row, tokenizer) >= target or size > 500:
                break
            size += 1
        out.append(row)
    return out


# ----- one training run (in a subprocess)


def _vm_hwm() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


class _CountingCollator:
    """Wraps the trainer's collator: real tokens, padded slots, loss tokens and row identities per micro-batch."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.batches: list[dict[str, Any]] = []

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        out = self.inner(examples)
        if "attention_mask" in out:
            real = int(out["attention_mask"].sum())
        else:  # padding-free: one row of real tokens (no pad_to_multiple_of)
            real = int(out["position_ids"].numel())
        self.batches.append(
            {
                "tokens": real,
                "slots": int(out["input_ids"].numel()),
                "loss_tokens": int((out["labels"][..., 1:] != -100).sum()),
                "rows": [zlib.crc32(bytes(str(list(e["input_ids"])), "ascii")) for e in examples],
            }
        )
        return out


def train_run(method: str, data_file: str, steps: int, micro_batch: int, padding_free: bool) -> dict[str, Any]:
    """Train `steps` optimizer steps with `method`; per-step wall times, tokens, losses and peak RSS."""
    import torch
    import trl
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback, set_seed

    from kt_train import configs
    from kt_train.models import resolve_model_path
    from kt_train.training.data import drop_longer_than
    from kt_train.training.model import get_training_model, get_training_tokenizer

    path = resolve_model_path(MODEL)
    dataset = Dataset.from_list(json.loads(Path(data_file).read_text()))
    model_args = trl.ModelConfig(model_name_or_path=path, dtype="float32", use_peft=True, **LORA)
    peft_config = trl.get_peft_config(model_args)
    out_dir = tempfile.mkdtemp(prefix="bench-sft-")
    common = {
        "output_dir": out_dir,
        "max_steps": steps,
        "learning_rate": LEARNING_RATE,
        "logging_steps": 1,
        "report_to": "none",
        "save_strategy": "no",
        "disable_tqdm": True,
        "seed": SEED,
    }
    if method == METHOD_A:
        # TRL's defaults for everything that touches speed: gradient checkpointing on, padded batches of 8, no
        # packing, max_length 1024. bf16 must be off (no GPU), use_cpu on.
        args = trl.SFTConfig(**common, use_cpu=True, bf16=False)
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    else:
        accumulation = ROWS_PER_STEP // micro_batch
        args = configs.SFTConfig(
            **common,
            per_device_train_batch_size=micro_batch,
            gradient_accumulation_steps=accumulation,
            padding_free=padding_free,
            # padding-free does not truncate: rows over max_length are dropped below instead
            max_length=None if padding_free else MAX_LENGTH,
        )
        tokenizer = get_training_tokenizer(model_args, args)
        dataset, dropped = drop_longer_than(dataset, tokenizer, MAX_LENGTH)
        assert dropped == 0, dropped
        model = get_training_model(model_args, args)
    set_seed(SEED)  # the LoRA weights start the same in both methods
    trainer = trl.SFTTrainer(
        model=model, args=args, train_dataset=dataset, processing_class=tokenizer, peft_config=peft_config
    )
    counter = _CountingCollator(trainer.data_collator)
    trainer.data_collator = counter
    ends: list[float] = []

    class _Timer(TrainerCallback):
        def on_step_end(self, *_: Any, **__: Any) -> None:
            ends.append(time.perf_counter())

    trainer.add_callback(_Timer())
    start = time.perf_counter()
    trainer.train()
    losses = [log["loss"] for log in trainer.state.log_history if "loss" in log]
    accumulation = args.gradient_accumulation_steps
    per_step = [counter.batches[i * accumulation : (i + 1) * accumulation] for i in range(steps)]
    return {
        "method": method,
        "step_s": [b - a for a, b in zip([start, *ends[:-1]], ends)],
        "timed_s": ends[-1] - ends[0],
        "tokens": [sum(b["tokens"] for b in s) for s in per_step],
        "slots": [sum(b["slots"] for b in s) for s in per_step],
        "loss_tokens": [sum(b["loss_tokens"] for b in s) for s in per_step],
        "rows": [sorted(r for b in s for r in b["rows"]) for s in per_step],
        "losses": losses,
        "peak_rss": _vm_hwm(),
        "threads": torch.get_num_threads(),
        "gradient_checkpointing": bool(args.gradient_checkpointing),
        "micro_batch": args.per_device_train_batch_size,
        "accumulation": accumulation,
        "padding_free": bool(args.padding_free),
    }


# ----- the parent: alternate runs, report


@dataclass
class Run:
    method: str
    repeat: int
    result: dict[str, Any]

    @property
    def timed_tokens(self) -> int:
        return sum(self.result["tokens"][1:])

    @property
    def rate(self) -> float:
        return self.timed_tokens / self.result["timed_s"]

    @property
    def step_s(self) -> float:
        return self.result["timed_s"] / (len(self.result["tokens"]) - 1)


def _spawn(method: str, data_file: str, args: argparse.Namespace, repeat: int) -> Run:
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        method,
        "--data-file",
        data_file,
        "--steps",
        str(args.steps + 1),
        "--micro-batch",
        str(args.micro_batch),
    ]
    if args.padding_free:
        cmd.append("--padding-free")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{method} run failed:\n{done.stderr[-4000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    run = Run(method, repeat, result)
    print(
        f"{method}, repeat {repeat}: {run.step_s:.1f} s/step, {run.rate:,.0f} tokens/s, "
        f"loss {result['losses'][-1]:.4f}, peak RSS {result['peak_rss'] / 2**20:.0f} MiB",
        file=sys.stderr,
        flush=True,
    )
    return run


def loss_check(data_file: str, micro_batch: int, padding_free: bool) -> dict[str, Any]:
    """Per-row completion losses of the first 8 rows, same weights, in A's batch layout (padded 8) and in B's."""
    import torch
    import trl
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

    from kt_train.models import resolve_model_path

    path = resolve_model_path(MODEL)
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    rows = json.loads(Path(data_file).read_text())[:ROWS_PER_STEP]
    examples = []
    for row in rows:
        prompt = tokenizer.apply_chat_template(row["prompt"], tokenize=True, add_generation_prompt=True)
        full = tokenizer.apply_chat_template(row["prompt"] + row["completion"], tokenize=True)
        prompt, full = (x["input_ids"] if hasattr(x, "keys") else x for x in (prompt, full))
        assert full[: len(prompt)] == prompt
        examples.append({"input_ids": full, "completion_mask": [0] * len(prompt) + [1] * (len(full) - len(prompt))})
    del trl

    def per_row(collator: Any, batch_size: int) -> list[float]:
        losses = []
        for start in range(0, len(examples), batch_size):
            chunk = examples[start : start + batch_size]
            batch = collator(chunk)
            with torch.no_grad():
                logits = model(**{k: v for k, v in batch.items() if k != "labels"}, use_cache=False).logits
            nll = torch.nn.functional.cross_entropy(
                logits[:, :-1].flatten(0, 1), batch["labels"][:, 1:].flatten(), reduction="none"
            ).view(logits.shape[0], -1)
            mask = (batch["labels"][:, 1:] != -100).float()
            if "position_ids" in batch and "attention_mask" not in batch:  # one flattened row: split it back
                ends = torch.tensor([len(e["input_ids"]) for e in chunk]).cumsum(0).tolist()
                for lo, hi in zip([0, *ends[:-1]], ends):
                    losses.append(float((nll[0, lo : hi - 1] * mask[0, lo : hi - 1]).sum() / mask[0, lo : hi - 1].sum()))
            else:
                losses.extend((nll * mask).sum(1) / mask.sum(1))
                losses = [float(x) for x in losses]
        return losses

    pad = tokenizer.pad_token_id
    padded = per_row(DataCollatorForLanguageModeling(pad_token_id=pad, completion_only_loss=True), ROWS_PER_STEP)
    ours = per_row(
        DataCollatorForLanguageModeling(pad_token_id=pad, completion_only_loss=True, padding_free=padding_free),
        micro_batch,
    )
    return {"padded": padded, "ours": ours, "max_abs_diff": max(abs(a - b) for a, b in zip(padded, ours))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=4, help="timed optimizer steps per run (after 1 warm-up step)")
    parser.add_argument("--repeats", type=int, default=3, help="alternated runs of each method")
    parser.add_argument("--micro-batch", type=int, default=1, help="kt-train: rows per micro-batch (8 / accumulation)")
    parser.add_argument("--padding-free", action="store_true", help="kt-train: TRL's padding_free batches")
    parser.add_argument("--no-doc", action="store_true", help="print the section instead of writing the doc")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--data-file", help=argparse.SUPPRESS)
    parser.add_argument("--loss-check", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        result = train_run(args.worker, args.data_file, args.steps, args.micro_batch, args.padding_free)
        print(json.dumps(result))
        return 0
    if args.loss_check:
        print(json.dumps(loss_check(args.data_file, args.micro_batch, args.padding_free)))
        return 0
    raise SystemExit("todo")


if __name__ == "__main__":
    sys.exit(main())
