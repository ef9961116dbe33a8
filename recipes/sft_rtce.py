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
once and cached under the kt-train cache (`$KT_TRAIN_CACHE`). Adapters go to `output_dir/<algorithm>/` (with
`adapters: shared`, one adapter on every chosen algorithm's rows in `output_dir/all/`). With
`evaluations: [rtce]` (`eval.post_training`), the main process then scores the base model and every adapter on
held-out inputs in a separate process (`kt eval rtce --config output_dir/rtce.config.json`, each adapter on its own
algorithm; a model cannot be reloaded inside a live ZeRO-3 process).
"""

from __future__ import annotations

import copy
import json
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from accelerate import PartialState
from datasets import Dataset
from trl import ModelConfig

from eval.post_training import (
    TrainedModels,
    checked_evaluations,
    eval_backend_field,
    rtce_learning_lead,
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
from tracegen.sft_data import COMBINED, COMPLETIONS

logger = logging.getLogger(__name__)
ADAPTER_LAYOUTS = ("per_algorithm", "shared")
SHARED = COMBINED  # the shared adapter's folder and the combined dataset's name: `all`


@dataclass
class RTCEScriptArguments(DataArguments):
    """Which adapters to train and the default corpus they are trained on."""

    algorithms: list[str] = field(
        default_factory=lambda: list(ALGORITHMS),
        metadata={"help": "one adapter per algorithm, trained one after the other", "choices": sorted(ALGORITHMS)},
    )
    adapters: str = field(
        default="per_algorithm",
        metadata={
            "help": "per_algorithm: one adapter per algorithm, in output_dir/<algorithm> (the paper); shared: "
            "one adapter on every chosen algorithm's rows, in output_dir/all",
            "choices": ADAPTER_LAYOUTS,
        },
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
    template_max_steps: int = field(
        default=CorpusSettings.template_max_steps,
        metadata={"help": "default corpus: steps each trace narration shows"},
    )
    input_lengths: list[int] | None = field(
        default=None,
        metadata={
            "help": "default corpus: [min, max] characters of each input, a window cut per input (None: the "
            "paper's full inputs)"
        },
    )
    completions: str = field(
        default=CorpusSettings.completions,
        metadata={
            "help": "default corpus: assistant turns, trace (narrated execution + answer), answer, or both",
            "choices": COMPLETIONS,
        },
    )
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
    eval_roundtrip: bool = field(
        default=True,
        metadata={"help": "that evaluation's round trips (the model decodes its own encoding; with O/P and I/P Pred)"},
    )
    eval_batch_size: int = field(default=8, metadata={"help": "prompts per generation batch in that evaluation"})
    eval_backend: str = eval_backend_field()
    max_steps_by_algorithm: dict[str, int] | str | None = field(
        default_factory=dict,
        metadata={
            "help": "optimizer steps of one algorithm's adapter in place of max_steps (YAML: {rle: 64}; command "
            "line: --max_steps_by_algorithm '{rle: 64}', '{}' for none); the algorithms a 135M model learns "
            "slowest get the most of a fixed time budget"
        },
    )
    eval_checkpoints: bool = field(
        default=False,
        metadata={
            "help": "that evaluation also scores each adapter's saved checkpoints (held-out EM / ES against step)"
        },
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        unknown = sorted(set(self.algorithms) - set(ALGORITHMS))
        if unknown or not self.algorithms:
            raise ValueError(f"algorithms must be a non-empty subset of {sorted(ALGORITHMS)}, got {unknown}")
        checked_evaluations(self.evaluations, ["rtce"])
        if isinstance(self.max_steps_by_algorithm, str):  # from the command line (argparse gives text)
            self.max_steps_by_algorithm = yaml.safe_load(self.max_steps_by_algorithm)
        steps = self.max_steps_by_algorithm = self.max_steps_by_algorithm or {}
        if not isinstance(steps, dict):
            raise ValueError(f"max_steps_by_algorithm is a mapping such as {{rle: 64}}, got {steps!r}")
        if set(steps) - set(ALGORITHMS) or any(not isinstance(n, int) or n < 1 for n in steps.values()):
            raise ValueError(
                f"max_steps_by_algorithm maps algorithms of {sorted(ALGORITHMS)} to steps >= 1, got {steps}"
            )
        # the steps of algorithms not chosen (`--algorithms rle` with the demo config) do not apply
        steps = self.max_steps_by_algorithm = {name: n for name, n in steps.items() if name in self.algorithms}
        if steps and self.adapters == "shared":
            raise ValueError("max_steps_by_algorithm needs adapters: per_algorithm (a shared adapter has one run)")
        if self.input_lengths is not None and len(self.input_lengths) != 2:
            raise ValueError(f"input_lengths is [min, max], got {self.input_lengths}")
        self.corpus_settings()  # checks the corpus keys

    def runs(self) -> dict[str, list[str]]:
        """The training runs by folder name, each with the algorithms it trains on and answers for."""
        if self.adapters == "shared":
            return {SHARED: list(self.algorithms)}
        return {algorithm: [algorithm] for algorithm in self.algorithms}

    def corpus_settings(self) -> CorpusSettings:
        lengths = None if self.input_lengths is None else tuple(self.input_lengths)
        return CorpusSettings(
            self.corpus_seed,
            self.num_inputs,
            self.eval_fraction,
            self.template_max_steps,
            self.prompt_style,
            lengths,
            self.completions,
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


def adapter_args(training_args: SFTConfig, name: str, max_steps: int | None = None) -> SFTConfig:
    """The training arguments of one adapter (an algorithm's, or the shared one): its own folder and run name, and its
    own `max_steps` when given."""
    args = copy.copy(training_args)
    args.output_dir = str(Path(training_args.output_dir) / name)
    args.run_name = f"{Path(training_args.output_dir).name}-{name}"
    if max_steps is not None:
        args.max_steps = max_steps
    return args


def trained_step(run_dir: Path) -> int | None:
    """The optimizer step a saved run or checkpoint ends at (`trainer_state.json`), None when it has none."""
    state = run_dir / "trainer_state.json"
    return json.loads(state.read_text(encoding="utf-8"))["global_step"] if state.is_file() else None


def evaluated_adapters(
    output: Path, runs: dict[str, list[str]], checkpoints: bool
) -> tuple[dict[str, str], dict[str, int]]:
    """The adapters the evaluation scores by label: each algorithm's (its run's folder) and, with `checkpoints`, its
    run's saved checkpoints before the last as `<algorithm>@<step>`; and the training step of each label."""
    adapters: dict[str, str] = {}
    steps: dict[str, int] = {}
    for name, algorithms in runs.items():
        adapters |= {algorithm: str(output / name) for algorithm in algorithms}
        final = trained_step(output / name)
        if not checkpoints or final is None:
            continue
        saved = sorted((output / name).glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
        for algorithm in algorithms:
            steps[algorithm] = final
            for checkpoint in saved:
                step = trained_step(checkpoint)
                if step is not None and step < final and (checkpoint / "adapter_config.json").is_file():
                    adapters[f"{algorithm}@{step}"] = str(checkpoint)
                    steps[f"{algorithm}@{step}"] = step
    return adapters, steps


def run_datasets(
    corpus: Path, name: str, algorithms: list[str], script_args: RTCEScriptArguments
) -> tuple[Dataset, Dataset | None]:
    """The training rows of one run (its algorithms' rows of `corpus/<name>`) and its held-out `test` rows."""
    if not (corpus / name).is_dir():
        raise DatasetUnavailableError(f"no {name} dataset in {corpus} (no kept traces for it?)")
    dataset = load_training_dataset(str(corpus / name), script_args.dataset_train_split)
    test = load_eval_split(str(corpus / name), script_args.dataset_test_split)
    if name == SHARED:  # the combined dataset: only the chosen algorithms
        dataset = dataset.filter(lambda row: row["algorithm"] in algorithms)
        test = None if test is None else test.filter(lambda row: row["algorithm"] in algorithms)
    return dataset, test


def main(script_args: RTCEScriptArguments, training_args: SFTConfig, model_args: ModelConfig) -> None:
    corpus = corpus_dir(script_args)
    runs = script_args.runs()
    trained_now = False
    for name, algorithms in runs.items():
        dataset, test = run_datasets(corpus, name, algorithms, script_args)
        args = adapter_args(training_args, name, script_args.max_steps_by_algorithm.get(name))
        run = run_sft(
            dataset,
            script_args,
            args,
            model_args,
            dataset_name=f"rtce-{name}",
            tags=["rtce", *algorithms],
            eval_dataset=test if evaluates(args) else None,
        )
        trained_now = trained_now or run.trainer is not None
    state = PartialState()
    if state.is_main_process:
        output = Path(training_args.output_dir)
        if script_args.evaluations:
            adapters, steps = evaluated_adapters(output, runs, script_args.eval_checkpoints)
            trained = TrainedModels(
                output,
                model_name(model_args),
                adapters,
                training_args.seed,
                trained_now,
                context={"rtce_corpus": str(corpus.parent), "adapter_steps": steps},
                **training_wandb(training_args),
            )
            run_evaluations(script_args.evaluations, trained, script_args)
        title = "RTCE SFT: " + ("one adapter for all algorithms" if SHARED in runs else "one adapter per algorithm")
        report = write_report(
            output, list(runs), title, output / "eval" / "report.md", rtce_learning_lead(output / "eval")
        )
        print(f"adapters: {', '.join(str(output / name) for name in runs)}")
        print(f"report: {report}")
        wandb = [run for name in runs for run in wandb_runs(output / name)]
        if wandb:
            print(f"W&B runs (sync with `wandb sync DIR` when offline): {', '.join(map(str, wandb))}")
    state.wait_for_everyone()


SCRIPT_ARGUMENTS = RTCEScriptArguments

if __name__ == "__main__":
    sys.exit(launch(main, SCRIPT_ARGUMENTS))
