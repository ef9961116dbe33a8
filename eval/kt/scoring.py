"""KT metrics (paper 003, §4 "Metrics"): per sequence, then aggregated over a set.

For a sequence x (raw size ||x|| = symbol_bits * len(x)) and a candidate program p with output [p]:

- Accuracy = 1 if [p] == x;
- y = p if [p] == x else x (the Repeat back-off); CompressionRate = (1 + ||y||_enc) / ||x||, the 1 being the flag bit
  that says whether y is a program or the raw sequence;
- Precision = ||p||_enc / ||x||_gzip over correct programs only (the paper's formula, per sequence); the release
  prices prompted models' Precision jointly instead: the correct programs' texts newline-joined in one gzip stream
  over their sequences' in another (`precision_joint_gzip`, gzip prior only);
- ||p||_enc: the uniform DSL prior (`dsl.bits.program_bits`) or the gzip size of the program text;
- prefix accuracy at k: [p][:k] == x[:k]; the longest correct prefix (the official synthetic evaluation's measures).

Set-level CompressionRate is the ratio of sums, sum(1 + ||y||) / sum(||x||) (the bits of the whole set over its raw
bits); `compression_rate_mean` is the mean of the per-sequence rates; `compression_rate_gzip_backoff` stores the
failed sequences together as one newline-joined gzip stream, as the official synthetic evaluation does.
`executable_official` is the release's post-processing rule for executable: a list of 1 to 256 ints.
"""

from __future__ import annotations

import gzip
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from dsl.bits import program_bits
from eval.kt.checking import CheckResult, Verdict

ProgramPrior = Literal["uniform", "gzip"]
GzipEncoding = Literal["bytes", "latin1-utf8"]
DEFAULT_GZIP_ENCODING: GzipEncoding = "latin1-utf8"
"""What gzip sees of a sequence unless told otherwise: the release's text round trip (its back-off figures)."""
OFFICIAL_MAX_OUTPUT = 256
"""The release's post-processing calls a longer output (and an empty one) non-executable."""
PREFIXES = (16, 32, 64, 128)
LENGTH_BUCKETS = ((1, 16), (17, 32), (33, 64), (65, 128), (129, None))


def gzip_size_bits(data: bytes) -> int:
    """Bits of `data` after gzip (level 9, header with mtime 0, so the size never depends on the clock)."""
    return 8 * len(gzip.compress(data, compresslevel=9, mtime=0))


def sequence_bytes(sequence: Iterable[int], encoding: GzipEncoding = DEFAULT_GZIP_ENCODING) -> bytes:
    """The bytes gzip sees for a sequence of values 0..255.

    `bytes`: one byte per value. `latin1-utf8` (the default) reproduces the official release, which decodes the bytes
    as Latin-1 and gzips the text's UTF-8 encoding (values >= 128 then take two bytes); its figures match the paper's.
    """
    raw = bytes(sequence)
    return raw.decode("latin1").encode("utf-8") if encoding == "latin1-utf8" else raw


def sequence_gzip_bits(sequence: Sequence[int], encoding: GzipEncoding = DEFAULT_GZIP_ENCODING) -> int:
    """||x||_gzip: bits of one gzipped sequence."""
    return gzip_size_bits(sequence_bytes(sequence, encoding))


def joined_gzip_bits(sequences: Iterable[Sequence[int]], encoding: GzipEncoding = DEFAULT_GZIP_ENCODING) -> int:
    """Bits of the newline-separated sequences gzipped as one stream (the paper's whole-set Gzip baseline)."""
    return gzip_size_bits(b"\n".join(sequence_bytes(s, encoding) for s in sequences))


def encoded_program_bits(program: str, prior: ProgramPrior) -> float:
    """||p||_enc: bits of a program under the uniform DSL prior or as gzipped text."""
    if prior == "uniform":
        return program_bits(program)
    return float(gzip_size_bits(program.encode("utf-8")))


def joint_gzip_precision(
    programs: Sequence[str], sequences: Sequence[Sequence[int]], encoding: GzipEncoding = DEFAULT_GZIP_ENCODING
) -> float | None:
    """The release's Precision of prompted models (`comp_rate_ex_acc`): the correct programs' texts newline-joined
    and gzipped as one stream, over their sequences joined and gzipped the same way; None without programs."""
    if not programs:
        return None
    return encoded_program_bits("\n".join(programs), "gzip") / joined_gzip_bits(sequences, encoding)


def executable_official(sample: Mapping[str, Any]) -> bool:
    """Whether the release's post-processing calls a sample executable: a list of 1 to 256 ints (`executable` here
    takes a list of any length)."""
    return bool(sample["executable"]) and 1 <= (sample.get("output_length") or 0) <= OFFICIAL_MAX_OUTPUT


def correct_prefix(output: Sequence[int] | None, sequence: Sequence[int]) -> int:
    """Length of the longest common prefix of the output and the sequence."""
    if not output:
        return 0
    n = 0
    for a, b in zip(output, sequence):
        if a != b:
            break
        n += 1
    return n


def prefix_matches(k: int, prefix: int, output_length: int | None, length: int) -> bool:
    """Whether output[:k] == x[:k], from the longest correct prefix and the output's length."""
    if output_length is None:
        return False
    if k < length:
        return prefix >= k
    return prefix >= length and min(k, output_length) == length


@dataclass(frozen=True)
class SampleScore:
    """The metrics of one candidate for one sequence."""

    verdict: str
    correct: bool
    executable: bool
    correct_prefix: int
    program_bits: float | None  # None when the candidate has no program (or, uniform prior, no valid DSL program)
    y_bits: float
    compression_rate: float
    precision: float | None
    error: str | None = None
    output_length: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def score_sample(
    check: CheckResult,
    program: str | None,
    sequence: Sequence[int],
    symbol_bits: int,
    prior: ProgramPrior,
    gzip_bits: int,
) -> SampleScore:
    """Score one candidate; `gzip_bits` is ||x||_gzip of the sequence (computed once per sequence)."""
    raw_bits = symbol_bits * len(sequence)
    correct = check.verdict == Verdict.CORRECT
    bits: float | None = None
    if program is not None and (prior == "gzip" or check.executable):  # uniform: only parseable DSL has a length
        bits = encoded_program_bits(program, prior)
    y_bits = bits if correct and bits is not None else raw_bits
    return SampleScore(
        verdict=str(check.verdict),
        correct=correct,
        executable=check.executable,
        correct_prefix=correct_prefix(check.output, sequence),
        program_bits=bits,
        y_bits=y_bits,
        compression_rate=(1 + y_bits) / raw_bits,
        precision=bits / gzip_bits if correct and bits is not None else None,
        error=check.error,
        output_length=check.output_length,
    )


def best_sample(samples: Sequence[Mapping[str, Any]]) -> int:
    """Index of the sample an item keeps (samples as `SampleScore.as_dict()`): the shortest correct program, else
    the first sample."""
    correct = [i for i, s in enumerate(samples) if s["correct"]]
    return min(correct, key=lambda i: (samples[i]["y_bits"], i)) if correct else 0


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def length_bucket(length: int) -> str:
    """The label of the length bucket of a sequence (plots and tables of metrics against length)."""
    for low, high in LENGTH_BUCKETS:
        if length >= low and (high is None or length <= high):
            return f"{low}-{high}" if high is not None else f"{low}+"
    return "0"


def aggregate(
    rows: Sequence[Mapping[str, Any]],
    symbol_bits: int,
    encoding: GzipEncoding = DEFAULT_GZIP_ENCODING,
    prior: ProgramPrior = "uniform",
) -> dict[str, Any]:
    """Set-level metrics of scored items (rows with `sequence`, `length`, `gzip_bits`, `program` and the kept sample's
    fields at top level, plus `samples`: every sample's fields); `prior` prices the programs (the joint-gzip Precision
    is the gzip prior's alone)."""
    if not rows:
        raise ValueError("no items to aggregate")
    samples = [s for r in rows for s in r["samples"]]
    raw_bits = [symbol_bits * r["length"] for r in rows]
    correct = [r for r in rows if r["correct"]]
    failed_sequences = [r["sequence"] for r in rows if not r["correct"]]
    kept_program_bits = sum(r["program_bits"] for r in correct)
    gzip_backoff = kept_program_bits + (joined_gzip_bits(failed_sequences, encoding) if failed_sequences else 0)
    executable = [s for s in samples if s["executable"]]
    summary: dict[str, Any] = {
        "num_items": len(rows),
        "num_samples": len(samples),
        "total_symbols": sum(r["length"] for r in rows),
        "accuracy": len(correct) / len(rows),
        "sample_accuracy": sum(s["correct"] for s in samples) / len(samples),
        "executable": len(executable) / len(samples),
        "executable_official": sum(map(executable_official, samples)) / len(samples),
        "executable_accuracy": _mean([float(s["correct"]) for s in executable]),
        "compression_rate": sum(1 + r["y_bits"] for r in rows) / sum(raw_bits),
        "compression_rate_mean": _mean([r["compression_rate"] for r in rows]),
        "compression_rate_gzip_backoff": (gzip_backoff + len(rows)) / sum(raw_bits),
        "precision": _mean([r["precision"] for r in correct]),
        "precision_pooled": kept_program_bits / sum(r["gzip_bits"] for r in correct) if correct else None,
        "precision_joint_gzip": (
            joint_gzip_precision([r["program"] for r in correct], [r["sequence"] for r in correct], encoding)
            if prior == "gzip"
            else None
        ),
        "prefix_accuracy": {
            str(k): sum(prefix_matches(k, r["correct_prefix"], r["output_length"], r["length"]) for r in rows)
            / len(rows)
            for k in PREFIXES
        },
        "mean_correct_prefix": _mean([r["correct_prefix"] for r in rows]),
        "verdicts": dict(sorted(Counter(s["verdict"] for s in samples).items())),
    }
    summary["by_length"] = by_length(rows, symbol_bits)
    return summary


def rows_with_samples(
    rows: Sequence[Mapping[str, Any]], keep: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """The rows as if each item had only the samples `keep` returns (never none), each keeping its best."""
    out = []
    for row in rows:
        samples = [{k: v for k, v in s.items() if k != "completion"} for s in keep(row["samples"])]
        kept = samples[best_sample(samples)]
        out.append({k: row[k] for k in ("id", "length", "sequence", "gzip_bits")} | kept | {"samples": samples})
    return out


def first_sample_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows as if each item had its first sample only (the greedy program of a `--search` run)."""
    return rows_with_samples(rows, lambda samples: samples[:1])


def search_summary(
    rows: Sequence[Mapping[str, Any]],
    symbol_bits: int,
    k: int,
    encoding: GzipEncoding = DEFAULT_GZIP_ENCODING,
    prior: ProgramPrior = "uniform",
) -> dict[str, Any]:
    """What a search over `k` programs an item (greedy first) bought: the greedy program's metrics alone, and the
    items the samples made correct or shorter."""
    greedy = aggregate(first_sample_rows(rows), symbol_bits, encoding, prior)
    found = sum(r["correct"] and not r["samples"][0]["correct"] for r in rows)
    shorter = sum(r["samples"][0]["correct"] and r["y_bits"] < r["samples"][0]["y_bits"] for r in rows)
    return {
        "k": k,
        "programs_checked": sum(len(r["samples"]) for r in rows),
        "greedy": {key: greedy[key] for key in ("accuracy", "compression_rate", "precision", "executable")},
        "items_found_by_samples": found,
        "items_shortened_by_samples": shorter,
    }


def by_length(rows: Sequence[Mapping[str, Any]], symbol_bits: int) -> list[dict[str, Any]]:
    """Accuracy and CompressionRate per length bucket."""
    buckets: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        buckets.setdefault(length_bucket(row["length"]), []).append(row)
    order = [length_bucket(low) for low, _ in LENGTH_BUCKETS]
    return [
        {
            "bucket": name,
            "n": len(group),
            "accuracy": sum(r["correct"] for r in group) / len(group),
            "compression_rate": sum(1 + r["y_bits"] for r in group) / sum(symbol_bits * r["length"] for r in group),
        }
        for name in order
        if (group := buckets.get(name))
    ]


__all__ = [
    "DEFAULT_GZIP_ENCODING",
    "OFFICIAL_MAX_OUTPUT",
    "PREFIXES",
    "SampleScore",
    "aggregate",
    "best_sample",
    "by_length",
    "correct_prefix",
    "encoded_program_bits",
    "executable_official",
    "first_sample_rows",
    "gzip_size_bits",
    "joined_gzip_bits",
    "joint_gzip_precision",
    "length_bucket",
    "prefix_matches",
    "rows_with_samples",
    "score_sample",
    "search_summary",
    "sequence_bytes",
    "sequence_gzip_bits",
]
