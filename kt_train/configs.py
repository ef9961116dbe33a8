"""Training configs: TRL's SFTConfig and GRPOConfig with W&B fields and faster CPU defaults; the recipes' common
data arguments.

Recipes parse `(their ScriptArguments, SFTConfig or GRPOConfig, ModelConfig)` with `trl.TrlParser`, so a YAML recipe
may hold any key of the three; an unknown key fails loudly (TrlParser's default).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import torch
import trl

from kt_train.models import DEFAULT_MODEL


@dataclass
class RunFields:
    """What kt-train adds to TRL's trainer configs: W&B naming (open-r1's fields) and CPU-aware defaults.

    On a machine without a GPU, `use_cpu` is set (accelerate then uses gloo, so ZeRO-3 really runs on several CPU
    processes) and `bf16` is off unless asked for (TRL turns it on by default).
    Chats get no system message unless `system_prompt` sets one: the default one a chat template adds (SmolLM2's
    "You are a helpful AI assistant named SmolLM, ...") is left out; the adapter is saved with the template it was
    trained with, which its evaluations use (`kt_train.chat_templates`).
    `torch_threads` fixes the thread count of a CPU run: on 2 cores, 2 threads trained 1.5x and generated 1.7x
    faster than 1 when nothing else ran, but 2.7x and up to 9x slower beside one other busy process
    (docs/benchmarks.md, "Torch threads on CPU").
    Activation (gradient) checkpointing is off by default (TRL: on): recomputing activations costs about a third
    more compute, and a small model with LoRA fits without it; turn it on for large models with
    `gradient_checkpointing: true` (transformers 5.19's name; later versions call it `activation_checkpointing`).
    """

    gradient_checkpointing: bool | None = field(
        default=None, metadata={"help": "activation checkpointing: recompute activations in the backward (None: off)"}
    )
    bf16: bool | None = field(
        default=None,
        metadata={"help": "bfloat16 mixed precision (None: on with a GPU, off on CPU, where fp32 is faster)"},
    )
    system_prompt: str | None = field(
        default=None,
        metadata={
            "help": "system message of every training chat that has none (None: none; a chat template's default "
            "one, like SmolLM2's, is left out: kt_train.chat_templates)"
        },
    )
    torch_threads: int | None = field(
        default=None,
        metadata={
            "help": "torch threads of the recipe's process and of the evaluations it starts, set by the recipe's "
            "launcher (None: as launched; `accelerate launch` gives each CPU process its share of the physical "
            "cores unless --num_cpu_threads_per_process or OMP_NUM_THREADS says otherwise)"
        },
    )
    wandb_entity: str | None = field(default=None, metadata={"help": "W&B entity (team or user) to log to"})
    wandb_project: str | None = field(default=None, metadata={"help": "W&B project to log to"})
    wandb_run_group: str | None = field(default=None, metadata={"help": "W&B group of this run"})
    wandb_offline: bool | None = field(
        default=None,
        metadata={"help": "log W&B offline (None: offline unless logged in, i.e. WANDB_API_KEY or a netrc entry)"},
    )
    overwrite_output_dir: bool = field(
        default=False,
        metadata={
            "help": "start afresh in an output_dir that holds a run (its checkpoints and results are removed); "
            "without it a rerun resumes only with the same settings, and a finished run is not trained further"
        },
    )

    def __post_init__(self) -> None:
        if self.torch_threads is not None and self.torch_threads < 1:
            raise ValueError(f"torch_threads must be >= 1, got {self.torch_threads}")
        if not torch.cuda.is_available():
            # Without use_cpu, accelerate finds no distributed backend on CPU and every DeepSpeed rank believes it
            # is alone (num_processes=1); with it, gloo is used and ZeRO-3 runs on 2 CPU processes.
            self.use_cpu = True
            if self.bf16 is None and not self.fp16:
                self.bf16 = False
        super().__post_init__()  # type: ignore[misc]


@dataclass
class SFTConfig(RunFields, trl.SFTConfig):
    """trl.SFTConfig with kt-train's W&B fields and CPU-aware defaults (`RunFields`)."""


@dataclass
class GRPOConfig(RunFields, trl.GRPOConfig):
    """trl.GRPOConfig with kt-train's W&B fields and CPU-aware defaults (`RunFields`).

    Generation: vLLM when `use_vllm` (GPU only; `vllm_mode: colocate` shares the training GPUs), else the policy's
    own transformers `generate`, which is what runs on CPU. `use_vllm` without a GPU is a config error.
    """

    def __post_init__(self) -> None:
        if self.use_vllm and not torch.cuda.is_available():
            raise ValueError("use_vllm needs a CUDA GPU (vLLM cannot run on CPU); set use_vllm: false")
        super().__post_init__()


TrainingConfig = SFTConfig | GRPOConfig


@dataclass
class DataArguments:
    """Where a recipe's data comes from; each recipe adds its own fields."""

    dataset_name: str | None = field(
        default=None,
        metadata={
            "help": "a dataset directory (HF `save_to_disk`, parquet/JSONL files) or hub id; None: build the "
            "recipe's default corpus"
        },
    )
    dataset_train_split: str = field(default="train", metadata={"help": "split to train on"})
    dataset_test_split: str = field(
        default="test",
        metadata={"help": "split to evaluate on during training (eval_strategy steps or epoch) when the data has it"},
    )
    eval_split_size: float | None = field(
        default=None,
        metadata={
            "help": "when evaluating during training and the data has no dataset_test_split: rows held out of the "
            "training rows with the seed (a fraction when below 1, else a count)"
        },
    )
    max_train_samples: int | None = field(
        default=None,
        metadata={"help": "train on N rows (after dropping rows over max_length), drawn with the seed (None: all)"},
    )
    max_eval_samples: int | None = field(
        default=None,
        metadata={"help": "evaluate during training on N of the evaluation rows, drawn with the seed (None: all)"},
    )
    drop_longer: bool = field(
        default=True,
        metadata={"help": "drop rows over max_length tokens instead of truncating them (the answer comes last)"},
    )

    def __post_init__(self) -> None:
        if self.max_train_samples is not None and self.max_train_samples < 1:
            raise ValueError("max_train_samples must be >= 1")
        if self.max_eval_samples is not None and self.max_eval_samples < 1:
            raise ValueError("max_eval_samples must be >= 1")
        if self.eval_split_size is not None and self.eval_split_size <= 0:
            raise ValueError(f"eval_split_size must be > 0, got {self.eval_split_size}")


def model_name(model_args: trl.ModelConfig) -> str:
    """The model to train: `model_name_or_path`, else the embedded default."""
    return model_args.model_name_or_path or DEFAULT_MODEL


CREDIT_ASSIGNMENTS = ("sequence", "step")


@dataclass
class GRPOScriptArguments(DataArguments):
    """The rewards of a GRPO recipe (open-r1's `reward_funcs`), their options and a prompt-length filter."""

    reward_funcs: list[str] = field(
        default_factory=lambda: ["format"],
        metadata={"help": "reward names (kt_train.rewards registry: format, kt_compression, rtce_answer, ...)"},
    )
    reward_options: dict | str | None = field(
        default=None,
        metadata={"help": "options per reward, e.g. {kt_compression: {prior: gzip}} (YAML mapping or JSON text)"},
    )
    max_prompt_tokens: int | None = field(
        default=None, metadata={"help": "drop rows whose prompt has more tokens than this (None: keep every row)"}
    )
    init_adapter: str | None = field(
        default=None,
        metadata={
            "help": "a saved LoRA adapter of the base model (e.g. an SFT run's output_dir) merged into it before GRPO "
            "trains a new adapter (None: start from the base)"
        },
    )
    credit_assignment: str = field(
        default="sequence",
        metadata={
            "help": "sequence: TRL's GRPO, one advantage per completion; step: per-token advantages from a reward "
            "that verifies completions step by step (kt_compression in DSL mode: program lines), each step's "
            "return against the group's steps in the same state, no credit after a failing step "
            "(kt_train.training.step_credit)"
        },
    )
    step_credit_positive_only: bool = field(
        default=False,
        metadata={
            "help": "with credit_assignment step: only steps better than their state's mean are reinforced, worse "
            "ones get no gradient (rejection-sampling fine-tuning at the states where the samples differ)"
        },
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.reward_options, str):
            try:
                self.reward_options = json.loads(self.reward_options)
            except json.JSONDecodeError as exc:
                raise ValueError(f"reward_options is not valid JSON: {exc}") from exc
        if self.reward_options is not None and not (
            isinstance(self.reward_options, dict) and all(isinstance(v, dict) for v in self.reward_options.values())
        ):
            raise ValueError("reward_options must map reward names to mappings of options")
        if not self.reward_funcs:
            raise ValueError("reward_funcs must name at least one reward")
        if self.max_prompt_tokens is not None and self.max_prompt_tokens < 1:
            raise ValueError("max_prompt_tokens must be >= 1")
        if self.step_credit_positive_only and self.credit_assignment != "step":
            raise ValueError("step_credit_positive_only needs credit_assignment step")
        if self.credit_assignment not in CREDIT_ASSIGNMENTS:
            raise ValueError(
                f"credit_assignment must be one of {', '.join(CREDIT_ASSIGNMENTS)}, got {self.credit_assignment!r}"
            )
