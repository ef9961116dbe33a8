"""NL round-trip fine-tuning (NL paper §4): QLoRA on arithmetic or assembly round-trip chats, then the round trip.

Usage:

    # CPU, the embedded SmolLM2-135M-Instruct, 4-bit NF4 base + LoRA r32 (QLoRA), arithmetic FT, then `kt nl run`
    accelerate launch --config_file accelerate_configs/cpu.yaml recipes/sft_nl.py \\
        --config recipes/smollm2-135m/sft_nl/config_qlora_cpu.yaml

    # the paper's setting on one GPU: 3 epochs, lr 2e-4 cosine, r32 / alpha 64; assembly FT with --ft_domain assembly
    accelerate launch --config_file accelerate_configs/ddp.yaml --num_processes 1 recipes/sft_nl.py \\
        --config recipes/Llama-3.1-8B-Instruct/sft_nl/config_qlora.yaml

Data: `dataset_name` holds chats (`messages`, the last turn the assistant's); without it the fine-tuning data of
`ft_domain` is built once and cached under the kt-train cache (`kt nl ft-data`: arithmetic with letters Q..Z and
constants 11..20 on the evaluation topologies, or assembly; every pair gives an e->w and a w->e chat). `role` keeps
both directions (the paper) or one. With `evaluations: [nl]` (`eval.post_training`), the main process builds a small
suite and runs the round trip in a separate process (`kt nl run --config output_dir/nl.config.json`): the base
model and the fine-tuned one (adapter merged) in both roles, with the S-expression and procedural generators and the
rule-based parser as references (`output_dir/nl_eval/report.md`, and W&B when the training reports there).
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path

from accelerate import PartialState
from datasets import Dataset
from trl import ModelConfig

from dsl.expr.ft_data import FORMAT as FT_FORMAT
from dsl.expr.ft_data import FTDataConfig, make_ft_data
from eval.post_training import (
    TrainedModels,
    checked_evaluations,
    eval_backend_field,
    run_evaluations,
    training_wandb,
)
from kt_train.configs import DataArguments, SFTConfig, model_name
from kt_train.models import cache_dir
from kt_train.training.data import load_eval_split, load_training_dataset
from kt_train.training.launch import launch
from kt_train.training.sft import evaluates, run_sft

ROLES = ("both", "generator", "extractor")
FT_DOMAINS = ("arithmetic", "assembly")
DIRECTIONS = {"generator": "e->w", "extractor": "w->e"}
logger = logging.getLogger(__name__)


@dataclass
class NLScriptArguments(DataArguments):
    """The round-trip chats to train on, and the evaluation after training."""

    ft_domain: str = field(default="arithmetic", metadata={"help": "default data's domain", "choices": FT_DOMAINS})
    ft_pairs_per_depth: int = field(default=500, metadata={"help": "default data: pairs per depth 2..5"})
    ft_seed: int = field(default=0, metadata={"help": "seed of the default data"})
    role: str = field(
        default="both", metadata={"help": "both directions (the paper), or e->w / w->e only", "choices": list(ROLES)}
    )
    evaluations: list[str] = field(
        default_factory=list,
        metadata={"help": "after training: nl (the round trip of the base and fine-tuned models, separate process)"},
    )
    eval_expressions: int = field(default=8, metadata={"help": "suite expressions in that round trip"})
    eval_generator_shots: int = field(default=0, metadata={"help": "gamma (the paper: 0 arithmetic FT, 3 assembly)"})
    eval_extractor_shots: int = field(default=3, metadata={"help": "epsilon (the paper: 3)"})
    eval_generator_tokens: int = field(default=160, metadata={"help": "tokens per word problem"})
    eval_extractor_tokens: int = field(default=48, metadata={"help": "tokens per extraction"})
    eval_backend: str = eval_backend_field()

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, got {self.role!r}")
        if self.ft_domain not in FT_DOMAINS:
            raise ValueError(f"ft_domain must be one of {FT_DOMAINS}, got {self.ft_domain!r}")
        if self.eval_expressions < 1:
            raise ValueError(f"eval_expressions must be >= 1, got {self.eval_expressions}")
        checked_evaluations(self.evaluations, ["nl"])


def ft_data_dir(script_args: NLScriptArguments) -> Path:
    """`dataset_name`, else the cached default fine-tuning data (built by the main process first)."""
    if script_args.dataset_name is not None:
        return Path(script_args.dataset_name)
    name = f"nl-ft-{script_args.ft_domain}-seed{script_args.ft_seed}-{script_args.ft_pairs_per_depth}-v{FT_FORMAT}"
    root = cache_dir() / "data" / name
    with PartialState().main_process_first():
        if PartialState().is_main_process and not (root / "ft_data.json").is_file():
            config = FTDataConfig(
                domain=script_args.ft_domain, pairs_per_depth=script_args.ft_pairs_per_depth, seed=script_args.ft_seed
            )
            make_ft_data(config, root)
    return root


def chats_of_role(dataset: Dataset, role: str) -> Dataset:
    """The chats of `role`'s direction (all for both), their chat columns only."""
    if role != "both":
        if "direction" not in dataset.column_names:
            raise ValueError(f"role {role!r} needs a `direction` column (e->w / w->e) in the data")
        dataset = dataset.filter(lambda row: row["direction"] == DIRECTIONS[role])
    return dataset.select_columns([c for c in ("messages", "prompt", "completion") if c in dataset.column_names])


def main(script_args: NLScriptArguments, training_args: SFTConfig, model_args: ModelConfig) -> None:
    data = str(ft_data_dir(script_args))
    dataset = chats_of_role(load_training_dataset(data, script_args.dataset_train_split), script_args.role)
    test = load_eval_split(data, script_args.dataset_test_split) if evaluates(training_args) else None
    tags = ["nl", script_args.ft_domain, script_args.role]
    run = run_sft(
        dataset,
        script_args,
        training_args,
        model_args,
        dataset_name=f"nl-{script_args.ft_domain}",
        tags=tags,
        eval_dataset=None if test is None else chats_of_role(test, script_args.role),
    )
    state = PartialState()
    if state.is_main_process and script_args.evaluations:
        trained = TrainedModels(
            Path(training_args.output_dir),
            model_name(model_args),
            {"ft": training_args.output_dir},
            training_args.seed,
            run.trainer is not None,
            **training_wandb(training_args),  # beside the training run
        )
        run_evaluations(script_args.evaluations, trained, script_args)
    state.wait_for_everyone()


SCRIPT_ARGUMENTS = NLScriptArguments

if __name__ == "__main__":
    sys.exit(launch(main, SCRIPT_ARGUMENTS))
