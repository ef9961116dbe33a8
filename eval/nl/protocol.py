"""`kt nl run`: the NL round trip e -> G -> w -> E -> e_hat for every generator x extractor pair (NL paper §2.2).

Stages, each resumable (a killed run redoes at most one batch):

1. generation: per generator, `generations/<label>.jsonl` holds one word problem per expression with its guard
   verdict (leak / paren leak / missing placeholder / degenerate, each flag recorded) and R_math;
2. extraction: per extractor, `extractions/<label>.jsonl` holds its answer to every word problem that passed the guard
   (guard failures are charged as errors and never extracted; the structured serializers are not guarded);
3. judging: `results.parquet`, one row per (expression, generator, extractor) with the oracle's verdict;
4. analysis: `eval.nl.report` writes the matrix, attribution, NL tax, predictors, plots and `summary.json`.

A rerun into the same folder with other settings (shots, token limits, guard, suite, selection) is refused; adding a
participant to a finished run only generates what is new.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd

from dsl.expr.prompts import extractor_prompt, generator_prompt
from dsl.expr.serialize import parse_sexpr
from dsl.expr.suite import load_suite, without_shots
from eval.nl.config import NLRunConfig
from eval.nl.guard import GuardConfig, check_word_problem, clean_word_problem
from eval.nl.lexicon import r_math
from eval.nl.models import (
    Participant,
    deterministic_word_problem,
    model_info,
    parser_extract,
    read_outputs,
)
from eval.nl.oracle import judge_many
from kt_train.generation import FREE_BACKEND_OPTIONS, GenerationBackend, SamplingConfig, with_retries
from kt_train.hf_dataset import row_id
from kt_train.logs import first_line
from kt_train.models import ModelUnavailableError
from kt_train.records import log_timing, run_resumable
from kt_train.stages import RunFolder, RunOptions

logger = logging.getLogger(__name__)
RESULTS_FILE = "results.parquet"
VERSION = 4
"""The code version of the run's records (part of its settings): raised when records change (4: the guard reads
normalized text and records its notation kinds)."""
DOMAINS = ("arithmetic", "logic")


BackendFactory = Callable[[Participant, NLRunConfig], GenerationBackend]


def default_backend(participant: Participant, config: NLRunConfig) -> GenerationBackend:
    from kt_train.generation import make_backend

    assert participant.model is not None  # only language models get a backend
    template = {"enable_thinking": config.thinking}  # templates without the variable ignore it
    try:
        return make_backend(
            config,
            participant.model,
            adapter=participant.adapter,
            chat_template_kwargs=template,
            batch_size=config.batch_size,
            seed=config.seed,
        )
    except OSError as exc:  # not found locally, and the hub is offline or has no such model
        reason = first_line(exc)
        raise ModelUnavailableError(f"cannot load {participant.model!r} ({participant.label}): {reason}") from exc


def _hash_key(*parts: object) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def select_expressions(rows: Sequence[dict[str, Any]], count: int | None, seed: int) -> list[dict[str, Any]]:
    """`count` expressions spread over the (k, d) cells (round robin over cells, seeded order inside each cell)."""
    if count is None or count >= len(rows):
        return list(rows)
    cells: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: _hash_key(seed, r["id"])):
        cells[(row["k"], row["d"])].append(row)
    queues = [cells[key] for key in sorted(cells)]
    chosen: list[dict[str, Any]] = []
    while len(chosen) < count:
        for queue in queues:
            if queue and len(chosen) < count:
                chosen.append(queue.pop(0))
    order = {row["id"]: i for i, row in enumerate(rows)}
    return sorted(chosen, key=lambda r: order[r["id"]])


def _file_stem(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.+" else "_" for c in label)


def _guard_fields(text: str | None, row: dict[str, Any], guard: GuardConfig, guarded: bool) -> dict[str, Any]:
    word_problem = clean_word_problem(text) if text is not None else None
    if not guarded:
        blank = not word_problem
        return {
            "word_problem": word_problem,
            "guard": "no_output" if blank else "pass",
            "leak_pass": True,
            "operator_leak": False,
            "paren_leak": False,
            "notation": [],
            "missing": [],
            "degenerate": False,
            "r_math": math.nan,
        }
    result = check_word_problem(word_problem, row["variables"], guard)
    return {
        "word_problem": word_problem,
        "guard": result.verdict,
        "leak_pass": result.leak_pass,
        "operator_leak": result.operator_leak,
        "paren_leak": result.paren_leak,
        "notation": list(result.notation),
        "missing": list(result.missing),
        "degenerate": result.degenerate,
        "r_math": r_math(word_problem) if word_problem else math.nan,
    }


def _participant_texts(
    participant: Participant,
    batch: Sequence[dict[str, Any]],
    prompt: Callable[[dict[str, Any]], str],
    deterministic: Callable[[dict[str, Any]], str | None],
    imported: dict[str, str | None],
    backend: Callable[[], GenerationBackend],
    sampling: SamplingConfig,
) -> tuple[list[str | None], dict[str, Any], float]:
    """One text per item of `batch` from any participant, the model's info and the seconds per item.

    A language model answers `prompt(item)` greedily (None for the whole batch when the backend keeps failing);
    imported outputs are looked up by the item's id; deterministic participants call `deterministic(item)`.
    """
    start = time.perf_counter()
    info: dict[str, Any] = {"params_b": None, "family": None}
    if participant.kind == "lm":
        prompts = [prompt(item) for item in batch]
        model = backend()  # a model that cannot be loaded stops the run: nothing is recorded for it
        try:
            outputs = with_retries(model.generate, prompts, sampling)
            texts = [out[0] if out else None for out in outputs]
        except (RuntimeError, OSError) as exc:
            logger.error("generation failed for %d prompts: %s", len(prompts), exc)
            texts = [None] * len(prompts)
        info = model_info(model)
    elif participant.kind == "file":
        texts = [imported.get(item["id"]) for item in batch]
    else:
        texts = [deterministic(item) for item in batch]
    return texts, info, round((time.perf_counter() - start) / max(len(batch), 1), 3)


def generate_word_problems(
    generator: Participant,
    rows: Sequence[dict[str, Any]],
    config: NLRunConfig,
    domain: str,
    backend: Callable[[], GenerationBackend],
    path: Path,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """One guarded word problem per expression from `generator` (resumable in `path`)."""
    guard = GuardConfig(strict=config.strict_guard)
    guarded = generator.generator_kind == "nl"
    imported = read_outputs(generator) if generator.kind == "file" else {}

    def written(row: dict[str, Any]) -> str:
        return deterministic_word_problem(generator, parse_sexpr(row["sexpr"]), domain, row["id"], config.seed)

    def process(batch: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        texts, info, elapsed = _participant_texts(
            generator,
            batch,
            lambda row: generator_prompt(row["infix"], domain, config.generator_shots),
            written,
            imported,
            backend,
            config.sampling(config.generator_tokens),
        )
        log_timing(path, len(batch), elapsed)
        return [
            {
                "id": row_id(row["id"], generator.label),
                "expr_id": row["id"],
                "generator": generator.label,
                "generator_kind": generator.generator_kind,
                "model": generator.model,
                "adapter": generator.adapter,
                **info,
                "text": text,
                **_guard_fields(text, row, guard, guarded),
            }
            for row, text in zip(batch, texts, strict=True)
        ]

    return run_resumable(
        path,
        list(rows),
        lambda r: row_id(r["id"], generator.label),
        process,
        config.batch_size,
        progress,
        f"generate {generator.label}",
    )


def extract_expressions(
    extractor: Participant,
    word_problems: Sequence[dict[str, Any]],
    config: NLRunConfig,
    domain: str,
    backend: Callable[[], GenerationBackend],
    path: Path,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """`extractor`'s answer to every guard-passing word problem (resumable in `path`)."""
    todo = [w for w in word_problems if w["guard"] == "pass"]
    imported = read_outputs(extractor) if extractor.kind == "file" else {}

    def process(batch: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        texts, info, elapsed = _participant_texts(
            extractor,
            batch,
            lambda w: extractor_prompt(w["word_problem"], domain, config.extractor_shots),
            lambda w: parser_extract(w["word_problem"], domain),
            imported,
            backend,
            config.sampling(config.extractor_tokens),
        )
        log_timing(path, len(batch), elapsed)
        return [
            {
                "id": row_id(w["id"], extractor.label),
                "extractor": extractor.label,
                "generator": w["generator"],
                "expr_id": w["expr_id"],
                **info,
                "completion": text,
            }
            for w, text in zip(batch, texts, strict=True)
        ]

    return run_resumable(
        path,
        todo,
        lambda w: row_id(w["id"], extractor.label),
        process,
        config.batch_size,
        progress,
        f"extract {extractor.label}",
    )


def _participant_info(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    for record in records:
        if record.get("params_b") is not None or record.get("family") is not None:
            return {"params_b": record.get("params_b"), "family": record.get("family")}
    return {"params_b": None, "family": None}


FEATURE_COLUMNS = (
    "k",
    "d",
    "l_T",
    "center_of_mass",
    "deepest_noncomm_level",
    "variable_reuse",
    "unique_variables",
    "n_constants",
)


def expression_features(columns: Sequence[str]) -> list[str]:
    """The structural feature columns among `columns`: `FEATURE_COLUMNS` and the per-operator counts `n_<op>`."""
    return [c for c in columns if c in FEATURE_COLUMNS or (c.startswith("n_") and c != "n_")]


def build_results(
    rows: Sequence[dict[str, Any]],
    generations: dict[str, list[dict[str, Any]]],
    extractions: dict[str, list[dict[str, Any]]],
    domain: str,
    progress: bool = True,
    workers: int = 1,
) -> pd.DataFrame:
    """One judged row per (expression, generator, extractor); guard failures are errors with no extraction. Each
    distinct (answer, expression) is judged once, over `workers` processes."""
    expressions = {row["id"]: row for row in rows}
    answers = {(e["extractor"], e["generator"], e["expr_id"]): e for recs in extractions.values() for e in recs}
    distinct = sorted({(a["completion"] or "", expressions[a["expr_id"]]["sexpr"]) for a in answers.values()})
    judged = dict(zip(distinct, judge_many(distinct, domain, workers, progress), strict=True))
    ext_info = {label: _participant_info(recs) for label, recs in extractions.items()}
    feature_keys = [*expression_features(list(rows[0])), "root_op"]
    out = []
    for generator, records in generations.items():
        gen_info = _participant_info(records)
        for word in records:
            row = expressions[word["expr_id"]]
            base = {"expr_id": row["id"], "domain": domain, "skeleton": row["skeleton"]}
            base |= {key: row[key] for key in feature_keys}
            base |= {"generator": generator, "generator_kind": word["generator_kind"]}
            base |= {"generator_params": gen_info["params_b"], "generator_family": gen_info["family"]}
            base |= {"guard": word["guard"], "leak_pass": word["leak_pass"], "r_math": word["r_math"]}
            for extractor in extractions:
                cell = base | {"extractor": extractor, "extractor_params": ext_info[extractor]["params_b"]}
                cell |= {"extractor_family": ext_info[extractor]["family"]}
                answer = answers.get((extractor, generator, row["id"]))
                if word["guard"] != "pass" or answer is None:
                    failed = {"extracted": None, "canonical": None, "verdict": "guard_fail", "correct": False}
                    out.append(cell | failed | {"error_type": "guard_fail"})
                    continue
                verdict, kind = judged[(answer["completion"] or "", row["sexpr"])]
                out.append(
                    cell
                    | {
                        "extracted": verdict.extracted,
                        "canonical": verdict.canonical,
                        "verdict": verdict.verdict,
                        "correct": verdict.verdict == "correct",
                        "error_type": kind,
                    }
                )
    frame = pd.DataFrame(out)
    for column in ("generator_params", "extractor_params", "r_math"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    return frame


def analysis_features(frame: pd.DataFrame) -> tuple[list[str], list[str]]:
    """Numeric and categorical features of the failure predictor (§3.3) present in the results.

    Model sizes and families are used, as in the paper, when every NL round trip has them; when some participant has
    none (a deterministic or imported one), the models enter by name instead, so no round trip is left out.
    """
    numeric = expression_features(list(frame.columns))
    if "r_math" in frame and frame["r_math"].notna().any():
        numeric.append("r_math")
    nl = frame[frame["generator_kind"] == "nl"] if "generator_kind" in frame else frame
    sizes = ["generator_params", "extractor_params"]
    categorical = [c for c in ("skeleton", "root_op") if c in frame]
    if all(c in nl and nl[c].notna().all() for c in sizes):
        numeric += sizes
        categorical += [c for c in ("generator_family", "extractor_family") if c in frame]
    else:
        categorical += ["generator", "extractor"]
    return numeric, categorical


def run_nl(
    config: NLRunConfig,
    factory: BackendFactory = default_backend,
    progress: bool = True,
    options: RunOptions | None = None,
) -> dict[str, Any]:
    """Run the protocol and write every artifact under `config.output`; returns the summary. A rerun with other
    settings is refused unless `options.overwrite`. With `options.num_shards` > 1 a run makes the word problems and
    extractions of its share of the expressions only (its summary: counts); a run without shards then merges them,
    judges every round trip and writes the matrix and report."""
    from eval.nl.report import log_report_to_wandb, write_report

    generators, extractors = config.participants()
    suite = load_suite(config.suite)
    if not suite:
        raise ValueError(f"suite {config.suite} is empty")
    domain = suite[0]["domain"]
    if domain not in DOMAINS:
        raise ValueError(f"kt nl run evaluates the {' and '.join(DOMAINS)} suites, not {domain!r}")
    rows = select_expressions(without_shots(suite, domain), config.max_expressions, config.seed)
    output = Path(config.output)
    free = {"output", "generators", "extractors", "panels", "batch_size", "judge_workers"}
    free |= {"wandb_project", "wandb_group"}
    free |= {"backend", "server_extensions", *FREE_BACKEND_OPTIONS}  # greedy: the same texts whoever serves them
    settings = {k: v for k, v in asdict(config).items() if k not in free}  # what the results depend on
    settings |= {"domain": domain, "expressions": sorted(row["id"] for row in rows)}
    settings["version"] = VERSION
    folder = RunFolder(output, settings, options)

    @functools.cache
    def backend(participant: Participant) -> GenerationBackend:
        return factory(participant, config)

    mine = folder.shard(rows)
    generations = {
        g.label: generate_word_problems(
            g,
            mine,
            config,
            domain,
            functools.partial(backend, g),
            folder.path(f"generations/{_file_stem(g.label)}"),
            progress,
        )
        for g in generators
    }
    word_problems = [w for records in generations.values() for w in records]
    extractions = {
        e.label: extract_expressions(
            e,
            word_problems,
            config,
            domain,
            functools.partial(backend, e),
            folder.path(f"extractions/{_file_stem(e.label)}"),
            progress,
        )
        for e in extractors
    }
    if folder.options.sharded:
        summary = {
            "shard": folder.options.shard_index,
            "num_shards": folder.options.num_shards,
            "expressions": len(mine),
            "word_problems": len(word_problems),
        }
        folder.finish(summary)
        return summary
    frame = build_results(rows, generations, extractions, domain, progress, config.judge_workers)
    tmp = output / (RESULTS_FILE + ".tmp")
    frame.to_parquet(tmp, index=False)
    tmp.replace(output / RESULTS_FILE)
    numeric, categorical = analysis_features(frame)
    summary = write_report(
        frame,
        output,
        numeric,
        categorical,
        panels=config.panels or None,
        seed=config.seed,
        title=f"NL round trip: suite {Path(config.suite).name} ({domain}, {len(rows)} expressions)",
    )
    if config.wandb_project:
        log_report_to_wandb(
            summary,
            output,
            config.wandb_project,
            settings | {"generators": config.generators, "extractors": config.extractors},
            items=frame,
            group=config.wandb_group,
        )
    folder.finish({"rows": len(frame)})
    return summary


__all__ = [
    "RESULTS_FILE",
    "NLRunConfig",
    "analysis_features",
    "build_results",
    "default_backend",
    "extract_expressions",
    "generate_word_problems",
    "run_nl",
    "select_expressions",
]
