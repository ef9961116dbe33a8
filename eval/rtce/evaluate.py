"""`kt eval rtce`: the base model and its adapters on the four RTCE tasks, scored, with round trips and a report.

Per model (`base`, then each adapter): completions at every temperature (`<label>.completions.jsonl`, resumable),
scored rows (`scored.jsonl`), round-trip second calls (`<label>.roundtrips.jsonl`, resumable), then `summary.json`,
`report.md` and the plots (`eval.rtce.report`). `--predictions` scores existing completions instead (no round trips:
they need the model). The folder follows the run contract (`kt_train.stages`): a rerun with other settings (models
and adapters by content, sampling, the benchmark's bytes) is refused unless `--overwrite`; failed requests are made
again by reruns; `--num-shards/--shard-index` split the prompts, a run without them merges the shards.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from eval.predictions import read_prediction_rows
from eval.rtce.generation import ModelSpec, generate_rows
from eval.rtce.items import TASK_NAMES, RTCEItem, load_items
from eval.rtce.reflection import ReflectionConfig
from eval.rtce.reflection_job import accuracy_by_round, reflection_markdown, run_reflection
from eval.rtce.repair import repair_rows, with_repairs
from eval.rtce.report import log_to_wandb, write_report
from eval.rtce.roundtrip import roundtrip_cases, run_roundtrips
from eval.rtce.scoring import SCORING_MODES, ReleaseContext, Scoring, score_completions
from kt_train.generation import FREE_BACKEND_OPTIONS, BackendOptions, GenerationBackend, SamplingConfig, make_backend
from kt_train.records import write_jsonl
from kt_train.stages import RunFolder, RunOptions, adapter_hash, content_hash, model_hash
from tracegen.algorithms import PAPER_ORDER
from tracegen.benchmark import CORPUS_FILE, load_summary
from tracegen.tasks import Task

if TYPE_CHECKING:
    from kt_train.vllm_backend import VLLMBackend

SCORED_FILE = "scored.jsonl"
BASE = "base"
VERSION = 3
"""The code version of the evaluation's output (part of its settings): raised when rows change meaning."""


@dataclass
class RTCEEvalConfig(BackendOptions):
    """One RTCE evaluation run."""

    benchmark: str = field(metadata={"help": "benchmark folder (`kt rtce build`) holding rtce.json", "metavar": "DIR"})
    output: str = field(
        metadata={"help": "folder for completions, scores, round trips, summary, report, plots", "metavar": "DIR"}
    )
    model: str | None = field(
        default=None, metadata={"help": "base model: embedded name, path or hub id (None: score --predictions)"}
    )
    adapters: dict[str, str] = field(
        default_factory=dict,
        metadata={
            "help": "LoRA adapter folder by label (repeatable)",
            "metavar": "LABEL=DIR",
            "aliases": ["--adapter"],
        },
    )
    predictions: str | None = field(
        default=None, metadata={"help": "JSONL of existing completions (id, completions)", "metavar": "FILE"}
    )
    algorithms: list[str] = field(
        default_factory=lambda: list(PAPER_ORDER), metadata={"help": "algorithms", "choices": PAPER_ORDER}
    )
    tasks: list[str] = field(
        default_factory=lambda: list(TASK_NAMES), metadata={"help": "tasks", "choices": TASK_NAMES}
    )
    ids: str | None = field(
        default=None,
        metadata={"help": "file of input ids to evaluate (JSON list or one a line; default: all)", "metavar": "FILE"},
    )
    items: int | None = field(default=None, metadata={"help": "inputs per algorithm (the first N by id)"})
    temperatures: list[float] = field(default_factory=lambda: [0.2, 0.8], metadata={"help": "sampling temperatures"})
    n: int = field(default=5, metadata={"help": "completions per prompt (Pass@5 needs n >= 5)"})
    top_p: float = field(default=0.95, metadata={"help": "nucleus sampling"})
    max_new_tokens: int = field(default=16384, metadata={"help": "tokens per completion (the paper: 16,384)"})
    seed: int = field(default=42, metadata={"help": "sampling seed"})
    scoring: Scoring = field(
        default="strict",
        metadata={
            "help": "the EM behind the headline tables: strict (the paper's text: case-folded strings, JSON answers) "
            "or release (the public release's scorer and its leniencies); the report shows both",
            "choices": SCORING_MODES,
        },
    )
    batch_size: int = field(default=8, metadata={"help": "prompts per generation batch (and per resume step)"})
    adapter_scope: Literal["own", "all"] = field(
        default="own",
        metadata={
            "help": "own: an adapter labelled with an algorithm (lzw=DIR, or a checkpoint of it: lzw@20=DIR) answers "
            "that algorithm only; all"
        },
    )
    adapter_steps: dict[str, int] = field(
        default_factory=dict,
        metadata={
            "help": "the training step of an adapter label (repeatable): the report's held-out EM / ES against step",
            "metavar": "LABEL=STEP",
        },
    )
    format_repair: bool = field(
        default=False, metadata={"help": "rewrite completions without an extractable answer (Appendix E) first"}
    )
    roundtrip: bool = field(default=True, metadata={"help": "run the round-trip second calls"})
    reflection_rounds: int = field(
        default=0, metadata={"help": "self-reflection rounds on each first completion (0: none; the paper: 2)"}
    )
    reflection_gen_tokens: int = field(
        default=512, metadata={"help": "tokens per critique / revision / repair call (the paper: 512)"}
    )
    retries: int = field(default=2, metadata={"help": "retries of a failed generation request"})
    backoff_s: float = field(default=5.0, metadata={"help": "seconds before a retry"})
    wandb_project: str | None = field(default=None, metadata={"help": "log tables and plots to this W&B project"})
    wandb_group: str | None = field(
        default=None, metadata={"help": "the W&B group of that run (a training's evaluations log in its group)"}
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if (self.model is None) == (self.predictions is None):
            raise ValueError("give exactly one of --model (generate) and --predictions (score existing completions)")
        if self.adapters and self.model is None:
            raise ValueError("--adapter needs --model")
        self.check_model(self.model)
        for label, path in self.adapters.items():
            self.check_adapter(path)
            if label == BASE:
                raise ValueError(f"the label {BASE!r} is the base model's; name the adapter otherwise")
            if not (Path(path) / "adapter_config.json").is_file():
                raise FileNotFoundError(f"no adapter_config.json in {path} (adapter {label})")
        try:
            self.adapter_steps = {label: int(step) for label, step in self.adapter_steps.items()}
        except ValueError as exc:
            raise ValueError(f"--adapter-steps takes LABEL=STEP with an integer step ({exc})") from None
        if self.n < 1 or not self.temperatures:
            raise ValueError("--n must be >= 1 and --temperatures non-empty")

    def sampling(self) -> SamplingConfig:
        return SamplingConfig(
            top_p=self.top_p, top_k=0, max_new_tokens=self.max_new_tokens, n=self.n, seed=self.seed, stop=["[/ANSWER]"]
        )

    def answers(self, spec: ModelSpec, items: Sequence[RTCEItem]) -> list[RTCEItem]:
        """The items a model answers: the base model all; an algorithm's adapter its own (scope `own`)."""
        algorithm = adapter_algorithm(spec.label)
        if spec.adapter is None or self.adapter_scope == "all" or algorithm not in PAPER_ORDER:
            return list(items)
        return [item for item in items if item.algorithm == algorithm]

    def specs(self) -> list[ModelSpec]:
        assert self.model is not None  # checked above
        return [
            ModelSpec(BASE, self.model),
            *(ModelSpec(label, self.model, path) for label, path in self.adapters.items()),
        ]


def adapter_algorithm(label: str) -> str:
    """The algorithm part of an adapter label: `lzw` for `lzw` and for its checkpoint `lzw@20`."""
    return label.split("@", 1)[0]


BackendFactory = Callable[[ModelSpec, RTCEEvalConfig], GenerationBackend]


def default_backend(spec: ModelSpec, config: RTCEEvalConfig) -> GenerationBackend:
    """The backend of one model label; with vLLM one engine serves the base model and every adapter (each per
    request), so the evaluation starts one engine, not one a label."""
    system_prompt = load_summary(config.benchmark).get("system_prompt")  # the benchmark's prompt style's
    if config.backend == "vllm":
        engine = _vllm_engine(
            spec.model, tuple(config.adapters.values()), system_prompt, config.seed, config.vllm_eager
        )
        return engine.with_adapter(spec.adapter)
    return make_backend(config, spec.model, adapter=spec.adapter, system_prompt=system_prompt, seed=config.seed)


@functools.cache
def _vllm_engine(
    model: str, adapters: tuple[str, ...], system_prompt: str | None, seed: int, eager: bool
) -> VLLMBackend:
    from kt_train.vllm_backend import VLLMBackend

    eager_option = {"enforce_eager": True} if eager else {}
    return VLLMBackend.load(model, system_prompt=system_prompt, seed=seed, serve_adapters=adapters, **eager_option)


def read_predictions(path: Path | str, items: dict[str, RTCEItem]) -> list[dict[str, Any]]:
    """Completion rows from a JSONL of rows `id` (input/algorithm/task) + `completions` (a list), with
    optional `model` and `temperature`; rows of items not selected are skipped."""
    rows = []
    for _, row, item_id, texts in read_prediction_rows(path):
        if item_id in items:
            model, temperature = str(row.get("model", BASE)), float(row.get("temperature", 0.0))
            rows.append(
                {
                    "id": f"{model}/t{temperature:g}/{item_id}",
                    "item": item_id,
                    "model": model,
                    "adapter": row.get("adapter"),
                    "temperature": temperature,
                    "n": len(texts),
                    "completions": texts,
                }
            )
    if not rows:
        raise ValueError(f"{path} has no rows for the selected items (ids like {next(iter(items), '?')!r})")
    return rows


def score_rows(
    rows: Sequence[dict[str, Any]], items: dict[str, RTCEItem], scoring: Scoring = "strict"
) -> list[dict[str, Any]]:
    """Completion rows with their item's metadata and scores under both scoring modes (the report's input)."""
    scored = []
    for row in rows:
        item = items[row["item"]]
        meta = {"key": row["id"], "id": item.id, "item_id": item.item_id, "algorithm": item.algorithm}
        meta |= {"task": item.task, "family": item.family, "category": item.category}
        meta |= {"input_length": item.input_length, "answer": item.answer, "label_exact": item.label_exact}
        rest = {k: v for k, v in row.items() if k != "id"}
        context = ReleaseContext(item.algorithm, Task(item.task).predicts_z, item.x)
        scores = score_completions(row["completions"] or [], item.answer, scoring=scoring, context=context)
        scored.append(meta | rest | scores)
    return scored


def eval_settings(config: RTCEEvalConfig, selected: Sequence[RTCEItem]) -> dict[str, Any]:
    """What decides the evaluation's output: the config (less where it goes and how requests are retried), the
    model, adapters, predictions and benchmark by content, the selected prompts and the code version. Not the
    scoring mode: every run rescores all completions under both modes, so another `--scoring` reuses them."""
    free = {"output", "wandb_project", "wandb_group", "retries", "backoff_s", "scoring", *FREE_BACKEND_OPTIONS}
    settings = {k: v for k, v in asdict(config).items() if k not in free}
    settings |= {"model_sha256": model_hash(config.model), "predictions_sha256": content_hash(config.predictions)}
    settings["adapters_sha256"] = {label: adapter_hash(path) for label, path in config.adapters.items()}
    settings["benchmark_sha256"] = content_hash(Path(config.benchmark) / CORPUS_FILE)
    settings |= {"num_prompts": len(selected), "version": VERSION}
    return settings


def run_rtce_eval(
    config: RTCEEvalConfig,
    factory: BackendFactory = default_backend,
    progress: bool = True,
    options: RunOptions | None = None,
) -> dict[str, Any]:
    """The whole job (of one shard, with `options.num_shards` > 1); returns the summary (a shard: its counts)."""
    selected = load_items(config.benchmark, config.algorithms, config.tasks, config.ids, config.items)
    if not selected:
        raise ValueError(f"no items selected from {config.benchmark}")
    settings = eval_settings(config, selected)
    folder = RunFolder(config.output, settings, options)
    output = folder.output
    items = {item.id: item for item in selected}
    if config.predictions is not None:
        scored = score_rows(read_predictions(config.predictions, items), items, config.scoring)
        roundtrips: list[dict[str, Any]] = []
        reflections: list[dict[str, Any]] = []
    else:
        scored, roundtrips, reflections = [], [], []
        sampling = config.sampling()
        for spec in config.specs():
            backend = functools.cache(functools.partial(factory, spec, config))  # loaded on first need, once

            asked = config.answers(spec, selected)
            rows = generate_rows(
                spec,
                backend,
                asked,
                config.temperatures,
                sampling,
                folder,
                config.batch_size,
                config.retries,
                config.backoff_s,
                progress,
            )
            if config.format_repair:
                path = folder.path(f"{spec.label}.repairs")
                rows = with_repairs(
                    rows, repair_rows(rows, backend, sampling, path, None, config.batch_size, progress)
                )
            model_scored = score_rows(rows, items, config.scoring)
            scored += model_scored
            if config.roundtrip:
                cases = roundtrip_cases(model_scored, items)
                path = folder.path(f"{spec.label}.roundtrips")
                roundtrips += run_roundtrips(
                    cases, items, backend, sampling, path, config.batch_size, progress, folder.options.retries
                )
            if config.reflection_rounds > 0:
                path = folder.path(f"{spec.label}.reflection")
                reflection_config = ReflectionConfig(
                    rounds=config.reflection_rounds, gen_tokens=config.reflection_gen_tokens
                )
                reflections += run_reflection(
                    model_scored, items, backend, sampling, reflection_config, path, config.batch_size, progress
                )
    if folder.options.sharded:
        summary = {"shard": folder.options.shard_index, "num_shards": folder.options.num_shards, "rows": len(scored)}
        folder.finish(summary)
        return summary
    write_jsonl(output / SCORED_FILE, scored)
    title = f"RTCE: {config.model or config.predictions}"
    summary = write_report(scored, roundtrips, output, title, settings | {"scoring": config.scoring})
    if reflections:
        summary["reflection"] = accuracy_by_round(reflections, config.reflection_rounds)
        (output / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        with (output / "report.md").open("a", encoding="utf-8") as report:
            report.write("\n" + reflection_markdown(summary["reflection"], config.reflection_rounds))
    if config.wandb_project:
        log_to_wandb(summary, scored, output, config.wandb_project, config.wandb_group)
    folder.finish({"rows": len(scored)})
    return summary


__all__ = [
    "BASE",
    "SCORED_FILE",
    "VERSION",
    "RTCEEvalConfig",
    "adapter_algorithm",
    "eval_settings",
    "read_predictions",
    "run_rtce_eval",
    "score_rows",
]
