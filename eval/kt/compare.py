"""Two KT evaluations of the same sequences side by side (`kt eval kt-compare`): Accuracy and CompressionRate of
each, and the change from the first to the second with a paired bootstrap 95% CI over the sequences (a model
against its start, a search against greedy decoding), and each run against Gzip per sequence with its CI. Both
folders must hold finished runs of one set."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eval.bootstrap import entry_seed, paired_bootstrap_ci
from eval.kt.evaluate import ITEMS_FILE
from eval.kt.report import SUMMARY_FILE
from eval.kt.scoring import GzipEncoding, sequence_gzip_bits


def finished_rows(folder: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The summary and scored rows of a finished `kt eval kt` run."""
    summary_file, items_file = folder / SUMMARY_FILE, folder / ITEMS_FILE
    if not summary_file.is_file() or not items_file.is_file():
        raise FileNotFoundError(f"{folder} holds no finished `kt eval kt` run ({SUMMARY_FILE}, {ITEMS_FILE})")
    summary = json.loads(summary_file.read_text(encoding="utf-8"))
    rows = [json.loads(line) for line in items_file.read_text(encoding="utf-8").splitlines() if line]
    return summary, rows


def paired_rows(
    first: Sequence[Mapping[str, Any]], second: Sequence[Mapping[str, Any]]
) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """The rows of the same sequences, in the first run's order; runs of other sequences are refused."""
    by_id = {row["id"]: row for row in second}
    if set(by_id) != {row["id"] for row in first}:
        raise ValueError("the two evaluations scored other sequences: compare runs of one set and --limit")
    pairs = [(row, by_id[row["id"]]) for row in first]
    if any(a["sequence"] != b["sequence"] for a, b in pairs):
        raise ValueError("the two evaluations hold other sequences under the same ids")
    return pairs


def versus_gzip(
    rows: Sequence[Mapping[str, Any]], symbol_bits: int, encoding: GzipEncoding = "bytes", seed: int = 0
) -> dict[str, float]:
    """A run's CompressionRate beside Gzip per sequence (each sequence its own gzip stream of `encoding`, its
    CompressionRate the ratio of sums like the run's): the run minus Gzip with its paired bootstrap 95% CI."""
    gzip = [sequence_gzip_bits(row["sequence"], encoding) for row in rows]
    excess = [1 + row["y_bits"] - bits for row, bits in zip(rows, gzip, strict=True)]
    raw = [symbol_bits * row["length"] for row in rows]
    low, high = paired_bootstrap_ci(excess, entry_seed(seed, "versus_gzip"), weights=raw)
    return {"gzip": sum(gzip) / sum(raw), "change": sum(excess) / sum(raw), "ci_low": low, "ci_high": high}


def compare_kt(first: Path, second: Path, seed: int = 0, gzip_encoding: GzipEncoding = "bytes") -> dict[str, Any]:
    """Accuracy (points) and CompressionRate of both runs, and second minus first with its 95% CI; each run's
    CompressionRate minus Gzip per sequence (of `gzip_encoding`) with its 95% CI."""
    first_summary, first_rows = finished_rows(first)
    second_summary, second_rows = finished_rows(second)
    bits = first_summary["symbol_bits"]
    if second_summary["symbol_bits"] != bits or first_summary["program_prior"] != second_summary["program_prior"]:
        raise ValueError("the two evaluations price programs or symbols differently: they do not compare")
    pairs = paired_rows(first_rows, second_rows)
    raw = [bits * a["length"] for a, _ in pairs]
    accuracy = [100.0 * (float(b["correct"]) - float(a["correct"])) for a, b in pairs]
    rate = [float(b["y_bits"]) - float(a["y_bits"]) for a, b in pairs]
    result: dict[str, Any] = {"first": str(first), "second": str(second), "n": len(pairs)}
    for name, values, weights, of in (
        ("accuracy", accuracy, None, lambda rows: 100.0 * sum(r["correct"] for r in rows) / len(rows)),
        ("compression_rate", rate, raw, lambda rows: sum(1 + r["y_bits"] for r in rows) / sum(raw)),
    ):
        low, high = paired_bootstrap_ci(values, entry_seed(seed, name), weights=weights)
        before, after = of([a for a, _ in pairs]), of([b for _, b in pairs])
        result[name] = {"first": before, "second": after, "change": after - before, "ci_low": low, "ci_high": high}
    result["versus_gzip"] = {
        "encoding": gzip_encoding,
        "first": versus_gzip([a for a, _ in pairs], bits, gzip_encoding, seed),
        "second": versus_gzip([b for _, b in pairs], bits, gzip_encoding, seed),
    }
    return result


def compare_markdown(result: Mapping[str, Any]) -> str:
    """A table of the comparison."""
    lines = [
        f"{result['first']} -> {result['second']}, n = {result['n']} sequences (paired bootstrap 95% CI):",
        "",
        "| metric | first | second | change | 95% CI |",
        "|---|---:|---:|---:|---|",
    ]
    for name, label, digits in (("accuracy", "Accuracy (%)", 2), ("compression_rate", "CompressionRate", 4)):
        m = result[name]
        lines.append(
            f"| {label} | {m['first']:.{digits}f} | {m['second']:.{digits}f} | {m['change']:+.{digits}f} | "
            f"[{m['ci_low']:+.{digits}f}, {m['ci_high']:+.{digits}f}] |"
        )
    gzip = result["versus_gzip"]
    lines += [
        "",
        f"Each run against Gzip per sequence (`{gzip['encoding']}`: "
        f"CompressionRate {gzip['first']['gzip']:.4f} on these sequences):",
        "",
        "| run | CompressionRate - Gzip | 95% CI |",
        "|---|---:|---|",
    ]
    for name in ("first", "second"):
        m = gzip[name]
        lines.append(f"| {name} | {m['change']:+.4f} | [{m['ci_low']:+.4f}, {m['ci_high']:+.4f}] |")
    return "\n".join(lines) + "\n"


__all__ = ["compare_kt", "compare_markdown", "finished_rows", "paired_rows", "versus_gzip"]
