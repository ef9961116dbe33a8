"""KT baselines (paper 003, §4 and Tab. 6) on one evaluation set, all measured, none assumed.

- Repeat: store every sequence raw (Accuracy 1; CompressionRate 1 by construction: no flag bit is needed).
- Upper Bound: the gold programs of a synthetic set, run by the interpreter and priced by the uniform prior, through
  the same checking and scoring as model candidates.
- Gzip per sequence (each sequence its own gzip stream; also with the raw back-off and its flag bit) and on the
  whole set (newline-separated, one stream); also with sequences cut into chunks of `chunk_length`, as the paper's
  length-128 column.
- LMiC: the LM + arithmetic coder of `eval.kt.lmic` on the first `lmic_items` sequences (slow on CPU), with Gzip on
  the same sequences beside it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from eval.kt.checking import CheckConfig, check_dsl
from eval.kt.dataset import KTDataset
from eval.kt.scoring import (
    DEFAULT_GZIP_ENCODING,
    GzipEncoding,
    aggregate,
    joined_gzip_bits,
    score_sample,
    sequence_gzip_bits,
)
from kt_train.stages import SETTINGS_FILE, SUMMARY_FILE

logger = logging.getLogger(__name__)
EVALUATION = "kt-baselines"
"""The `evaluation` key of a baselines `summary.json` (it tells one from another evaluation's summary)."""
REPORT_FILE = "report.md"
OLD_FILES = {"baselines.json": SUMMARY_FILE, "baselines.md": REPORT_FILE}
"""What `kt eval kt-baselines` wrote before it named its outputs as the other evaluations."""


@dataclass(frozen=True)
class BaselineConfig:
    """Which baselines to compute and how."""

    gzip_encoding: GzipEncoding = field(
        default=DEFAULT_GZIP_ENCODING,
        metadata={"help": "what gzip sees of a sequence: latin1-utf8 as the official release, or its own bytes"},
    )
    chunk_length: int = field(default=128, metadata={"help": "chunk length of the chunked Gzip figures"})
    lmic_items: int = field(default=0, metadata={"help": "sequences coded with LMiC (0: skip LMiC)"})
    lmic_model: str | None = field(default=None, metadata={"help": "LMiC's model (None: the embedded default)"})
    wandb_project: str | None = field(
        default=None, metadata={"help": "log the CompressionRates and a table of the sequences to this W&B project"}
    )


def chunks(sequences: Sequence[Sequence[int]], length: int) -> list[Sequence[int]]:
    """Every sequence cut into consecutive pieces of at most `length` (pieces never span two sequences)."""
    if length < 1:
        raise ValueError(f"chunk length must be >= 1, got {length}")
    return [s[i : i + length] for s in sequences for i in range(0, len(s), length)]


def gzip_rates(sequences: Sequence[Sequence[int]], symbol_bits: int, encoding: GzipEncoding) -> dict[str, float]:
    """Gzip CompressionRates of a list of sequences: per sequence, per sequence with raw back-off, whole set."""
    raw = symbol_bits * sum(len(s) for s in sequences)
    per_sequence = [sequence_gzip_bits(s, encoding) for s in sequences]
    backoff = sum(1 + min(bits, symbol_bits * len(s)) for bits, s in zip(per_sequence, sequences, strict=True))
    return {
        "per_sequence": sum(per_sequence) / raw,
        "per_sequence_or_raw": backoff / raw,
        "whole_set": joined_gzip_bits(sequences, encoding) / raw,
    }


def upper_bound(dataset: KTDataset, encoding: GzipEncoding) -> dict[str, Any] | None:
    """The gold programs scored as candidates (None for a set without programs)."""
    if any(item.program is None for item in dataset.items):
        return None
    rows, limits = [], CheckConfig()
    for item in dataset.items:
        check = check_dsl(item.program, item.sequence, limits, modulus=None)
        gzip_bits = sequence_gzip_bits(item.sequence, encoding)
        sample = score_sample(check, item.program, item.sequence, dataset.symbol_bits, "uniform", gzip_bits).as_dict()
        row = {"length": len(item.sequence), "sequence": item.sequence, "gzip_bits": gzip_bits}
        rows.append(row | sample | {"samples": [sample]})
    metrics = aggregate(rows, dataset.symbol_bits, encoding)
    keys = ("accuracy", "compression_rate", "compression_rate_mean", "compression_rate_gzip_backoff", "precision")
    return {key: metrics[key] for key in keys}


def lmic_rates(dataset: KTDataset, config: BaselineConfig, progress: bool) -> dict[str, Any]:
    """LMiC and Gzip on the same first `lmic_items` sequences."""
    from eval.kt.lmic import LMiCConfig, lmic_bits

    sequences = [item.sequence for item in dataset.items[: config.lmic_items]]
    options: dict[str, Any] = {"max_value": 2**dataset.symbol_bits - 1}  # the number grammar: 0..7 for DNA
    if config.lmic_model is not None:
        options["model"] = config.lmic_model
    lmic_config = LMiCConfig(**options)
    bits = lmic_bits(sequences, lmic_config, progress=progress)
    raw = dataset.symbol_bits * sum(len(s) for s in sequences)
    return {
        "items": len(sequences),
        "model": lmic_config.model,
        "compression_rate": sum(bits) / raw,
        "gzip_same_items": gzip_rates(sequences, dataset.symbol_bits, config.gzip_encoding),
    }


def compute_baselines(dataset: KTDataset, config: BaselineConfig, progress: bool = True) -> dict[str, Any]:
    """Every baseline's figures on the set."""
    sequences = [item.sequence for item in dataset.items]
    total = sum(len(s) for s in sequences)
    result: dict[str, Any] = {
        "evaluation": EVALUATION,
        "dataset": str(dataset.path),
        "modality": dataset.modality,
        "dataset_fingerprint": dataset.fingerprint,
        "num_sequences": len(sequences),
        "total_symbols": total,
        "symbol_bits": dataset.symbol_bits,
        "gzip_encoding": config.gzip_encoding,
        "repeat": {"accuracy": 1.0, "compression_rate": 1.0},  # raw bits over raw bits: no flag, no choice
        "upper_bound": upper_bound(dataset, config.gzip_encoding),
        "gzip": gzip_rates(sequences, dataset.symbol_bits, config.gzip_encoding),
        f"gzip_chunks_{config.chunk_length}": gzip_rates(
            chunks(sequences, config.chunk_length), dataset.symbol_bits, config.gzip_encoding
        ),
    }
    if config.lmic_items > 0:
        result["lmic"] = lmic_rates(dataset, config, progress)
    return result


def baselines_markdown(result: dict[str, Any]) -> str:
    """The baselines as a markdown table of CompressionRates."""
    chunk_key = next(k for k in result if k.startswith("gzip_chunks_"))
    rows = [
        ("Repeat", result["repeat"]["compression_rate"], "1.000"),
        ("Gzip, per sequence", result["gzip"]["per_sequence"], None),
        ("Gzip, per sequence or raw (+1 flag bit)", result["gzip"]["per_sequence_or_raw"], None),
        ("Gzip, whole set (newline-separated)", result["gzip"]["whole_set"], None),
        (f"Gzip, chunks of {chunk_key.rsplit('_', 1)[1]}", result[chunk_key]["per_sequence"], None),
    ]
    if result["upper_bound"] is not None:
        ub = result["upper_bound"]
        rows.append(("Upper Bound (gold programs, uniform prior)", ub["compression_rate"], f"{ub['accuracy']:.3f}"))
    if "lmic" in result:
        lmic = result["lmic"]
        rows.append((f"LMiC ({lmic['model']}, first {lmic['items']})", lmic["compression_rate"], None))
        rows.append((f"Gzip per sequence, same {lmic['items']}", lmic["gzip_same_items"]["per_sequence"], None))
    lines = [
        f"# KT baselines: {result['dataset']}",
        "",
        f"{result['modality']}, {result['num_sequences']} sequences, {result['total_symbols']} symbols of "
        f"{result['symbol_bits']} bits; gzip input `{result['gzip_encoding']}`.",
        "",
        "| baseline | CompressionRate | Accuracy |",
        "|---|---:|---:|",
        *(f"| {name} | {rate:.3f} | {acc or '-'} |" for name, rate, acc in rows),
    ]
    return "\n".join(lines) + "\n"


def check_output(output: Path) -> None:
    """Refuse a folder that holds another evaluation's results (its `summary.json` would be overwritten)."""
    summary = output / SUMMARY_FILE
    if (output / SETTINGS_FILE).is_file():
        raise ValueError(
            f"{output} holds another evaluation's run ({SETTINGS_FILE}): give kt-baselines a folder of its own"
        )
    if summary.is_file():
        try:
            evaluation = json.loads(summary.read_text(encoding="utf-8")).get("evaluation")
        except (json.JSONDecodeError, AttributeError):
            evaluation = None
        if evaluation != EVALUATION:
            raise ValueError(f"{summary} is not a kt-baselines summary: give kt-baselines a folder of its own")


def headline_scalars(result: Mapping[str, Any]) -> dict[str, float]:
    """Every figure of the result as a flat `baseline/figure` key (`gzip/per_sequence`, `upper_bound/accuracy`,
    `lmic/compression_rate`, `lmic/gzip_same_items/per_sequence`...)."""

    def leaves(prefix: str, value: Any) -> dict[str, float]:
        if isinstance(value, Mapping):
            return {k: v for key, sub in value.items() for k, v in leaves(f"{prefix}/{key}", sub).items()}
        return {prefix: value} if isinstance(value, int | float) and not isinstance(value, bool) else {}

    baselines = ("repeat", "upper_bound", "gzip", "lmic")
    return {
        k: v
        for key, value in result.items()
        if key in baselines or key.startswith("gzip_chunks_")
        for k, v in leaves(key, value).items()
    }


def log_baselines_to_wandb(
    result: Mapping[str, Any], dataset: KTDataset, config: BaselineConfig, output: Path
) -> None:
    """Log the baselines' figures and a table of the sequences (id, length, raw and Gzip bits) to W&B (offline unless
    logged in; files under the output folder)."""
    import wandb

    from kt_train.wandb_runs import finish_wandb, start_wandb_run

    settings = {k: v for k, v in asdict(config).items() if k != "wandb_project"}
    settings |= {k: result[k] for k in ("dataset", "modality", "dataset_fingerprint", "num_sequences", "symbol_bits")}
    run = start_wandb_run(config.wandb_project or "", output, settings, EVALUATION)
    try:
        columns = ["id", "length", "raw_bits", "gzip_bits"]
        data = [
            [
                item.id,
                len(item.sequence),
                dataset.symbol_bits * len(item.sequence),
                sequence_gzip_bits(item.sequence, config.gzip_encoding),
            ]
            for item in dataset.items
        ]
        run.log(headline_scalars(result) | {"items": wandb.Table(columns=columns, data=data)})
    finally:
        finish_wandb()


def write_baselines(result: dict[str, Any], output: Path) -> str:
    """Write `summary.json` and `report.md` (as every evaluation) and return the report; the files of the old
    names (`baselines.json` / `.md`) a previous version left in the folder are removed, so one result remains."""
    check_output(output)
    output.mkdir(parents=True, exist_ok=True)
    (output / SUMMARY_FILE).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    markdown = baselines_markdown(result)
    (output / REPORT_FILE).write_text(markdown, encoding="utf-8")
    for old, new in OLD_FILES.items():
        if (output / old).is_file():
            (output / old).unlink()
            logger.info("removed %s: the old name of %s", output / old, new)
    return markdown


__all__ = [
    "EVALUATION",
    "REPORT_FILE",
    "SUMMARY_FILE",
    "BaselineConfig",
    "baselines_markdown",
    "check_output",
    "chunks",
    "compute_baselines",
    "gzip_rates",
    "headline_scalars",
    "log_baselines_to_wandb",
    "upper_bound",
    "write_baselines",
]
