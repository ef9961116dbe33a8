"""Learning curves of from-scratch SeqCoder runs (KT paper Fig. 4, 11 and Table 7, issue 20): every saved
checkpoint of each run scored by `kt eval kt --mode dsl` on the same held-out sequences, beside Gzip per sequence
on those sequences, plus where the loss goes: the held-out loss of the gold programs' tokens by kind.

    python bench/bench_seqcoder_curves.py --dataset EVALSET --limit 500 \\
        --run 10k=outputs/seqcoder-tiny/sft_kt_10k --run 100k=outputs/seqcoder-tiny/sft_kt_100k

A run folder holds `checkpoint-N/` folders (a checkpoint needs its model, tokenizer and chat template) and, when
training finished, the final model itself. Each checkpoint's evaluation goes to `--output/<run>/step-N` (resumable:
the run contract of `kt eval kt`). Token kinds: numbers that occur in the sequence (copied from the prompt), other
numbers (counts, steps, indices), function and predicate names, `sequence_N` names, and the rest (punctuation,
`output`, end of text). Writes `curves.json`, `curves.png` and the "SeqCoder learning curves" section of
docs/benchmarks.md (unless `--no-doc`).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import torch
from benchutil import invocation, publish, run_header

from dsl.functions import FUNCTIONS, PREDICATES
from dsl.parser import parse_program
from dsl.seqcoder import to_seqcoder_chat
from eval.kt.baselines import gzip_rates
from eval.kt.dataset import load_kt_dataset
from eval.kt.evaluate import ITEMS_FILE, KTEvalConfig, run_kt_eval
from eval.plotting import save

STEP = re.compile(r"checkpoint-(\d+)")
KINDS = ("number in the sequence", "other number", "function", "sequence name", "other")
PROGRAM_NATS = "nats per program"
"""The whole gold program's loss (and its end of text): the same measure whatever the tokenization."""


def checkpoints(run: Path) -> list[tuple[int, Path]]:
    """(step, folder) of every checkpoint of a run folder, and of its final model when training finished."""
    found = {int(m.group(1)): d for d in run.glob("checkpoint-*") if (m := STEP.fullmatch(d.name))}
    state = run / "trainer_state.json"
    if (run / "model.safetensors").is_file() and state.is_file():
        found[int(json.loads(state.read_text())["global_step"])] = run
    return sorted(found.items())


def eval_losses(run: Path) -> dict[int, float]:
    """eval_loss by step, from the latest trainer state of the run."""
    states = sorted(run.glob("checkpoint-*/trainer_state.json"), key=lambda p: int(STEP.search(str(p)).group(1)))
    states += [run / "trainer_state.json"] if (run / "trainer_state.json").is_file() else []
    if not states:
        return {}
    history = json.loads(states[-1].read_text())["log_history"]
    return {int(e["step"]): float(e["eval_loss"]) for e in history if "eval_loss" in e}


def token_kind(token: str, sequence: set[str]) -> str:
    if token.isdigit():
        return KINDS[0] if token in sequence else KINDS[1]
    if token in FUNCTIONS or token in PREDICATES:
        return KINDS[2]
    return KINDS[3] if token.startswith("sequence_") else KINDS[4]


def pieces(tokens: list[str], losses: torch.Tensor) -> list[tuple[str, float]]:
    """The tokens with their losses, a run of digit tokens joined into one number (its losses summed): a number
    costs the same nats whether it is one token (`words`) or its digits (`digits`)."""
    out: list[tuple[str, float]] = []
    for token, loss in zip(tokens, losses.tolist(), strict=True):
        if token.isdigit() and out and out[-1][0].isdigit():
            out[-1] = (out[-1][0] + token, out[-1][1] + loss)
        else:
            out.append((token, loss))
    return out


@torch.inference_mode()
def loss_by_kind(model_dir: Path, rows: list[dict[str, Any]]) -> dict[str, float]:
    """Mean loss of the gold programs' tokens, teacher-forced, by token kind (nats per token; per number for
    numbers, whether spelled in digits or not)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    sums: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        chat = to_seqcoder_chat(row)
        prompt = tokenizer.apply_chat_template(chat["prompt"], add_generation_prompt=True, tokenize=False)
        full = tokenizer.apply_chat_template(chat["prompt"] + chat["completion"], tokenize=False)
        start = len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
        ids = torch.tensor([tokenizer(full, add_special_tokens=False)["input_ids"]])
        logprobs = torch.log_softmax(model(input_ids=ids).logits[0, :-1].float(), dim=-1)
        targets = ids[0, 1:]
        losses = -logprobs[torch.arange(len(targets)), targets]
        in_sequence = {str(v) for v in row["sequence"]}
        for piece, loss in pieces(tokenizer.convert_ids_to_tokens(targets[start - 1 :].tolist()), losses[start - 1 :]):
            kind = token_kind(piece, in_sequence)
            sums[kind] += loss
            counts[kind] += 1
    return (
        {kind: sums[kind] / counts[kind] for kind in KINDS if counts[kind]}
        | {f"share {kind}": counts[kind] / sum(counts.values()) for kind in KINDS}
        | {PROGRAM_NATS: sum(sums.values()) / len(rows)}
    )


def by_program_lines(items_file: Path, programs: dict[str, str]) -> dict[str, tuple[int, float]]:
    """Accuracy by the gold program's number of lines (Fig. 11a): bucket -> (n, accuracy)."""
    buckets: dict[str, list[bool]] = defaultdict(list)
    for line in items_file.read_text().splitlines():
        item = json.loads(line)
        lines = parse_program(programs[item["id"]]).num_lines
        bucket = "2-4" if lines <= 4 else "5-8" if lines <= 8 else "9-12" if lines <= 12 else "13+"
        buckets[bucket].append(item["verdict"] == "correct")
    order = ("2-4", "5-8", "9-12", "13+")
    return {b: (len(buckets[b]), sum(buckets[b]) / len(buckets[b])) for b in order if buckets[b]}


def plot(results: dict[str, list[dict[str, Any]]], gzip_rate: float, title: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(19, 4.2))
    for label, points in results.items():
        steps = [p["step"] for p in points]
        axes[0].plot(steps, [p["compression_rate"] for p in points], marker="o", label=label)
        axes[1].plot(steps, [100 * p["accuracy"] for p in points], marker="o", label=label)
        losses = [(p["step"], p["eval_loss"]) for p in points if p.get("eval_loss") is not None]
        axes[2].plot([s for s, _ in losses], [v for _, v in losses], marker="o", label=label)
        axes[3].plot(steps, [p["loss_by_kind"].get(KINDS[0], math.nan) for p in points], marker="o", label=label)
    axes[0].axhline(gzip_rate, color="grey", linestyle="--", label=f"Gzip per sequence ({gzip_rate:.3f})")
    axes[3].axhline(math.log(257), color="grey", linestyle=":", label="uniform over 0..256 (ln 257)")
    names = (
        "CompressionRate (lower is better)",
        "Accuracy (%)",
        "eval_loss (nats/token)",
        "loss of numbers found in the sequence",
    )
    for ax, name in zip(axes, names):
        ax.set_xlabel("training step")
        ax.set_title(name)
        ax.grid(alpha=0.3)
    handles = {h.get_label(): h for ax in (axes[0], axes[3]) for h in ax.get_lines()}
    fig.legend(
        list(handles.values()), list(handles), loc="lower center", bbox_to_anchor=(0.5, -0.08), ncol=4, frameon=False
    )
    fig.suptitle(title)
    save(fig, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, help="held-out KT set (kt dsl eval-set --exclude CORPUS)")
    parser.add_argument("--run", action="append", required=True, metavar="LABEL=DIR", help="a training run folder")
    parser.add_argument("--limit", type=int, default=500, help="the first N sequences of the set")
    parser.add_argument("--loss-items", type=int, default=200, help="sequences for the loss by token kind")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=512)
    parser.add_argument("--output", default="outputs/bench/seqcoder_curves")
    parser.add_argument("--no-doc", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    dataset = load_kt_dataset(args.dataset, args.limit)
    gzip = gzip_rates([item.sequence for item in dataset.items], dataset.symbol_bits, "bytes")["per_sequence"]
    programs = {item.id: item.program for item in dataset.items}
    loss_rows = [{"sequence": i.sequence, "program": i.program} for i in dataset.items[: args.loss_items]]
    out = Path(args.output)
    results: dict[str, list[dict[str, Any]]] = {}
    for spec in args.run:
        label, _, folder = spec.partition("=")
        losses = eval_losses(Path(folder))
        results[label] = []
        for step, model_dir in checkpoints(Path(folder)):
            config = KTEvalConfig(
                dataset=args.dataset,
                output=str(out / label / f"step-{step}"),
                mode="dsl",
                model=str(model_dir),
                limit=args.limit,
                batch_size=args.batch_size,
                max_new_tokens=args.max_new_tokens,
            )
            metrics = run_kt_eval(config, progress=False)["metrics"]
            point = {
                "step": step,
                "eval_loss": losses.get(step),
                **{k: metrics[k] for k in ("accuracy", "executable")},
            }
            point |= {
                "compression_rate": metrics["compression_rate"],
                "loss_by_kind": loss_by_kind(model_dir, loss_rows),
            }
            point["accuracy_by_program_lines"] = by_program_lines(Path(config.output) / ITEMS_FILE, programs)
            point["accuracy_by_length"] = {b["bucket"]: (b["n"], b["accuracy"]) for b in metrics["by_length"]}
            results[label].append(point)
            print(json.dumps({"run": label, **point}), file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    (out / "curves.json").write_text(json.dumps({"gzip_per_sequence": gzip, "runs": results}, indent=1))
    title = f"SeqCoder-tiny from scratch: {args.limit} held-out sequences of {Path(args.dataset).name}"
    plot(results, gzip, title, out / "curves.png")
    return publish("seqcoder_curves", report(results, gzip, args), args.no_doc)


def report(results: dict[str, list[dict[str, Any]]], gzip: float, args: argparse.Namespace) -> str:
    lines = [*run_header(invocation("bench_seqcoder_curves.py", None)), ""]
    lines += [f"The first {args.limit} sequences of the held-out set; Gzip per sequence on them: {gzip:.3f}.", ""]
    lines += [
        "| run | step | eval_loss | Accuracy | executable | CompressionRate | nats per program | "
        + " | ".join(f"loss: {k}" for k in KINDS)
        + " |"
    ]
    lines += ["|---|---:|---:|---:|---:|---:|---:|" + "---:|" * len(KINDS)]
    for label, points in results.items():
        for p in points:
            kinds = " | ".join(f"{p['loss_by_kind'].get(k, math.nan):.2f}" for k in KINDS)
            loss = "-" if p["eval_loss"] is None else f"{p['eval_loss']:.3f}"
            lines.append(
                f"| {label} | {p['step']} | {loss} | {100 * p['accuracy']:.1f}% | {100 * p['executable']:.1f}% "
                f"| {p['compression_rate']:.3f} | {p['loss_by_kind'].get(PROGRAM_NATS, math.nan):.1f} | {kinds} |"
            )
    last = {label: points[-1] for label, points in results.items() if points}
    if last:
        shares = next(iter(last.values()))["loss_by_kind"]
        lines += [
            "",
            "Share of the gold programs' tokens by kind: "
            + ", ".join(f"{k} {100 * shares[f'share {k}']:.0f}%" for k in KINDS)
            + ".",
        ]
        lines += ["", "Accuracy of each run's last step by gold program lines and by sequence length (Fig. 11):", ""]
        for label, p in last.items():
            lines.append(
                f"- {label}, program lines: "
                + ", ".join(f"{b} {100 * a:.1f}% (n={n})" for b, (n, a) in p["accuracy_by_program_lines"].items())
            )
            lines.append(
                f"- {label}, sequence length: "
                + ", ".join(f"{b} {100 * a:.1f}% (n={n})" for b, (n, a) in p["accuracy_by_length"].items())
            )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
