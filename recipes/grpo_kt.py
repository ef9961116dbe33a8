"""GRPO for KT (paper 003, §7: "RL with a reward for correct, shorter programs"): the policy writes a DSL program
for a sequence; the reward is 0 unless the program prints exactly the sequence, else a shaping of 1 - CompressionRate
(program bits under the DSL prior, or gzip), plus a small format reward.

Usage:

    # CPU, the embedded SmolLM2-135M-Instruct with LoRA, a few steps (minutes)
    accelerate launch --config_file accelerate_configs/cpu.yaml recipes/grpo_kt.py \\
        --config recipes/smollm2-135m/grpo_kt/config_cpu.yaml

    # 4 GPUs, ZeRO-3, vLLM colocated with training (untested here: no GPU on the development machines)
    accelerate launch --config_file accelerate_configs/zero3.yaml --num_processes 4 recipes/grpo_kt.py \\
        --config recipes/Llama-3.1-8B-Instruct/grpo_kt/config_zero3.yaml

Data: `dataset_name` is a corpus made by `kt dsl generate` (only its `sequence` column is used: GRPO needs prompts, not
answers) or ready GRPO rows (a `prompt` column and the rewards' columns); without it the default corpus of
`corpus_size` pairs is built once and cached (the one `sft_kt.py` uses with the same size and seed). Start from a
SeqCoder SFT adapter with `init_adapter` (merged into the base before a new LoRA adapter is trained): the base model
rarely writes a correct program, and GRPO learns nothing from a group whose rewards are all equal.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from datasets import Dataset
from trl import ModelConfig

from dsl.seqcoder import kt_corpus_dir, to_seqcoder_rl_row
from kt_train.configs import GRPOConfig, GRPOScriptArguments
from kt_train.training.data import load_training_dataset
from kt_train.training.grpo import run_grpo
from kt_train.training.launch import launch


@dataclass
class KTGRPOScriptArguments(GRPOScriptArguments):
    """The sequences to write programs for and the KT rewards."""

    reward_funcs: list[str] = field(
        default_factory=lambda: ["kt_compression", "format"],
        metadata={"help": "reward names (kt_compression: 0 unless correct, then shorter is better; format)"},
    )
    corpus_size: int = field(default=10_000, metadata={"help": "pairs in the default corpus (its sequences)"})
    corpus_seed: int = field(default=42, metadata={"help": "seed of the default corpus"})


def prompt_rows(script_args: KTGRPOScriptArguments) -> Dataset:
    """One GRPO row per corpus sequence: the SeqCoder prompt, the sequence and the answer format (a dataset that
    already has a `prompt` column is used as it is)."""
    path = kt_corpus_dir(script_args.dataset_name, script_args.corpus_size, script_args.corpus_seed)
    corpus = load_training_dataset(str(path), script_args.dataset_train_split)
    if "prompt" in corpus.column_names:
        return corpus
    if "sequence" not in corpus.column_names:
        raise ValueError(f"the corpus lacks the `sequence` column (got {corpus.column_names}); make it with kt dsl")
    return corpus.map(to_seqcoder_rl_row, remove_columns=corpus.column_names, desc="KT prompts")


def main(script_args: KTGRPOScriptArguments, training_args: GRPOConfig, model_args: ModelConfig) -> None:
    run_grpo(
        prompt_rows(script_args), script_args, training_args, model_args, dataset_name="kt-dsl", tags=["kt", "grpo"]
    )


SCRIPT_ARGUMENTS, TRAINING_CONFIG = KTGRPOScriptArguments, GRPOConfig

if __name__ == "__main__":
    sys.exit(launch(main, SCRIPT_ARGUMENTS, training_config=TRAINING_CONFIG))
