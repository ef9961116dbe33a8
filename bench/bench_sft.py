"""LoRA SFT throughput on CPU: kt-train's settings against TRL's defaults, same data, model, LoRA and loss.

Both methods fine-tune the embedded SmolLM2-135M-Instruct (fp32) with LoRA (r 8, alpha 16, all linear layers,
dropout 0) on the same 64 conversational prompt/completion rows (synthetic execution-trace chats of 100 to 700
tokens, loss on the completion only), 8 rows per optimizer step in the same order, max_length 1024, the same
learning rate and seed. Method A is trl.SFTConfig with TRL's defaults (activation checkpointing on, padded batches
of 8); method B is kt_train.configs.SFTConfig's defaults (checkpointing off) with micro-batches of one row and 8
accumulation steps (no padding at all). Each run is a subprocess of its own (peak RSS: its VmHWM); runs alternate
A, B, A, B, ... The first optimizer step is a warm-up and not timed; tokens/s counts the real (non-padding) tokens
of the rows of the timed steps, the same rows for both methods (checked). Before the runs, a subprocess compares
the per-row completion losses of the same weights in both batch layouts. Writes the `sft` section of
docs/benchmarks.md.

    python bench/bench_sft.py                        # 3 repeats of 1 + 2 steps per method (~12 min on 2 cores)
    python bench/bench_sft.py --steps 1 --repeats 1 --no-doc
    python bench/bench_sft.py --micro-batch 8 --padding-free --repeats 1 --no-doc   # B with TRL's padding_free
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchutil import (
    fmt_bytes,
    fmt_rate,
    invocation,
    load_average,
    publish,
    run_header,
)

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
NOT_USED = (
    "- Not used: TRL's `padding_free=True` gives the same losses (above), but on CPU the sdpa attention of the one "
    "flattened row gets a dense block-diagonal mask over all ~3,400 tokens of the step, so attention computes and "
    "stores (for the backward) the whole square: in a trial while writing this benchmark (`--micro-batch 8 "
    "--padding-free`), 47-50 s per step and 12.8 GiB peak RSS, against 22 s and 3.5 GiB for micro-batches of one "
    "row. `train_sampling_strategy='group_by_length'` would change which rows share a step, and micro-batches of "
    "one row leave no padding to remove."
)
WHERE_TIME_GOES = (
    "- Where kt-train's time goes (torch profiler, one 430-token row, measured while writing this benchmark): "
    "TRL's fused LM head (log-probabilities, entropy and top-1 over vocabulary tiles) takes about 32% of the CPU "
    "time, its matrix products included, since on CPU it scores every position, prompt included, and recomputes "
    "the logits in the backward; attention 14%; most of the rest is the layers' matrix products. "
    "glibc's default malloc maps and unmaps the large activation buffers every step (5.5M minor page faults in a "
    "trial run); `kt_train.training.memory.keep_freed_memory` (mallopt, called by `run_sft` on CPU) keeps them "
    "(0.85M faults)."
)


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
    steps, position = [], 0
    for i, (c, n) in enumerate(pieces, 1):
        times = "time" if n == 1 else "times"
        steps.append(f"Run {i}: '{c}' repeated {n} {times} (characters {position} to {position + n - 1}) -> {c}{n}")
        position += n
    user = (
        f"Run-length encode the string `{text}`. Go through it run by run, say where each run starts and ends, "
        "then give the encoded string."
    )
    assistant = "\n".join([*steps, "Encoded: " + "".join(f"{c}{n}" for c, n in pieces)])
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
    """`rows` prompt/completion chats (alternately run-length encoding and running sums, narrated step by step)
    whose chat-template lengths spread evenly over MIN_TOKENS..MAX_TOKENS, in a seeded random order."""
    from kt_train.training.data import chat_token_count

    targets = [MIN_TOKENS + (MAX_TOKENS - MIN_TOKENS) * (i + 0.5) / rows for i in range(rows)]
    random.Random(seed).shuffle(targets)
    out = []
    for i, target in enumerate(targets):
        make = _rle_chat if i % 2 == 0 else _sum_chat
        size = 1
        while True:  # the smallest chat of this kind that reaches the target length
            chat = make(random.Random(seed * 1000 + i), size)
            row = {"prompt": chat[:-1], "completion": chat[-1:]}
            if chat_token_count(row, tokenizer) >= target:
                break
            size += 1
        out.append(row)
    return out


# ----- one training run (in a subprocess)


def _vm_hwm() -> int:
    """Peak resident set size of this process."""
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
        # padding-free: one row of real tokens only (no pad_to_multiple_of)
        real = int(out["attention_mask"].sum()) if "attention_mask" in out else int(out["position_ids"].numel())
        self.batches.append(
            {
                "tokens": real,
                "slots": int(out["input_ids"].numel()),
                "loss_tokens": int((out["labels"][..., 1:] != -100).sum()),
                "rows": [zlib.crc32(str(list(e["input_ids"])).encode()) for e in examples],
            }
        )
        return out


def train_run(method: str, data_file: str, steps: int, micro_batch: int, padding_free: bool) -> dict[str, Any]:
    """Train `steps` optimizer steps with `method`: per-step wall times, tokens, rows, losses; peak RSS."""
    import torch
    import trl
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback, set_seed

    from kt_train import configs
    from kt_train.models import resolve_model_path
    from kt_train.training.data import drop_longer_than
    from kt_train.training.memory import keep_freed_memory
    from kt_train.training.model import get_training_model, get_training_tokenizer
    from kt_train.training.sft import prepare_dataset

    path = resolve_model_path(MODEL)
    dataset = Dataset.from_list(json.loads(Path(data_file).read_text()))
    model_args = trl.ModelConfig(model_name_or_path=path, dtype="float32", use_peft=True, **LORA)
    common = {
        "output_dir": tempfile.mkdtemp(prefix="bench-sft-"),
        "max_steps": steps,
        "learning_rate": LEARNING_RATE,
        "logging_steps": 1,
        "report_to": "none",
        "save_strategy": "no",
        "disable_tqdm": True,
        "seed": SEED,
    }
    if method == METHOD_A:
        # TRL's defaults for everything that touches speed (activation checkpointing on, padded batches of 8, no
        # packing or padding-free, max_length 1024); bf16 must be off without a GPU.
        args = trl.SFTConfig(**common, use_cpu=True, bf16=False)
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    else:
        # kt-train's defaults (activation checkpointing off), the same 8 rows per step in micro-batches
        args = configs.SFTConfig(
            **common,
            per_device_train_batch_size=micro_batch,
            gradient_accumulation_steps=ROWS_PER_STEP // micro_batch,
            padding_free=padding_free,
            max_length=None if padding_free else MAX_LENGTH,  # TRL: padding-free does not truncate
        )
        keep_freed_memory()  # as run_sft does on CPU
        tokenizer = get_training_tokenizer(model_args, args)
        if padding_free:  # what prepare_dataset does with max_length set: drop the longer rows (there are none)
            dataset, _ = drop_longer_than(dataset, tokenizer, MAX_LENGTH)
        dataset, _ = prepare_dataset(dataset, configs.DataArguments(), args, tokenizer)
        model = get_training_model(model_args, args)
    set_seed(SEED)  # the LoRA weights start the same in both methods
    trainer = trl.SFTTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=trl.get_peft_config(model_args),
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
    shutil.rmtree(args.output_dir, ignore_errors=True)  # empty: nothing is saved
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
        "losses": [log["loss"] for log in trainer.state.log_history if "loss" in log],
        "peak_rss": _vm_hwm(),
        "threads": torch.get_num_threads(),
        "activation_checkpointing": bool(args.gradient_checkpointing),
        "micro_batch": args.per_device_train_batch_size,
        "accumulation": accumulation,
        "padding_free": bool(args.padding_free),
    }


def loss_check(data_file: str, micro_batch: int) -> dict[str, Any]:
    """Completion-token losses of the first step's rows under the base weights, row by row, with TRL's own data
    preparation and collator: padded batches of 8 (A), micro-batches of `micro_batch` (B), and one padding-free row."""
    import torch
    import trl
    from datasets import Dataset
    from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

    from kt_train.models import resolve_model_path

    path = resolve_model_path(MODEL)
    rows = json.loads(Path(data_file).read_text())[:ROWS_PER_STEP]
    args = trl.SFTConfig(
        output_dir=tempfile.mkdtemp(prefix="bench-sft-"),
        use_cpu=True,
        bf16=False,
        report_to="none",
        model_init_kwargs={"dtype": torch.float32},
    )
    trainer = trl.SFTTrainer(model=path, args=args, train_dataset=Dataset.from_list(rows))
    shutil.rmtree(args.output_dir, ignore_errors=True)
    examples = [dict(trainer.train_dataset[i]) for i in range(len(rows))]
    model = trainer.model.eval()
    pad = trainer.processing_class.pad_token_id

    def row_losses(batch_size: int, padding_free: bool) -> list[float]:
        collator = DataCollatorForLanguageModeling(pad_token_id=pad, padding_free=padding_free)
        losses = []
        for start in range(0, len(examples), batch_size):
            chunk = examples[start : start + batch_size]
            batch = collator(chunk)
            inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "position_ids") if k in batch}
            with torch.no_grad():  # use_cache=False as in training: with a cache, packed rows are not detected
                logits = model(**inputs, use_cache=False).logits[:, :-1]
            labels = batch["labels"][:, 1:]
            nll = torch.nn.functional.cross_entropy(logits.transpose(1, 2), labels, reduction="none")
            mask = labels != -100
            if padding_free:  # split the one row back into the examples
                bounds = torch.tensor([0] + [len(e["input_ids"]) for e in chunk]).cumsum(0).tolist()
                spans = [(0, lo, hi) for lo, hi in itertools.pairwise(bounds)]
            else:
                spans = [(i, 0, labels.shape[1]) for i in range(len(chunk))]
            for i, lo, hi in spans:
                losses.append(float(nll[i, lo:hi][mask[i, lo:hi]].mean()))
        return losses

    padded = row_losses(ROWS_PER_STEP, False)
    ours = row_losses(micro_batch, False)
    flat = row_losses(ROWS_PER_STEP, True)
    return {
        "padded": padded,
        "micro_batch": micro_batch,
        "ours_diff": max(abs(a - b) for a, b in zip(padded, ours)),
        "padding_free_diff": max(abs(a - b) for a, b in zip(padded, flat)),
    }


# ----- the parent: alternate runs, report


@dataclass
class Run:
    """One subprocess training run."""

    method: str
    repeat: int
    result: dict[str, Any]

    @property
    def timed_tokens(self) -> int:
        return sum(self.result["tokens"][1:])

    @property
    def timed_slots(self) -> int:
        return sum(self.result["slots"][1:])

    @property
    def timed_steps(self) -> int:
        return len(self.result["tokens"]) - 1

    @property
    def rate(self) -> float:
        return self.timed_tokens / self.result["timed_s"]

    @property
    def step_s(self) -> float:
        return self.result["timed_s"] / self.timed_steps


def _child(args: list[str]) -> dict[str, Any]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args[:2])} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_method(method: str, data_file: str, args: argparse.Namespace, repeat: int) -> Run:
    worker = ["--worker", method, "--data-file", data_file, "--steps", str(args.steps + 1)]
    worker += ["--micro-batch", str(args.micro_batch)] + (["--padding-free"] if args.padding_free else [])
    run = Run(method, repeat, _child(worker))
    print(
        f"{method}, repeat {repeat}: {run.step_s:.1f} s/step, {run.rate:,.1f} tokens/s, "
        f"loss {run.result['losses'][-1]:.4f}, peak RSS {fmt_bytes(run.result['peak_rss'])}",
        file=sys.stderr,
        flush=True,
    )
    return run


def measure(data_file: str, args: argparse.Namespace) -> list[Run]:
    runs = []
    for repeat in range(1, args.repeats + 1):
        for method in (METHOD_A, METHOD_B):
            runs.append(run_method(method, data_file, args, repeat))
    first = runs[0].result
    for run in runs[1:]:
        if run.result["rows"] != first["rows"] or run.result["tokens"] != first["tokens"]:
            raise SystemExit(f"{run.method}, repeat {run.repeat} saw other rows than {runs[0].method}, repeat 1")
    return runs


def _median(runs: list[Run], method: str, value: Any) -> float:
    return statistics.median(value(r) for r in runs if r.method == method)


def report(
    runs: list[Run], check: dict[str, Any], lengths: list[int], command: str, args: argparse.Namespace, load: float
) -> str:
    rate_a, rate_b = _median(runs, METHOD_A, lambda r: r.rate), _median(runs, METHOD_B, lambda r: r.rate)
    rss_a = _median(runs, METHOD_A, lambda r: r.result["peak_rss"])
    rss_b = _median(runs, METHOD_B, lambda r: r.result["peak_rss"])
    speedup = rate_b / rate_a
    a, b = (next(r.result for r in runs if r.method == m) for m in (METHOD_A, METHOD_B))
    pairs = [(x, y) for x, y in zip(runs[::2], runs[1::2])]
    first_diff = max(abs(x.result["losses"][0] - y.result["losses"][0]) for x, y in pairs)
    all_diff = max(abs(p - q) for x, y in pairs for p, q in zip(x.result["losses"], y.result["losses"]))
    steps = len(a["tokens"])
    b_batches = f"{b['micro_batch']} rows per micro-batch x {b['accumulation']} accumulation steps" + (
        ", TRL's `padding_free=True` (`max_length=None`, no row is over 1024)" if b["padding_free"] else ""
    )
    lines = [
        *run_header(command),
        "",
        "| method | repeat | timed steps | real tokens | padded slots | s/step | tokens/s | last loss | peak RSS |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {r.method} | {r.repeat} | {r.timed_steps} | {r.timed_tokens:,} | {r.timed_slots:,} | {r.step_s:.1f} | "
            f"{r.rate:,.1f} | {r.result['losses'][-1]:.4f} | {fmt_bytes(r.result['peak_rss'])} |"
            for r in runs
        ),
        "",
        "| target | measured | met |",
        "|---|---:|---|",
        f"| speed-up >= {TARGET_SPEEDUP:.0f}x | {speedup:.2f}x ({fmt_rate(rate_b)} vs {fmt_rate(rate_a)} tokens/s, "
        f"medians) | {'yes' if speedup >= TARGET_SPEEDUP else 'no'} |",
        "",
        f"Peak RSS (medians): {fmt_bytes(rss_b)} ({METHOD_B}) vs {fmt_bytes(rss_a)} ({METHOD_A}).",
        "",
        f"- Data: {len(lengths)} synthetic conversational prompt/completion rows (alternately run-length encoding and "
        "running sums, narrated step by step; seed 42), from "
        f"{min(lengths)} to {max(lengths)} tokens ({statistics.mean(lengths):.0f} on average) as the chat template "
        "renders them; the loss is on the completion only (TRL's `completion_only_loss`, the default for "
        "prompt/completion data). Model: the embedded SmolLM2-135M-Instruct in fp32, LoRA r 8, alpha 16, all linear "
        f"layers, dropout 0; learning rate {LEARNING_RATE:g}, seed {SEED}, {ROWS_PER_STEP} rows per optimizer step, "
        f"{steps} steps per run of which the first is a warm-up; {a['threads']} torch threads in both.",
        f"- {METHOD_A}: `trl.SFTConfig` with TRL's defaults for everything that affects speed: activation "
        "(gradient) checkpointing on, padded batches of 8 rows (`per_device_train_batch_size=8`), no packing, "
        "no padding-free, max_length 1024, sdpa attention; set are only the run length, learning rate, logging, "
        "`use_cpu=True` and `bf16=False` (TRL turns bf16 on, which transformers refuses on a CPU).",
        f"- {METHOD_B}: `kt_train.configs.SFTConfig` defaults (activation checkpointing off) through the code "
        f"`run_sft` uses (`get_training_tokenizer`, `prepare_dataset`, `get_training_model`), with {b_batches}: "
        "no padding at all, and with no attention mask sdpa takes its causal flash-attention path; glibc malloc "
        "keeps freed memory (`keep_freed_memory`, as `run_sft` does on CPU).",
        "- Same rows, same loss: both methods see the same rows in the same optimizer steps (checked per run: the "
        "row checksums and token counts of every step agree), so tokens/s counts the same real tokens (prompt and "
        "completion, no padding) for both; the padded slots column shows what method A computes. TRL divides the "
        "summed completion-token loss of every micro-batch by `num_items_in_batch`, the completion tokens of the "
        "whole optimizer step counted before it runs (`average_tokens_across_devices` only matters with several "
        "processes), so both methods minimise the mean loss over the same completion tokens of each step. The "
        f"first step's loss (same weights, same rows) differs by at most {first_diff:.1e} between the two methods, "
        f"and the loss of any step by at most {all_diff:.1e}.",
        "- Loss-equivalence check (base weights, the first step's 8 rows, TRL's data preparation and collator): "
        f"the per-row completion losses of micro-batches of {check['micro_batch']} differ from those of the padded "
        f"batch of 8 by at most {check['ours_diff']:.1e}; with the 8 rows flattened into one padding-free row they "
        f"differ by at most {check['padding_free_diff']:.1e} (transformers builds the block-diagonal mask from "
        "`position_ids`, but only without a cache: a forward with the model's default `use_cache=True` mixes the "
        "rows).",
        f"- Load average at the start: {load:.2f}; at the end: {load_average():.2f}. Timings on this shared "
        "machine vary with other work on it; the runs alternate and the figures are medians.",
    ]
    if not b["padding_free"]:
        lines[-1:-1] = [NOT_USED, WHERE_TIME_GOES]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=2, help="timed optimizer steps per run (after 1 warm-up step)")
    parser.add_argument("--repeats", type=int, default=3, help="alternated runs of each method")
    parser.add_argument("--micro-batch", type=int, default=1, help="kt-train: rows per micro-batch (8 / accumulation)")
    parser.add_argument("--padding-free", action="store_true", help="kt-train: TRL's padding_free batches")
    parser.add_argument("--no-doc", action="store_true", help="print the section instead of writing the doc")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--data-file", help=argparse.SUPPRESS)
    parser.add_argument("--loss-check", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if ROWS_PER_STEP % args.micro_batch:
        parser.error(f"--micro-batch must divide {ROWS_PER_STEP}")
    if args.worker:
        print(json.dumps(train_run(args.worker, args.data_file, args.steps, args.micro_batch, args.padding_free)))
        return 0
    if args.loss_check:
        print(json.dumps(loss_check(args.data_file, args.micro_batch)))
        return 0

    from kt_train.models import get_tokenizer
    from kt_train.training.data import chat_token_count

    load = load_average()
    tokenizer = get_tokenizer(MODEL)
    rows = build_rows(tokenizer)
    lengths = [chat_token_count(row, tokenizer) for row in rows]
    with tempfile.TemporaryDirectory(prefix="bench-sft-") as tmp:
        data_file = str(Path(tmp) / "rows.json")
        Path(data_file).write_text(json.dumps(rows))
        check = _child(["--loss-check", "--data-file", data_file, "--micro-batch", str(args.micro_batch)])
        print(
            f"loss check: micro-batches of {args.micro_batch} vs padded: {check['ours_diff']:.1e}, "
            f"padding-free vs padded: {check['padding_free_diff']:.1e}",
            file=sys.stderr,
            flush=True,
        )
        runs = measure(data_file, args)
    body = report(runs, check, lengths, invocation("bench_sft.py", argv), args, load)
    return publish(KEY, body, args.no_doc)


if __name__ == "__main__":
    sys.exit(main())
