"""SeqCoder SFT (KT paper §4): sequence in, the shortest DSL program that prints it out, on 10K / 100K / 1M pairs.

Usage:

    # CPU, the embedded SmolLM2-135M-Instruct with LoRA on the 10K-pair corpus: 30 steps of 8 rows, then `kt eval kt`
    # of 20 held-out sequences; about 20 minutes on 2 cores with 1 torch thread (measured: 19.6 min in all, 26 s to
    # start, 28 s a step, 15.5 min of training with eval_loss twice on 32 held-out rows, 3.7 min of evaluation;
    # docs/benchmarks.md, "SeqCoder SFT on CPU, end to end")
    accelerate launch --config_file accelerate_configs/cpu.yaml recipes/sft_kt.py \\
        --config recipes/smollm2-135m/sft_kt/config_10k.yaml

    # the paper's corpus sizes on GPUs: full fine-tuning of a small model on 100K or 1M pairs
    accelerate launch --config_file accelerate_configs/zero2.yaml recipes/sft_kt.py \\
        --config recipes/smollm2-135m/sft_kt/config_1m.yaml

    # CPU, a SeqCoder made from scratch (1.1M parameters, DSL tokenizer; every weight trained), 10K pairs
    accelerate launch --config_file accelerate_configs/cpu.yaml recipes/sft_kt.py \\
        --config recipes/seqcoder-tiny/sft_kt/config_10k.yaml

Model: `model_name_or_path` (default: the embedded SmolLM2), or with `seqcoder_size` (tiny, small, base) a SeqCoder
made from scratch (`dsl.seqcoder_model`: a seeded small Llama over the DSL tokenizer, its chat template showing the
sequence alone), made once by the main process and cached under the kt-train cache (`$KT_TRAIN_CACHE/models`), and
trained whole (`use_peft: false`).

Data: `dataset_name` is a corpus made by `kt dsl generate` (columns `sequence`, `program`); without it a corpus of
`corpus_size` pairs is generated once (seeded, deduplicated, every program checked by the interpreter) and cached
under the kt-train cache (`$KT_TRAIN_CACHE`). With `evaluations: [kt]` (`eval.post_training`), the main process
then builds a synthetic evaluation set that excludes every training sequence (`kt dsl eval-set --exclude`, in
`output_dir/kt_eval_set`) and scores the adapter on its first `eval_items` sequences in a separate process
(`kt eval kt --mode dsl --config output_dir/kt.config.json`: Accuracy, CompressionRate, Precision;
`output_dir/kt_eval/report.md`; to W&B as a run of the training's project and group when the training reports there);
a model trained whole is evaluated as itself, in the chat template saved with it.
"""

from __future__ import annotations

import logging
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from accelerate import PartialState
from datasets import Dataset
from trl import ModelConfig

from dsl.copy_curriculum import CopyPhase, copy_rows
from dsl.feedback import FEEDBACK_MAX_VALUES
from dsl.segments import with_segment_program
from dsl.seqcoder import kt_corpus_dir, to_seqcoder_chat
from dsl.seqcoder_model import SIZES, seqcoder_model_dir
from dsl.seqcoder_tokenizer import NUMBER_STYLES, check_numbers
from eval.post_training import (
    TrainedModels,
    checked_evaluations,
    eval_backend_field,
    run_evaluations,
    training_wandb,
)
from kt_train.configs import DataArguments, SFTConfig, model_name
from kt_train.training.data import (
    draw_rows,
    load_eval_split,
    load_training_dataset,
    ordered_stream,
    rows_a_step,
    rows_for_steps,
)
from kt_train.training.launch import launch
from kt_train.training.sft import evaluates, run_sft

CORPUS_SIZES = (10_000, 100_000, 1_000_000)
# Rows drawn beyond those `max_steps` reads: the ones over max_length (1,024) are dropped after the draw, 0.7% of the
# corpus's chats, 9.3% of them with execution feedback (3,389 of 36,594 drawn rows, 16 values a comment)
SPARE_ROWS = 0.02
FEEDBACK_SPARE_ROWS = 0.15
DIGITS_SPARE_ROWS = 0.05  # 2.75% of the chats are over 1,024 tokens with numbers as digits (55 of 2,000)
SEGMENTS_SPARE_ROWS = 0.05  # 1.7% of the chats are over 1,024 tokens with segment programs (52 of 3,000)
FEEDBACK_VARIANTS = ("none", "feed", "feed_ex")
PROGRAM_TARGETS = ("generator", "segments")
logger = logging.getLogger(__name__)


@dataclass
class KTScriptArguments(DataArguments):
    """The program-sequence corpus to train on."""

    corpus_size: int = field(
        default=10_000, metadata={"help": "pairs in the default corpus", "choices": list(CORPUS_SIZES)}
    )
    corpus_seed: int = field(default=42, metadata={"help": "seed of the default corpus"})
    seqcoder_size: str | None = field(
        default=None,
        metadata={
            "help": "train a SeqCoder made from scratch of this size (DSL tokenizer, seeded weights, every weight "
            "trained: use_peft false) instead of model_name_or_path (None: model_name_or_path)",
            "choices": list(SIZES),
        },
    )
    seqcoder_seed: int = field(default=0, metadata={"help": "seed of that SeqCoder's initial weights"})
    seqcoder_numbers: str = field(
        default="words",
        metadata={
            "help": "that SeqCoder's tokenizer: one token per number 0..256 (words) or one per digit (digits)",
            "choices": list(NUMBER_STYLES),
        },
    )
    execution_feedback: str = field(
        default="none",
        metadata={
            "help": "KT paper §5.3: none; feed (training programs carry `# [values]` after each line); feed_ex "
            "(feed, and the evaluation after training runs each generated line, its values shown to the model)",
            "choices": list(FEEDBACK_VARIANTS),
        },
    )
    feedback_max_values: int = field(
        default=FEEDBACK_MAX_VALUES, metadata={"help": "values in each feedback comment (then `...`)"}
    )
    program_target: str = field(
        default="generator",
        metadata={
            "help": "the program each sequence is trained to: the corpus's own (generator) or its segment program "
            "(segments: runs and literals read left to right, `dsl.segments`)",
            "choices": list(PROGRAM_TARGETS),
        },
    )
    copy_curriculum: list[str] = field(
        default_factory=list,
        metadata={
            "help": "train on copies first (`dsl.copy_curriculum`: programs `set_list` of their sequence), phase "
            "after phase, each VALUES:MAX_LENGTH:ROWS (e.g. 10:8:4800 256:8:8000 256:30:11200), then the corpus "
            "shuffled epoch after epoch, in that order (train_sampling_strategy sequential; needs max_steps)"
        },
    )
    evaluations: list[str] = field(
        default_factory=list,
        metadata={"help": "after training: kt (the adapter on held-out synthetic sequences, in a separate process)"},
    )
    eval_set_bytes: int = field(default=20_000, metadata={"help": "sequence bytes of the evaluation set"})
    eval_seed: int = field(default=0, metadata={"help": "seed of the evaluation set"})
    eval_items: int = field(default=20, metadata={"help": "sequences scored after training"})
    eval_max_new_tokens: int = field(default=256, metadata={"help": "tokens per program in that evaluation"})
    eval_batch_size: int = field(default=8, metadata={"help": "prompts per generation batch in that evaluation"})
    eval_literal_tail: bool = field(
        default=False,
        metadata={"help": "that evaluation with --literal-tail (programs that go wrong finished with a literal)"},
    )
    eval_backend: str = eval_backend_field()

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.corpus_size not in CORPUS_SIZES:
            raise ValueError(f"corpus_size must be one of {CORPUS_SIZES}, got {self.corpus_size}")
        if self.execution_feedback not in FEEDBACK_VARIANTS:
            raise ValueError(f"execution_feedback must be one of {', '.join(FEEDBACK_VARIANTS)}")
        if self.program_target not in PROGRAM_TARGETS:
            raise ValueError(f"program_target must be one of {', '.join(PROGRAM_TARGETS)}: {self.program_target!r}")
        if self.feedback_max_values < 1:
            raise ValueError(f"feedback_max_values must be >= 1, got {self.feedback_max_values}")
        if self.execution_feedback == "feed_ex" and self.eval_backend != "transformers":
            raise ValueError("execution_feedback feed_ex decodes line by line with eval_backend transformers")
        if self.seqcoder_size is not None and self.seqcoder_size not in SIZES:
            raise ValueError(f"seqcoder_size must be one of {', '.join(SIZES)}, got {self.seqcoder_size!r}")
        check_numbers(self.seqcoder_numbers)
        checked_evaluations(self.evaluations, ["kt"])
        self.copy_phases = [CopyPhase.parse(text) for text in self.copy_curriculum]


def copies_first(
    phases: list[CopyPhase], to_chat: Callable[[dict[str, Any]], dict[str, Any]], training_args: SFTConfig
) -> Callable[[Dataset], Dataset]:
    """The training rows' order for a copy curriculum: its chats first, then the corpus's, epoch after epoch, as
    many rows as `max_steps` steps take; the trainer reads them in that order."""
    if training_args.max_steps <= 0:
        raise ValueError("copy_curriculum needs max_steps: the corpus rows after it are laid out for those steps")
    if training_args.train_sampling_strategy not in ("random", "sequential"):
        raise ValueError(f"copy_curriculum reads rows in order, not by {training_args.train_sampling_strategy}")
    training_args.train_sampling_strategy = "sequential"
    copies = Dataset.from_list([to_chat(row) for row in copy_rows(phases, training_args.seed)])
    total = rows_for_steps(training_args.max_steps, rows_a_step(training_args))
    logger.info("copy curriculum: %d rows, then %d corpus rows", len(copies), total - len(copies))
    return partial(ordered_stream, copies, total=total, seed=training_args.seed)


def use_seqcoder(script_args: KTScriptArguments, model_args: ModelConfig) -> None:
    """With `seqcoder_size`: the model to train is the cached from-scratch SeqCoder (made now if need be); a config
    that also names another model, or LoRA or quantization for it, is refused."""
    if script_args.seqcoder_size is None:
        return
    if model_args.model_name_or_path is not None:
        raise ValueError(
            f"seqcoder_size {script_args.seqcoder_size} trains a SeqCoder made from scratch, model_name_or_path "
            f"{model_args.model_name_or_path} fine-tunes another model: set one of them"
        )
    if model_args.use_peft or model_args.load_in_4bit or model_args.load_in_8bit:
        raise ValueError("seqcoder_size: a model made from scratch trains every weight (use_peft: false, not 4/8-bit)")
    folder = seqcoder_model_dir(script_args.seqcoder_size, script_args.seqcoder_seed, script_args.seqcoder_numbers)
    model_args.model_name_or_path = str(folder)


def rows_to_prepare(script_args: KTScriptArguments, training_args: SFTConfig) -> int | None:
    """Corpus rows worth preparing (None: all): what `max_steps` reads, spare rows for the length filter (more with
    execution feedback, whose comments make rows longer), and the rows held out for eval_loss. A 1M corpus at 7,000
    steps of 16 rows prepares 114,440 rows, not 1M (chats, token counts and TRL's tokenization run once per
    process, ~1,000 rows/s on one core)."""
    needed = rows_for_steps(training_args.max_steps, rows_a_step(training_args))
    if needed is None:
        return None
    held_out = script_args.eval_split_size if evaluates(training_args) and script_args.eval_split_size else 0
    spare = SPARE_ROWS if script_args.execution_feedback == "none" else FEEDBACK_SPARE_ROWS
    if script_args.seqcoder_size is not None and script_args.seqcoder_numbers == "digits":
        spare = max(spare, DIGITS_SPARE_ROWS)
    if script_args.program_target == "segments":
        spare = max(spare, SEGMENTS_SPARE_ROWS)
    return math.ceil(needed * (1 + spare)) + (int(held_out) if held_out >= 1 else math.ceil(needed * held_out))


def main(script_args: KTScriptArguments, training_args: SFTConfig, model_args: ModelConfig) -> None:
    use_seqcoder(script_args, model_args)
    feedback = None if script_args.execution_feedback == "none" else script_args.feedback_max_values
    to_chat = partial(to_seqcoder_chat, feedback_max_values=feedback)
    arrange = copies_first(script_args.copy_phases, to_chat, training_args) if script_args.copy_phases else None
    corpus = kt_corpus_dir(script_args.dataset_name, script_args.corpus_size, script_args.corpus_seed)
    dataset = load_training_dataset(str(corpus), script_args.dataset_train_split)
    missing = {"sequence", "program"} - set(dataset.column_names)
    if missing:
        raise ValueError(f"the corpus lacks the column(s) {sorted(missing)}; make it with `kt dsl generate`")
    drawn = draw_rows(dataset, rows_to_prepare(script_args, training_args), training_args.seed)
    if len(drawn) < len(dataset):
        logger.info(
            "%d steps read at most %d of the corpus's %d rows: preparing those (seed %d)",
            training_args.max_steps,
            len(drawn),
            len(dataset),
            training_args.seed,
        )
    dataset = drawn
    test = load_eval_split(str(corpus), script_args.dataset_test_split) if evaluates(training_args) else None
    if script_args.program_target == "segments":
        dataset = dataset.map(with_segment_program, desc="segment programs")
        test = None if test is None else test.map(with_segment_program)
    chats = dataset.map(to_chat, remove_columns=dataset.column_names, desc="SeqCoder chats")
    eval_chats = None if test is None else test.map(to_chat, remove_columns=test.column_names)
    run = run_sft(
        chats,
        script_args,
        training_args,
        model_args,
        dataset_name="kt-dsl",
        tags=["kt", "seqcoder"],
        eval_dataset=eval_chats,
        arrange_train=arrange,
    )
    state = PartialState()
    if state.is_main_process and script_args.evaluations:
        trained = TrainedModels(
            Path(training_args.output_dir),
            model_name(model_args),
            {"kt": training_args.output_dir},
            training_args.seed,
            trained_now=run.trainer is not None,
            context={"corpus": str(corpus)},
            **training_wandb(training_args),  # the evaluation logs beside the training run
        )
        run_evaluations(script_args.evaluations, trained, script_args)
    state.wait_for_everyone()


SCRIPT_ARGUMENTS = KTScriptArguments

if __name__ == "__main__":
    sys.exit(launch(main, SCRIPT_ARGUMENTS))
