"""The curves of a GRPO run, from its `trainer_state.json`: block means of the training measures (reward, the task's
own measures of the samples, step credit) and every evaluation of the held-out prompts, as a Markdown table and a
PNG (`grpo_curve.png` in the run folder).

    python recipes/tools/grpo_curve.py --run outputs/seqcoder-tiny/grpo_kt_step_credit --block 20

Measured in docs/dsl.md, "GRPO with step credit".
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import mean
from typing import Any

from transformers import HfArgumentParser

from kt_train.logs import configure_logging, report_error, take_debug_flag
from kt_train.training.curves import log_history, series

logger = logging.getLogger(__name__)
TRAINING = {
    "reward": "reward (all rewards, weighted)",
    "rewards/kt_compression_reward/mean": "kt_compression reward",
    "kt_compression_reward/accuracy": "accuracy of the samples",
    "kt_compression_reward/compression_rate": "CompressionRate of the samples",
    "kt_compression_reward/literal_tail": "samples finished with a literal tail",
    "kt_compression_reward/hack_rate": "hack rate",
    "frac_reward_zero_std": "groups with one reward",
    "step_credit/credited_steps": "steps credited (samples chose differently)",
    "step_credit/credited_tokens": "tokens credited",
    "completions/mean_length": "completion length (tokens)",
    "entropy": "entropy (nats a token)",
}
HELD_OUT = {
    "eval_kt_compression_reward/accuracy": "held-out accuracy",
    "eval_kt_compression_reward/compression_rate": "held-out CompressionRate",
    "eval_kt_compression_reward/hack_rate": "held-out hack rate",
}


@dataclass
class CurveArguments:
    run: Path = field(metadata={"help": "a GRPO run's output folder (its trainer_state.json)"})
    block: int = field(default=20, metadata={"help": "steps a row of the training table averages"})


def block_rows(history: Sequence[Mapping[str, Any]], keys: Mapping[str, str], block: int) -> list[list[str]]:
    """One row per key present: its mean over each block of `block` steps."""
    last = max((int(e["step"]) for e in history if "step" in e), default=0)
    rows = []
    for key, label in keys.items():
        steps, values = series([e for e in history if "eval_loss" not in e and "train_runtime" not in e], key)
        if not steps:
            continue
        cells = []
        for start in range(1, last + 1, block):
            chunk = [v for s, v in zip(steps, values, strict=True) if start <= s < start + block]
            cells.append(f"{mean(chunk):.3f}" if chunk else "-")
        rows.append([label, *cells])
    return rows


def markdown(history: Sequence[Mapping[str, Any]], block: int) -> str:
    last = max((int(e["step"]) for e in history if "step" in e), default=0)
    heads = [f"{start}-{min(start + block - 1, last)}" for start in range(1, last + 1, block)]
    lines = ["| steps | " + " | ".join(heads) + " |", "|---|" + "---:|" * len(heads)]
    lines += ["| " + " | ".join(row) + " |" for row in block_rows(history, TRAINING, block)]
    for key, label in HELD_OUT.items():
        steps, values = series(history, key)
        if steps:
            lines.append(f"\n{label} at steps {', '.join(map(str, steps))}: {', '.join(f'{v:.3f}' for v in values)}")
    return "\n".join(lines)


def plot(history: Sequence[Mapping[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (train, held) = plt.subplots(1, 2, figsize=(9, 3.6), layout="constrained")
    for key in ("rewards/kt_compression_reward/mean", "kt_compression_reward/accuracy"):
        steps, values = series(history, key)
        train.plot(steps, values, ".", alpha=0.35, markersize=3, label=TRAINING[key])
    train.set(title="training samples", xlabel="step")
    for key in ("eval_kt_compression_reward/accuracy", "eval_kt_compression_reward/compression_rate"):
        steps, values = series(history, key)
        held.plot(steps, values, "o-", markersize=4, label=HELD_OUT[key])
    held.set(title="held-out prompts (one sample each)", xlabel="step")
    for axis in (train, held):
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    argv, debug = take_debug_flag(sys.argv[1:] if argv is None else argv)
    configure_logging(debug)
    try:
        (args,) = HfArgumentParser(CurveArguments).parse_args_into_dataclasses(argv)
        history = log_history(args.run)
        if not history:
            raise FileNotFoundError(f"{args.run} has no trainer_state.json with a log history")
        print(markdown(history, args.block))
        plot(history, args.run / "grpo_curve.png")
        print(f"\nplot: {args.run / 'grpo_curve.png'}")
    except (FileNotFoundError, ValueError) as exc:
        return report_error("grpo_curve.py", exc, debug)
    return 0


if __name__ == "__main__":
    sys.exit(main())
