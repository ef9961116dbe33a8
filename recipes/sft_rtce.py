"""RTCE SFT (paper §6.3, Appendix D): one LoRA adapter per algorithm on execution-trace reasoning.

Usage:

    # CPU, the embedded SmolLM2-135M-Instruct (minutes; what `make demo` runs)
    accelerate launch --config_file accelerate_configs/cpu.yaml recipes/sft_rtce.py \\
        --config recipes/smollm2-135m/sft_rtce/config_cpu.yaml

    # the paper: QwQ-32B, LoRA r8 on all linear layers, 4 GPUs with ZeRO-3, one launch per algorithm
    for algorithm in lzw ae rle huffman; do
        accelerate launch --config_file accelerate_configs/zero3.yaml recipes/sft_rtce.py \\
            --config recipes/QwQ-32B/sft_rtce/config_paper.yaml --algorithms $algorithm
    done

Data: `dataset_name` is a corpus made by `kt sft-data build` (one dataset folder per algorithm); without it the
default corpus (benchmark -> traces -> template translations -> SFT chats, evaluation inputs held out) is built
once and cached under the kt-train cache (`$KT_TRAIN_CACHE`). Adapters go to `output_dir/<algorithm>/`. With
`evaluations: [rtce]` (`eval.post_training`), the main process then scores the base model and every adapter on
held-out inputs in a separate process (`kt eval rtce --config output_dir/rtce.config.json`, each adapter on its own
algorithm; a model cannot be reloaded inside a live ZeRO-3 process).
"""

from __future__ import annotations

import copy
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path

from accelerate import PartialState
from trl import ModelConfig

from eval.post_training import (
    TrainedModels,
    checked_evaluations,
    eval_backend_field,
    run_evaluations,
    training_wandb,
)
from kt_train.configs import DataArguments, SFTConfig, model_name
from kt_train.models import cache_dir
from kt_train.training.data import DatasetUnavailableError, load_eval_split, load_training_dataset
from kt_train.training.launch import launch
from kt_train.training.report import wandb_runs, write_report
from kt_train.training.sft import evaluates, run_sft
from tracegen.algorithms import ALGORITHMS
from tracegen.pipeline import CorpusSettings, build_rtce_sft_corpus
from tracegen.prompts import PROMPT_STYLES

logger = logging.getLogger(__name__)


@dataclass
class RTCEScriptArguments(DataArguments):
    """Which adapters to train and the default corpus they are trained on."""

    algorithms: list[str] = field(
        default_factory=lambda: ["lzw", "ae", "rle", "huffman"],
        metadata={"help": "one adapter per algorithm, trained one after the other", "choices": sorted(ALGORITHMS)},
    )
    corpus_seed: int = field(default=42, metadata={"help": "default corpus: seed of the benchmark inputs"})
    num_inputs: int = field(default=250, metadata={"help": "default corpus: benchmark inputs"})
    eval_fraction: float = field(default=0.2, metadata={"help": "default corpus: share of inputs held out"})
    prompt_style: str = field(
        default="paper",
        metadata={"help": "default corpus: prompt style (paper, release-blind, demo)", "choices": PROMPT_STYLES},
    )
    template_max_steps: int = field(default=40, metadata={"help": "default corpus: steps each trace narration shows"})
    evaluations: list[str] = field(
        default_factory=list,
        metadata={"help": "after training: rtce (base vs adapters on held-out inputs, in a separate process)"},
    )
    eval_items: int = field(default=5, metadata={"help": "held-out inputs per algorithm in that evaluation"})
    eval_max_new_tokens: int = field(default=512, metadata={"help": "tokens per answer in that evaluation"})
    eval_tasks: list[str] = field(
        default_factory=lambda: ["output_pred"],
        metadata={"help": "tasks of that evaluation (all four and round trips: the paper's full evaluation)"},
    )
    eval_temperatures: list[float] = field(default_factory=lambda: [0.0], metadata={"help": "0: greedy"})
    eval_n: int = field(default=1, metadata={"help": "completions per prompt in that evaluation (Pass@5: 5)"})
    eval_backend: str = eval_backend_field()

    def __post_init__(self) -> None:
        super().__post_init__()
        unknown = sorted(set(self.algorithms) - set(ALGORITHMS))
        if unknown or not self.algorithms:
            raise ValueError(f"algorithms must be a non-empty subset of {sorted(ALGORITHMS)}, got {unknown}")
        checked_evaluations(self.evaluations, ["rtce"])

    def corpus_settings(self) -> CorpusSettings:
        return CorpusSettings(
            self.corpus_seed, self.num_inputs, self.eval_fraction, self.template_max_steps, self.prompt_style
        )


def corpus_dir(script_args: RTCEScriptArguments) -> Path:
    """The SFT corpus: `dataset_name`, else the cached default corpus (built by the main process first)."""
    if script_args.dataset_name is not None:
        return Path(script_args.dataset_name)
    settings = script_args.corpus_settings()
    root = cache_dir() / "data" / settings.key()
    with PartialState().main_process_first():
        build_rtce_sft_corpus(root, settings, progress=PartialState().is_main_process)
    return root / "sft"


def adapter_args(training_args: SFTConfig, algorithm: str) -> SFTConfig:
    """The training arguments of one algorithm's adapter: its own output folder and run name."""
    args = copy.copy(training_args)
    args.output_dir = str(Path(training_args.output_dir) / algorithm)
    args.run_name = f"{Path(training_args.output_dir).name}-{algorithm}"
    return args


def main(script_args: RTCEScriptArguments, training_args: SFTConfig, model_args: ModelConfig) -> None:
    corpus = corpus_dir(script_args)
    trained_now = False
    for algorithm in script_args.algorithms:
        if not (corpus / algorithm).is_dir():
            raise DatasetUnavailableError(f"no {algorithm} dataset in {corpus} (no kept traces for it?)")
        dataset = load_training_dataset(str(corpus / algorithm), script_args.dataset_train_split)
        test = load_eval_split(str(corpus / algorithm), script_args.dataset_test_split)
        args = adapter_args(training_args, algorithm)
        run = run_sft(dataset, script_args, args, model_args, dataset_name=f"rtce-{algorithm}",
                      tags=["rtce", algorithm], eval_dataset=test if evaluates(args) else None)  # fmt: skip
        trained_now = trained_now or run.trainer is not None
    state = PartialState()
    if state.is_main_process:
        output = Path(training_args.output_dir)
        if script_args.evaluations:
            adapters = {algorithm: str(output / algorithm) for algorithm in script_args.algorithms}
            trained = TrainedModels(output, model_name(model_args), adapters, training_args.seed, trained_now,
                                    context={"rtce_corpus": str(corpus.parent)},
                                    **training_wandb(training_args))  # fmt: skip
            run_evaluations(script_args.evaluations, trained, script_args)
        report = write_report(
            output, script_args.algorithms, "RTCE SFT: one adapter per algorithm", output / "eval" / "report.md"
        )
        print(f"adapters: {', '.join(str(output / a) for a in script_args.algorithms)}")
        print(f"report: {report}")
        runs = [run for a in script_args.algorithms for run in wandb_runs(output / a)]
        if runs:
            print(f"W&B runs (sync with `wandb sync DIR` when offline): {', '.join(map(str, runs))}")
    state.wait_for_everyone()


SCRIPT_ARGUMENTS = RTCEScriptArguments

if __name__ == "__main__":
    sys.exit(launch(main, SCRIPT_ARGUMENTS))
