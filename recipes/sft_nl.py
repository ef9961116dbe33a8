"""NL round trip SFT (NL paper §4): QLoRA fine-tuning of the generator or the extractor on chat data.

Usage:

    # CPU, the embedded SmolLM2-135M-Instruct, 4-bit NF4 base + LoRA (QLoRA)
    accelerate launch --config_file accelerate_configs/cpu.yaml recipes/sft_nl.py \\
        --config recipes/smollm2-135m/sft_nl/config_qlora_cpu.yaml --dataset_name DATA_DIR

Data: `dataset_name` (required) holds chats (`messages`, the last turn the assistant's) or conversational
`prompt`/`completion` rows: expression -> word problem for the generator, word problem -> expression for the
extractor. The loss is on the assistant turn only.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from trl import ModelConfig

from kt_train.configs import DataArguments, SFTConfig
from kt_train.training.data import load_training_dataset
from kt_train.training.launch import launch
from kt_train.training.sft import run_sft

ROLES = ("generator", "extractor")


@dataclass
class NLScriptArguments(DataArguments):
    """Which side of the round trip is trained."""

    role: str = field(default="extractor", metadata={"help": "the model being trained", "choices": list(ROLES)})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, got {self.role!r}")


def main(script_args: NLScriptArguments, training_args: SFTConfig, model_args: ModelConfig) -> None:
    if script_args.dataset_name is None:
        raise ValueError("sft_nl needs --dataset_name (a folder or file of chats for the generator or extractor)")
    dataset = load_training_dataset(script_args.dataset_name, script_args.dataset_train_split)
    tags = ["nl", script_args.role]
    run_sft(dataset, script_args, training_args, model_args, dataset_name="nl-roundtrip", tags=tags)


SCRIPT_ARGUMENTS = NLScriptArguments

if __name__ == "__main__":
    sys.exit(launch(main, SCRIPT_ARGUMENTS))
