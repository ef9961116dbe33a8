"""GRPO for the NL round trip (paper 002): the policy is the generator. It writes a word problem for an expression;
`nl_roundtrip_reward` guards it (a leak scores 0), an extractor reads the expression back from the prose alone and
the sympy / truth-table oracle judges it. The paper fine-tunes the generator with SFT; here the round trip itself is
the reward.

Usage:

    # CPU, the embedded SmolLM2-135M-Instruct with LoRA, the exact procedural parser as extractor (minutes)
    accelerate launch --config_file accelerate_configs/cpu.yaml recipes/grpo_nl.py \\
        --config recipes/smollm2-135m/grpo_nl/config_cpu.yaml

    # a model as extractor (any MODEL[@ADAPTER], as `kt nl run` participants), loaded once in every process
    ... --reward_options '{"nl_roundtrip": {"extractor": "smollm2-135m-instruct"}}'

Data: `dataset_name` is a suite folder made by `kt nl suite` or ready GRPO rows (a `prompt` column and the rewards'
columns); without it a training suite is built with `suite_seed` (not the evaluation suite's seed 0). The expressions
of the default evaluation suite of the domain and every prompt exemplar are left out, so `kt nl run` after GRPO stays
a held-out evaluation.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from datasets import Dataset
from trl import ModelConfig

from dsl.expr.rl_data import nl_rl_rows
from dsl.expr.suite import (
    SuiteConfig,
    build_suite,
    exclude_expressions,
    load_suite,
    suite_rows_file,
    without_shots,
)
from kt_train.configs import GRPOConfig, GRPOScriptArguments
from kt_train.training.data import load_training_dataset
from kt_train.training.grpo import run_grpo
from kt_train.training.launch import launch


@dataclass
class NLGRPOScriptArguments(GRPOScriptArguments):
    """The expressions to write word problems for and the NL rewards."""

    reward_funcs: list[str] = field(
        default_factory=lambda: ["nl_roundtrip", "format"],
        metadata={"help": "reward names (nl_roundtrip: guard, extract, judge; format: placeholders, no answer line)"},
    )
    domain: str = field(default="arithmetic", metadata={"help": "expression domain of the suite: arithmetic, logic"})
    suite_seed: int = field(default=1, metadata={"help": "seed of the training suite (the evaluation suite: 0)"})
    generator_shots: int = field(default=0, metadata={"help": "exemplars in the generator prompt (0..3)"})

    def __post_init__(self) -> None:
        super().__post_init__()  # an unknown domain: SuiteConfig says so
        if self.suite_seed == SuiteConfig.seed:
            raise ValueError(f"suite_seed {self.suite_seed} is the evaluation suite's seed: train on another")


def prompt_rows(script_args: NLGRPOScriptArguments) -> Dataset:
    """One generator prompt per training expression, held-out expressions left out."""
    name = script_args.dataset_name
    if name is not None and suite_rows_file(name) is None:
        return load_training_dataset(name, script_args.dataset_train_split)
    rows = (
        load_suite(name)
        if name is not None
        else build_suite(SuiteConfig(domain=script_args.domain, seed=script_args.suite_seed)).rows
    )
    evaluation = {row["sexpr"] for row in build_suite(SuiteConfig(domain=script_args.domain)).rows}
    kept = without_shots(exclude_expressions(rows, evaluation), script_args.domain)
    if not kept:
        raise ValueError("no training expressions left after leaving out the evaluation suite")
    return Dataset.from_list(nl_rl_rows(kept, script_args.domain, script_args.generator_shots))


def main(script_args: NLGRPOScriptArguments, training_args: GRPOConfig, model_args: ModelConfig) -> None:
    run_grpo(
        prompt_rows(script_args),
        script_args,
        training_args,
        model_args,
        dataset_name="nl-roundtrip",
        tags=["nl", "grpo", script_args.domain],
    )


SCRIPT_ARGUMENTS, TRAINING_CONFIG = NLGRPOScriptArguments, GRPOConfig

if __name__ == "__main__":
    sys.exit(launch(main, SCRIPT_ARGUMENTS, training_config=TRAINING_CONFIG))
