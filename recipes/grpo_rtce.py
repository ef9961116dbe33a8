"""GRPO for RTCE (papers 000/001): verifiable rewards on the four prediction tasks and on the round trip.

The policy predicts what an encoder or decoder returns (or what it was given), answering `[ANSWER]{"output": ...}`;
`rtce_answer_reward` is the exact match against the reference. On round-trip rows the policy encodes x and decodes
its own encoding in one answer; `rtce_roundtrip_reward` is 1 when its decoding gives x back and the reference
decoder, run on its encoding in the sandbox, does too (self-consistency alone would reward the identity map).
Each reward leaves the other kind of row to the other (TRL ignores a None reward); `format_reward` checks the answer
block.

Usage:

    # CPU, the embedded SmolLM2-135M-Instruct with LoRA, a few steps (minutes)
    accelerate launch --config_file accelerate_configs/cpu.yaml recipes/grpo_rtce.py \\
        --config recipes/smollm2-135m/grpo_rtce/config_cpu.yaml

    # 4 GPUs, ZeRO-3, vLLM colocated with training (untested here: no GPU on the development machines)
    accelerate launch --config_file accelerate_configs/zero3.yaml --num_processes 4 recipes/grpo_rtce.py \\
        --config recipes/Llama-3.1-8B-Instruct/grpo_rtce/config_zero3.yaml

Data: `dataset_name` is a benchmark folder made by `kt rtce build` (with `eval_ids`, a file of held-out input ids to
leave out) or ready GRPO rows (`tracegen.rl_data.rtce_rl_rows` saved as a dataset); without it the default corpus's
benchmark and held-out ids are built once and cached (the inputs `sft_rtce.py` holds out with the same seed, count and
fraction are held out here too), so `kt eval rtce` on those ids stays a held-out evaluation after GRPO.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from accelerate import PartialState
from datasets import Dataset
from trl import ModelConfig

from kt_train.configs import GRPOConfig, GRPOScriptArguments
from kt_train.models import cache_dir
from kt_train.training.data import load_training_dataset
from kt_train.training.grpo import run_grpo
from kt_train.training.launch import launch
from tracegen.algorithms import ALGORITHMS
from tracegen.benchmark import CORPUS_FILE
from tracegen.pipeline import CorpusSettings, build_rtce_benchmark
from tracegen.prompts import PROMPT_STYLES
from tracegen.rl_data import rtce_rl_rows
from tracegen.sft_data import load_eval_ids
from tracegen.tasks import TASKS


@dataclass
class RTCEGRPOScriptArguments(GRPOScriptArguments):
    """The prompts (algorithms, tasks, round trips) and the RTCE rewards."""

    reward_funcs: list[str] = field(
        default_factory=lambda: ["rtce_answer", "rtce_roundtrip", "format"],
        metadata={"help": "reward names (rtce_answer: exact match; rtce_roundtrip: the round trip gives x back)"},
    )
    algorithms: list[str] = field(
        default_factory=lambda: list(ALGORITHMS),
        metadata={"help": "algorithms to draw prompts from", "choices": sorted(ALGORITHMS)},
    )
    tasks: list[str] = field(
        default_factory=lambda: ["output_pred", "input_pred"],
        metadata={"help": "prediction tasks to draw prompts from", "choices": [t.value for t in TASKS]},
    )
    roundtrip: bool = field(default=True, metadata={"help": "add a round-trip prompt per input and algorithm"})
    eval_ids: str | None = field(
        default=None, metadata={"help": "with dataset_name: a file of held-out input ids to leave out"}
    )
    corpus_seed: int = field(
        default=CorpusSettings.seed, metadata={"help": "default corpus: seed of the benchmark inputs"}
    )
    num_inputs: int = field(default=CorpusSettings.num_inputs, metadata={"help": "default corpus: benchmark inputs"})
    eval_fraction: float = field(
        default=CorpusSettings.eval_fraction, metadata={"help": "default corpus: share of inputs held out"}
    )
    prompt_style: str = field(
        default=CorpusSettings.prompt_style,
        metadata={"help": "default corpus: prompt style (paper, release-blind, demo)", "choices": PROMPT_STYLES},
    )

    def __post_init__(self) -> None:  # unknown algorithms and tasks: rtce_rl_rows says which
        super().__post_init__()
        if not (self.algorithms and (self.tasks or self.roundtrip)):
            raise ValueError("need at least one algorithm, and a task or roundtrip")


def benchmark_and_held_out(script_args: RTCEGRPOScriptArguments) -> tuple[Path, set[str]]:
    """The benchmark folder and the input ids to leave out: `dataset_name` and `eval_ids`, else the default corpus's
    (built by the main process first)."""
    if script_args.dataset_name is not None:
        return Path(script_args.dataset_name), load_eval_ids(script_args.eval_ids)
    settings = CorpusSettings(
        script_args.corpus_seed,
        script_args.num_inputs,
        script_args.eval_fraction,
        prompt_style=script_args.prompt_style,
    )
    with PartialState().main_process_first():
        benchmark, eval_ids = build_rtce_benchmark(cache_dir() / "data" / settings.key(), settings, progress=False)
    return benchmark, load_eval_ids(eval_ids)


def prompt_rows(script_args: RTCEGRPOScriptArguments) -> Dataset:
    """The GRPO rows of every kept input, algorithm and task (and round trip); a `dataset_name` that is not a
    benchmark folder is loaded as ready GRPO rows."""
    if script_args.dataset_name is not None and not (Path(script_args.dataset_name) / CORPUS_FILE).is_file():
        return load_training_dataset(script_args.dataset_name, script_args.dataset_train_split)
    benchmark, held_out = benchmark_and_held_out(script_args)
    rows = rtce_rl_rows(
        benchmark,
        algorithms=script_args.algorithms,
        tasks=script_args.tasks,
        roundtrip=script_args.roundtrip,
        exclude_ids=held_out,
    )
    if not rows:
        raise ValueError(f"no RTCE prompts in {benchmark} for {script_args.algorithms} (all held out?)")
    return Dataset.from_list(rows)


def main(script_args: RTCEGRPOScriptArguments, training_args: GRPOConfig, model_args: ModelConfig) -> None:
    run_grpo(
        prompt_rows(script_args),
        script_args,
        training_args,
        model_args,
        dataset_name="rtce",
        tags=["rtce", "grpo", *script_args.algorithms],
    )


SCRIPT_ARGUMENTS, TRAINING_CONFIG = RTCEGRPOScriptArguments, GRPOConfig

if __name__ == "__main__":
    sys.exit(launch(main, SCRIPT_ARGUMENTS, training_config=TRAINING_CONFIG))
