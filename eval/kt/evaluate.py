"""`kt eval kt`: generate (or read) candidate programs for a KT set, check them, score them, write the results.

Output folder (`kt_train.stages.RunFolder`): `completions.jsonl` (generated; resumable: a rerun generates only the
missing items, and again those whose generation failed), `items.jsonl` (one scored row per sequence, every sample
inside; resumable too), `summary.json` (metrics + settings + dataset fingerprint), `report.md` and plots. A rerun
with other settings (the adapter's content included) into the same folder is refused unless `--overwrite`, so
results never mix; `--num-shards/--shard-index` split the sequences, and a run without them merges the shards.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from dsl.bits import NUMBER_RANGE
from dsl.feedback import FEEDBACK_MAX_VALUES
from eval.kt.checking import CandidateChecker, CheckConfig, CheckResult, Mode, Verdict
from eval.kt.completions import extract_code
from eval.kt.dataset import KTDataset, KTItem, load_kt_dataset
from eval.kt.feedback_decoding import feed_and_execute
from eval.kt.line_search import line_search
from eval.kt.literal_tail import LITERAL_TAIL, literal_tail_program
from eval.kt.prompts import PromptStyle, kt_prompt
from eval.kt.report import write_outputs
from eval.kt.scoring import (
    DEFAULT_GZIP_ENCODING,
    GzipEncoding,
    ProgramPrior,
    best_sample,
    score_sample,
    sequence_gzip_bits,
)
from eval.predictions import read_prediction_rows
from kt_train.generation import (
    FREE_BACKEND_OPTIONS,
    GENERATION_ERRORS,
    BackendOptions,
    GenerationBackend,
    SamplingConfig,
    make_backend,
    with_retries,
)
from kt_train.sandbox import DEFAULT_TIMEOUT_S
from kt_train.stages import RunFolder, RunOptions, adapter_hash, content_hash, model_hash

COMPLETIONS = "completions"
ITEMS = "items"
COMPLETIONS_FILE = f"{COMPLETIONS}.jsonl"
ITEMS_FILE = f"{ITEMS}.jsonl"
VERSION = 3  # 3: DSL run limits (`resource`), `unencodable` literals, forged runner reports are `bad_output`
"""The code version of the evaluation's output (part of its settings): raised when rows change meaning."""
NATURAL_MODULUS = 256


@dataclass
class KTEvalConfig(BackendOptions):
    """One evaluation run."""

    dataset: str = field(metadata={"help": "KT set folder (`kt dsl eval-set` or `kt kt-data`)", "metavar": "DIR"})
    output: str = field(
        metadata={"help": "folder for completions, scored items, summary, report and plots", "metavar": "DIR"}
    )
    mode: Mode = field(default="dsl", metadata={"help": "candidates are DSL programs or Python programs"})
    model: str | None = field(default=None, metadata={"help": "model to generate with (None: read --predictions)"})
    adapter: str | None = field(default=None, metadata={"help": "a LoRA adapter of the model", "metavar": "DIR"})
    predictions: str | None = field(
        default=None, metadata={"help": "JSONL of existing completions (id, completions)", "metavar": "FILE"}
    )
    prompt: PromptStyle = field(default="zero-shot", metadata={"help": "zero-shot or cot (Python mode)"})
    num_samples: int = field(default=1, metadata={"help": "completions per sequence; an item keeps its best"})
    search: int = field(
        default=1,
        metadata={
            "help": "test-time search over K programs a sequence: the greedy one and K-1 sampled at --temperature, "
            "each run in the interpreter; an item keeps the shortest correct one (1: no search)",
            "metavar": "K",
        },
    )
    temperature: float = field(default=0.0, metadata={"help": "0: greedy"})
    max_new_tokens: int = field(default=512, metadata={"help": "tokens per completion"})
    batch_size: int = field(default=8, metadata={"help": "prompts per generation batch (and per resume step)"})
    seed: int = field(default=42, metadata={"help": "sampling seed"})
    limit: int | None = field(default=None, metadata={"help": "the first N sequences only"})
    program_prior: ProgramPrior | None = field(
        default=None,
        metadata={"help": "program bits: uniform DSL prior or gzip (none: uniform for dsl, gzip for python)"},
    )
    gzip_encoding: GzipEncoding = field(
        default=DEFAULT_GZIP_ENCODING,
        metadata={
            "help": "what gzip sees of a sequence (Precision, gzip back-off): latin1-utf8 as the official release, "
            "or its own bytes"
        },
    )
    timeout_s: float = field(
        default=DEFAULT_TIMEOUT_S,
        metadata={"help": "CPU-time limit per Python program (seconds)", "aliases": ["--timeout"]},
    )
    execution_feedback: bool = field(
        default=False,
        metadata={
            "help": "feed & ex decoding (DSL mode, transformers backend): the interpreter runs each generated line "
            "and its values follow it as a comment before the next line; a line that fails ends the program"
        },
    )
    feedback_max_values: int = field(
        default=FEEDBACK_MAX_VALUES, metadata={"help": "values in each feedback comment (as the model was trained)"}
    )
    line_search: int = field(
        default=0,
        metadata={
            "help": "line search (DSL mode, transformers backend, left-to-right programs): each greedy line runs in "
            "the interpreter; one whose values are not the sequence's next ones is sampled again, R times at "
            "--temperature, and the first that passes is kept (0: off)",
            "metavar": "R",
        },
    )
    line_backtracks: int = field(
        default=0,
        metadata={
            "help": "line search: when no sample of a line passes, take back the line before and sample its place "
            "again, at most B times a program (0: the program ends there)",
            "metavar": "B",
        },
    )
    literal_tail: bool = field(
        default=False,
        metadata={
            "help": "DSL mode, uniform prior: a program that goes wrong after writing a prefix of the sequence left "
            "to right is also tried cut there, with the rest of the sequence as one literal line, when that is "
            "shorter than the raw sequence (an extra sample; the model's own programs are reported beside it)"
        },
    )
    wandb_project: str | None = field(default=None, metadata={"help": "log the summary to this W&B project"})
    wandb_group: str | None = field(
        default=None, metadata={"help": "the W&B group of that run (a training's evaluations log in its group)"}
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if (self.model is None) == (self.predictions is None):
            raise ValueError("give exactly one of --model (generate) and --predictions (score existing completions)")
        if self.adapter is not None and self.model is None:
            raise ValueError("--adapter needs --model")
        self.check_model(self.model)
        self.check_adapter(self.adapter)
        if self.num_samples < 1:
            raise ValueError(f"--num-samples must be >= 1, got {self.num_samples}")
        if self.num_samples > 1 and self.temperature == 0 and self.model is not None:
            raise ValueError("--num-samples > 1 needs --temperature > 0 (greedy samples are all the same)")
        if self.search < 1:
            raise ValueError(f"--search must be >= 1, got {self.search}")
        if self.search > 1 and (self.model is None or self.num_samples > 1 or self.temperature == 0):
            raise ValueError(
                "--search K generates the greedy program and K-1 samples: it needs --model, "
                "--temperature > 0 for the samples and --num-samples 1"
            )
        if self.mode == "dsl" and self.prompt != "zero-shot":
            raise ValueError("DSL mode has the SeqCoder prompt only (--prompt zero-shot)")
        if self.execution_feedback and (self.mode != "dsl" or self.model is None or self.backend != "transformers"):
            raise ValueError(
                "--execution-feedback runs DSL lines as a model generates them: --mode dsl, --model and "
                "--backend transformers"
            )
        if self.feedback_max_values < 1:
            raise ValueError(f"--feedback-max-values must be >= 1, got {self.feedback_max_values}")
        if self.line_search < 0 or self.line_backtracks < 0:
            raise ValueError("--line-search and --line-backtracks must be >= 0")
        if self.line_backtracks and not self.line_search:
            raise ValueError("--line-backtracks takes lines back in a line search: it needs --line-search")
        if self.line_search and (
            self.mode != "dsl"
            or self.model is None
            or self.backend != "transformers"
            or self.temperature == 0
            or self.search > 1
            or self.num_samples > 1
            or self.execution_feedback
        ):
            raise ValueError(
                "--line-search R needs --mode dsl, --model, --backend transformers and --temperature > 0 "
                "for its samples, without --search, --num-samples or --execution-feedback"
            )

        if self.literal_tail and (self.mode != "dsl" or self.prior != "uniform"):
            raise ValueError(
                "--literal-tail completes DSL programs priced by the uniform prior: --mode dsl, "
                "--program-prior uniform"
            )

    @property
    def prior(self) -> ProgramPrior:
        return self.program_prior or ("uniform" if self.mode == "dsl" else "gzip")

    def check_config(self) -> CheckConfig:
        """The checker's limits; under the uniform prior, literals it cannot encode are `unencodable`."""
        return CheckConfig(
            timeout_s=self.timeout_s, uniform_prior_range=NUMBER_RANGE if self.prior == "uniform" else None
        )

    def sampling(self) -> SamplingConfig:
        stop = ["###"] if self.mode == "python" else None
        return SamplingConfig(
            temperature=self.temperature,
            max_new_tokens=self.max_new_tokens,
            n=self.num_samples,
            seed=self.seed,
            stop=stop,
        )

    def samplings(self) -> list[SamplingConfig]:
        """The generation calls for each batch: one, or with --search K the greedy program, then K-1 samples."""
        if self.search == 1:
            return [self.sampling()]
        sampled = self.sampling()
        return [replace(sampled, temperature=0.0, n=1), replace(sampled, n=self.search - 1)]


BackendFactory = Callable[[KTEvalConfig], GenerationBackend]


def default_backend(config: KTEvalConfig) -> GenerationBackend:
    assert config.model is not None  # checked by KTEvalConfig
    return make_backend(config, config.model, adapter=config.adapter, seed=config.seed)


def read_predictions(path: Path | str, dataset: KTDataset) -> dict[str, list[str | None]]:
    """Completions by item id from a JSONL file of rows `id` + `completions` (a list, as `completions.jsonl`);
    several rows of one id are several samples. Rows of unknown ids are an error (a mismatched dataset)."""
    by_id: dict[str, list[str | None]] = defaultdict(list)
    known = {item.id for item in dataset.items}
    for number, _, key, texts in read_prediction_rows(path):
        if key not in known:
            raise ValueError(f"{path}:{number}: id {key!r} is not in {dataset.path}")
        by_id[key] += texts
    return dict(by_id)


def generation_failure(row: dict[str, Any]) -> str | None:
    """Why a completions row is a failure to make again (its generation raised), or None."""
    return row.get("error")


def generate_completions(
    config: KTEvalConfig, dataset: KTDataset, folder: RunFolder, factory: BackendFactory, progress: bool
) -> list[dict[str, Any]]:
    """The `completions.jsonl` rows of every item (of this shard), generated batch by batch (resumable); a batch
    whose generation fails after retries is recorded as failed, so a rerun makes it again."""
    state: dict[str, GenerationBackend] = {}

    def generate(prompts: list[str], sampling: SamplingConfig) -> list[list[str] | None]:
        if config.execution_feedback:
            return feed_and_execute(state["backend"], prompts, sampling, config.feedback_max_values)
        return with_retries(state["backend"].generate, prompts, sampling)

    def search_lines(batch: Sequence[KTItem], prompts: list[str]) -> list[dict[str, Any]]:
        found = line_search(
            state["backend"],
            prompts,
            [item.sequence for item in batch],
            config.sampling(),
            config.line_search,
            config.line_backtracks,
        )
        return [
            {"id": item.id, "completions": None if r.completion is None else [r.completion], "line_search": r.cost}
            for item, r in zip(batch, found, strict=True)
        ]

    def process(batch: Sequence[KTItem]) -> list[dict[str, Any]]:
        if "backend" not in state:
            state["backend"] = factory(config)
        prompts = [kt_prompt(item.sequence, config.mode, config.prompt) for item in batch]
        texts: list[list[str] | None] = [[] for _ in prompts]
        try:
            if config.line_search:
                return search_lines(batch, prompts)
            for sampling in config.samplings():  # greedy first, then the samples (--search)
                more = generate(prompts, sampling)
                texts = [None if a is None or b is None else a + b for a, b in zip(texts, more, strict=True)]
        except GENERATION_ERRORS as exc:
            return [{"id": item.id, "completions": None, "error": f"{type(exc).__name__}: {exc}"} for item in batch]
        return [{"id": item.id, "completions": t} for item, t in zip(batch, texts, strict=True)]

    return folder.run(
        COMPLETIONS,
        dataset.items,
        lambda i: i.id,
        process,
        config.batch_size,
        progress,
        failure=generation_failure,
        desc="generate",
    )


def scoring_failure(row: dict[str, Any]) -> str | None:
    """Why a scored row is a failure to make again (a sample hit the sandbox's time limit), or None."""
    timeouts = sum(sample["verdict"] == Verdict.TIMEOUT for sample in row["samples"])
    return f"{timeouts} sample(s) timed out" if timeouts else None


def score_items(
    dataset: KTDataset,
    completions: dict[str, list[str | None]],
    config: KTEvalConfig,
    progress: bool = True,
    items: Sequence[KTItem] | None = None,
    checker: CandidateChecker | None = None,
) -> list[dict[str, Any]]:
    """Check every sample of every item (default: all of `dataset`) and score it; one row per item (the kept
    sample's fields at top level). `checker`: an open checker to reuse (default: one for this call)."""
    items = dataset.items if items is None else items
    modulus = NATURAL_MODULUS if dataset.natural else None
    flat: list[tuple[int, str | None, str | None, int | None]] = []  # (item index, completion, program, tail length)
    for index, item in enumerate(items):
        for text in completions.get(item.id) or [None]:
            flat.append((index, text, extract_code(text), None))
    if config.literal_tail:
        for index, _, program, _ in list(flat):
            raw_bits = dataset.symbol_bits * len(items[index].sequence)
            tailed = literal_tail_program(program, items[index].sequence, raw_bits)
            if tailed is not None:
                flat.append((index, None, tailed.text, tailed.tail_length))
    programs, sequences = [p for _, _, p, _ in flat], [items[i].sequence for i, _, _, _ in flat]
    if checker is None:
        with CandidateChecker(config.mode, config.check_config(), modulus) as own:
            checks = own.check(programs, sequences, progress)
    else:
        checks = checker.check(programs, sequences, False)
    per_item: dict[int, list[tuple[str | None, str | None, CheckResult, int | None]]] = defaultdict(list)
    for (index, text, program, tail), check in zip(flat, checks, strict=True):
        if text is None and tail is None:
            check = CheckResult(Verdict.NO_COMPLETION)
        per_item[index].append((text, program, check, tail))
    rows = []
    for index, item in enumerate(items):
        gzip_bits = sequence_gzip_bits(item.sequence, config.gzip_encoding)
        samples = []
        for text, program, check, tail in per_item[index]:
            scored = score_sample(check, program, item.sequence, dataset.symbol_bits, config.prior, gzip_bits)
            samples.append({**scored.as_dict(), "program": program, "completion": text})
            if tail is not None:
                samples[-1] |= {"derived": LITERAL_TAIL, "tail_length": tail}
        kept = samples[best_sample(samples)]
        top = {k: v for k, v in kept.items() if k != "completion"}
        rows.append(
            {"id": item.id, "length": len(item.sequence), "sequence": list(item.sequence), "gzip_bits": gzip_bits}
            | top
            | {"samples": samples}
        )
    return rows


def eval_settings(config: KTEvalConfig, dataset: KTDataset) -> dict[str, Any]:
    """What decides the evaluation's output: the config (less where it goes), the model, adapter and predictions
    by content, the dataset's fingerprint and the code version."""
    free = {"output", "wandb_project", "wandb_group", *FREE_BACKEND_OPTIONS}
    settings = {k: v for k, v in asdict(config).items() if k not in free}
    settings |= {"dataset_fingerprint": dataset.fingerprint, "num_items": len(dataset.items), "version": VERSION}
    settings |= {"model_sha256": model_hash(config.model), "predictions_sha256": content_hash(config.predictions)}
    settings["adapter_sha256"] = adapter_hash(config.adapter)
    return settings


def score_all(
    config: KTEvalConfig,
    dataset: KTDataset,
    completions: dict[str, list[str | None]],
    folder: RunFolder,
    progress: bool,
) -> list[dict[str, Any]]:
    """The scored rows of every item (of this shard) in `items.jsonl` (resumable, timed-out items checked again)."""
    modulus = NATURAL_MODULUS if dataset.natural else None
    with CandidateChecker(config.mode, config.check_config(), modulus) as checker:

        def process(batch: Sequence[KTItem]) -> list[dict[str, Any]]:
            return score_items(dataset, completions, config, items=batch, checker=checker)

        return folder.run(
            ITEMS,
            dataset.items,
            lambda i: i.id,
            process,
            config.batch_size,
            progress,
            failure=scoring_failure,
            desc="check",
        )


def run_kt_eval(
    config: KTEvalConfig,
    factory: BackendFactory = default_backend,
    progress: bool = True,
    options: RunOptions | None = None,
) -> dict[str, Any]:
    """The whole job (of one shard, with `options.num_shards` > 1); returns the summary (a shard: its counts)."""
    dataset = load_kt_dataset(config.dataset, config.limit)
    settings = eval_settings(config, dataset)
    folder = RunFolder(config.output, settings, options)
    generated: list[dict[str, Any]] = []
    if config.predictions is not None:
        completions = read_predictions(config.predictions, dataset)
    else:
        generated = generate_completions(config, dataset, folder, factory, progress)
        completions = {row["id"]: row["completions"] or [None] for row in generated}
    rows = score_all(config, dataset, completions, folder, progress)
    if folder.options.sharded:
        summary = {"shard": folder.options.shard_index, "num_shards": folder.options.num_shards, "items": len(rows)}
    else:
        costs = [row["line_search"] for row in generated if "line_search" in row]
        summary = write_outputs(rows, dataset, config, settings, Path(config.output), costs)
    folder.finish(summary)
    return summary


__all__ = [
    "COMPLETIONS_FILE",
    "ITEMS_FILE",
    "VERSION",
    "KTEvalConfig",
    "eval_settings",
    "read_predictions",
    "run_kt_eval",
    "score_items",
]
