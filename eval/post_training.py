"""Evaluations after training, by name: a recipe's `evaluations: [kt]` (or `[rtce]`, `[nl]`) runs them in order.

Each entry of `EVALUATIONS` prepares what its evaluation needs (a held-out KT set, the expression suite) and returns
the `kt` command and its option values; `run_evaluations` writes those values to `<output>/<name>.config.json` and
runs `kt ... --config FILE` in a separate process (a model cannot be reloaded inside a live ZeRO-3 process). The
evaluation folders follow the run contract (`kt_train.stages`): when this invocation trained, the adapters are new
and the evaluation starts afresh (`--overwrite`); when the training had finished before, an interrupted evaluation
resumes. A failed evaluation is reported, never raised: the adapters are saved.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainedModels:
    """What a recipe trained: the base model, its adapters by label, where they are and how the run was set."""

    output_dir: Path
    model: str
    adapters: dict[str, str]
    seed: int
    trained_now: bool = field(default=True)
    wandb_project: str | None = None
    wandb_group: str | None = None
    """The W&B project and group of the training run (None: it did not report to W&B): its evaluations log there."""
    context: dict[str, Any] = field(default_factory=dict)
    """Recipe data an evaluation needs: `corpus` (KT: the training corpus), `rtce_corpus` (RTCE: the default corpus
    root with benchmark/ and the held-out ids), `adapter_steps` (RTCE: the training step of each adapter label)."""


@dataclass(frozen=True)
class Evaluation:
    """A prepared evaluation: the `kt` subcommand, its option values and the report it writes."""

    command: list[str]
    options: dict[str, Any]

    @property
    def report(self) -> Path:
        return Path(self.options["output"]) / "report.md"


EvaluationBuilder = Callable[[TrainedModels, Any], "Evaluation | None"]
EVAL_BACKENDS = ("transformers", "vllm")
"""Backends of a post-training evaluation (in process: the adapters are folders this run just wrote)."""


def eval_backend_field() -> Any:
    """The recipes' `eval_backend` option: which backend generates in their post-training evaluation."""
    return field(
        default="transformers",
        metadata={
            "help": "backend of that evaluation (vllm: one engine, each adapter per request)",
            "choices": EVAL_BACKENDS,
        },
    )


def training_wandb(training_args: Any) -> dict[str, str | None]:
    """`wandb_project` and `wandb_group` of `TrainedModels`: where a training run that reports to W&B logged (the
    Trainer's W&B callback: WANDB_PROJECT, else transformers' "huggingface"), else None."""
    from kt_train.training.wandb_logging import reports_to_wandb

    if not reports_to_wandb(training_args):
        return {"wandb_project": None, "wandb_group": None}
    project = training_args.wandb_project or os.environ.get("WANDB_PROJECT") or "huggingface"
    return {
        "wandb_project": project,
        "wandb_group": training_args.wandb_run_group or os.environ.get("WANDB_RUN_GROUP"),
    }


def backend_option(script_args: Any) -> dict[str, Any]:
    """The evaluation's `backend` option from a recipe's `eval_backend`; vLLM without a GPU starts eager (~1 minute
    on 2 cores, against ~4 with torch.compile: README, generation backends)."""
    backend = getattr(script_args, "eval_backend", "transformers")
    if backend == "vllm":
        import torch

        return {"backend": backend, "vllm_eager": not torch.cuda.is_available()}
    return {"backend": backend}


def kt_evaluation(trained: TrainedModels, script_args: Any) -> Evaluation | None:
    """`kt eval kt --mode dsl` of the adapter (or of a model trained whole) on a synthetic set that excludes every
    training sequence."""
    from dsl.corpus import CorpusError, build_eval_set

    eval_set = trained.output_dir / "kt_eval_set"
    exclude, workers = [Path(trained.context["corpus"])], os.cpu_count() or 1
    try:
        build_eval_set(eval_set, script_args.eval_set_bytes, script_args.eval_seed, exclude, workers=workers)
    except (CorpusError, ValueError, OSError) as exc:
        print(f"could not build the evaluation set ({exc}); the adapter is saved")
        return None
    model, adapter = trained.model, trained.adapters["kt"]
    if not (Path(adapter) / "adapter_config.json").is_file():  # trained whole (use_peft: false): the model itself
        model, adapter = adapter, None
    options = {
        "dataset": str(eval_set),
        "output": str(trained.output_dir / "kt_eval"),
        "mode": "dsl",
        "model": model,
        "adapter": adapter,
        "limit": script_args.eval_items,
        "max_new_tokens": script_args.eval_max_new_tokens,
        "seed": trained.seed,
        **backend_option(script_args),
        "batch_size": getattr(script_args, "eval_batch_size", 8),
        "literal_tail": getattr(script_args, "eval_literal_tail", False),
    }
    if getattr(script_args, "execution_feedback", "none") == "feed_ex":
        options |= {"execution_feedback": True, "feedback_max_values": script_args.feedback_max_values}
    return Evaluation(["eval", "kt"], options)


def rtce_evaluation(trained: TrainedModels, script_args: Any) -> Evaluation | None:
    """`kt eval rtce` of the base model and each algorithm's adapter on the held-out inputs of the default corpus."""
    from eval.rtce.evaluate import adapter_algorithm
    from tracegen.pipeline import EVAL_IDS_FILE

    corpus = Path(trained.context["rtce_corpus"])
    if not (corpus / "benchmark").is_dir() or not (corpus / EVAL_IDS_FILE).is_file():
        print(f"skipping the evaluation: {corpus} has no benchmark/ and {EVAL_IDS_FILE} (not a default corpus)")
        return None
    both = {"output_pred", "input_pred"} <= set(script_args.eval_tasks)
    roundtrip = both and getattr(script_args, "eval_roundtrip", True)
    options = {
        "benchmark": str(corpus / "benchmark"),
        "ids": str(corpus / EVAL_IDS_FILE),
        "output": str(trained.output_dir / "eval"),
        "model": trained.model,
        "adapters": dict(trained.adapters),
        "algorithms": list(dict.fromkeys(map(adapter_algorithm, trained.adapters))),
        "tasks": list(script_args.eval_tasks),
        "items": script_args.eval_items,
        "temperatures": list(script_args.eval_temperatures),
        "n": script_args.eval_n,
        "max_new_tokens": script_args.eval_max_new_tokens,
        "seed": trained.seed,
        "roundtrip": roundtrip,
        "batch_size": getattr(script_args, "eval_batch_size", 8),
        "adapter_steps": dict(trained.context.get("adapter_steps", {})),
        **backend_option(script_args),
    }
    return Evaluation(["eval", "rtce"], options)


def nl_evaluation(trained: TrainedModels, script_args: Any) -> Evaluation | None:
    """`kt nl run`: the round trip of the base model and the fine-tuned one, with the deterministic participants."""
    from dsl.expr.suite import SuiteConfig, make_suite
    from kt_train.models import cache_dir

    suite = cache_dir() / "data" / "nl-suite-arithmetic-seed0"
    if not (suite / "suite.json").is_file():
        make_suite(SuiteConfig(), suite)
    lms = [f"base={trained.model}", *(f"{label}={trained.model}@{path}" for label, path in trained.adapters.items())]
    options = {
        "suite": str(suite),
        "output": str(trained.output_dir / "nl_eval"),
        "generators": [*lms, "sexpr", "procedural"],
        "extractors": [*lms, "parser"],
        "max_expressions": script_args.eval_expressions,
        "generator_shots": script_args.eval_generator_shots,
        "extractor_shots": script_args.eval_extractor_shots,
        "generator_tokens": script_args.eval_generator_tokens,
        "extractor_tokens": script_args.eval_extractor_tokens,
        "seed": trained.seed,
        **backend_option(script_args),
    }
    return Evaluation(["nl", "run"], options)


EVALUATIONS: dict[str, EvaluationBuilder] = {"kt": kt_evaluation, "rtce": rtce_evaluation, "nl": nl_evaluation}
"""The evaluations a recipe can name (`evaluations: [...]`)."""


def run_evaluation(name: str, evaluation: Evaluation, trained: TrainedModels) -> int:
    """Run one prepared evaluation in a separate process, logging to the training's W&B project and group when it
    reported to W&B (a run of its own: the training's run id is not passed on); its exit status."""
    config = trained.output_dir / f"{name}.config.json"
    options = dict(evaluation.options)
    if trained.wandb_project is not None:
        options |= {"wandb_project": trained.wandb_project, "wandb_group": trained.wandb_group}
    config.write_text(json.dumps(options, indent=2) + "\n", encoding="utf-8")
    command = [sys.executable, "-m", "kt_train.cli", *evaluation.command, "--config", str(config)]
    if trained.trained_now:
        command.append("--overwrite")  # new adapters: the earlier evaluation is of others
    logger.info("evaluating in a separate process: %s", " ".join(command))
    environment = {k: v for k, v in os.environ.items() if k not in ("WANDB_RUN_ID", "WANDB_RESUME")}
    return subprocess.run(command, check=False, env=environment).returncode


def run_evaluations(names: Sequence[str], trained: TrainedModels, script_args: Any) -> dict[str, Path | None]:
    """Prepare and run the evaluations `names` in order; the report of each (None: it failed, reported)."""
    unknown = sorted(set(names) - set(EVALUATIONS))
    if unknown:
        raise ValueError(f"unknown evaluation(s) {', '.join(unknown)} (known: {', '.join(EVALUATIONS)})")
    reports: dict[str, Path | None] = {}
    for name in names:
        evaluation = EVALUATIONS[name](trained, script_args)
        if evaluation is None or run_evaluation(name, evaluation, trained) != 0:
            print(f"the {name} evaluation failed (see above); the adapters are saved")
            reports[name] = None
            continue
        reports[name] = evaluation.report
        print(f"report: {evaluation.report}")
    return reports


def checked_evaluations(names: Sequence[str], allowed: Mapping[str, Any] | Sequence[str]) -> list[str]:
    """`names` if each is one a recipe can run (`allowed`), else one ValueError naming the others."""
    bad = [name for name in names if name not in allowed]
    if bad:
        raise ValueError(f"evaluations: {', '.join(bad)} not available here (this recipe runs: {', '.join(allowed)})")
    return list(names)


def rtce_learning_lead(evaluation: Path) -> str | None:
    """Whether training helped (the evaluation's `learning` table, in words), to open the run's report; None before
    an evaluation."""
    from eval.rtce.learning import learning_markdown

    summary = evaluation / "summary.json"
    if not summary.is_file():
        return None
    return learning_markdown(json.loads(summary.read_text(encoding="utf-8")).get("learning", []))


__all__ = [
    "EVALUATIONS",
    "Evaluation",
    "TrainedModels",
    "checked_evaluations",
    "rtce_learning_lead",
    "run_evaluation",
    "run_evaluations",
]
