"""KT metrics pinned on hand-computed cases (eval.kt.scoring)."""

from __future__ import annotations

import gzip
import math
import zlib
from typing import Any

import pytest

from eval.kt.checking import CheckResult, Verdict
from eval.kt.scoring import (
    DEFAULT_GZIP_ENCODING,
    GzipEncoding,
    ProgramPrior,
    aggregate,
    best_sample,
    correct_prefix,
    encoded_program_bits,
    gzip_size_bits,
    joined_gzip_bits,
    length_bucket,
    prefix_matches,
    score_sample,
    sequence_bytes,
    sequence_gzip_bits,
)

PROGRAM = "sequence_1 = range_func_up(1, 4)\noutput = sequence_1"
PROGRAM_BITS = 2 * math.log2(25) + 2 * 8  # function + output line at log2(24 + 1) each, two 8-bit numbers
SEQ = (1, 2, 3, 4)


def test_gzip_sizes_by_hand() -> None:
    assert gzip_size_bits(b"") == 8 * 20  # 10-byte header, empty deflate block (2 bytes), CRC32 and size
    assert sequence_gzip_bits(SEQ) == 8 * 24
    assert gzip_size_bits(b"x") == gzip_size_bits(b"y")  # mtime 0: never the clock
    assert sequence_bytes([65, 200], "bytes") == b"A\xc8"
    assert sequence_bytes([65, 200], "latin1-utf8") == b"A\xc3\x88"  # the official release's text round trip
    assert sequence_bytes([65, 200]) == b"A\xc3\x88"  # the release's encoding is the default
    joined = gzip.compress(b"\x01\x02\n\x03", compresslevel=9, mtime=0)
    assert joined_gzip_bits([(1, 2), (3,)]) == 8 * len(joined)


def test_program_bits_under_both_priors() -> None:
    assert encoded_program_bits(PROGRAM, "uniform") == pytest.approx(PROGRAM_BITS)
    assert encoded_program_bits(PROGRAM, "gzip") == 8 * len(gzip.compress(PROGRAM.encode(), 9, mtime=0))


def test_correct_program_scores_compression_and_precision() -> None:
    check = CheckResult(Verdict.CORRECT, [1, 2, 3, 4], 4)
    score = score_sample(check, PROGRAM, SEQ, symbol_bits=8, prior="uniform", gzip_bits=192)
    assert score.correct and score.executable
    assert score.program_bits == pytest.approx(25.287712)
    assert score.y_bits == pytest.approx(PROGRAM_BITS)
    assert score.compression_rate == pytest.approx((1 + PROGRAM_BITS) / 32)  # 0.8215
    assert score.precision == pytest.approx(PROGRAM_BITS / 192)  # 0.1317
    assert score.correct_prefix == 4


def test_wrong_program_backs_off_to_the_raw_sequence() -> None:
    check = CheckResult(Verdict.WRONG_OUTPUT, [1, 2, 9], 3)
    score = score_sample(check, PROGRAM, SEQ, symbol_bits=8, prior="uniform", gzip_bits=192)
    assert not score.correct and score.executable
    assert score.y_bits == 32
    assert score.compression_rate == pytest.approx(33 / 32)
    assert score.precision is None
    assert score.correct_prefix == 2


def test_dna_counts_three_bits_a_symbol() -> None:
    check = CheckResult(Verdict.SYNTAX_ERROR, error="x")
    score = score_sample(check, "garbage", (0, 7, 3), symbol_bits=3, prior="uniform", gzip_bits=8 * 23)
    assert score.program_bits is None  # no valid DSL program, no uniform-prior length
    assert score.compression_rate == pytest.approx((1 + 9) / 9)
    gzip_prior = score_sample(check, "garbage", (0, 7, 3), symbol_bits=3, prior="gzip", gzip_bits=8 * 23)
    assert gzip_prior.program_bits == 8 * len(gzip.compress(b"garbage", 9, mtime=0))


@pytest.mark.parametrize(
    ("output", "sequence", "expected"),
    [(None, (1, 2), 0), ([], (1, 2), 0), ([1, 2, 3], (1, 2), 2), ([0, 2], (1, 2), 0), ([1, 5, 3], (1, 2, 3), 1)],
)
def test_correct_prefix(output: list[int] | None, sequence: tuple[int, ...], expected: int) -> None:
    assert correct_prefix(output, sequence) == expected


def test_prefix_matches_follows_the_official_slice_comparison() -> None:
    # output[:k] == x[:k] with x of length 20
    assert prefix_matches(16, prefix=16, output_length=17, length=20)
    assert not prefix_matches(16, prefix=15, output_length=30, length=20)
    assert prefix_matches(32, prefix=20, output_length=20, length=20)  # the whole sequence, exactly
    assert not prefix_matches(32, prefix=20, output_length=21, length=20)  # one element too many within 32
    assert prefix_matches(32, prefix=20, output_length=40, length=20) is False
    assert not prefix_matches(16, prefix=0, output_length=None, length=20)


def test_best_sample_keeps_the_shortest_correct_program() -> None:
    samples = [
        {"correct": False, "y_bits": 32},
        {"correct": True, "y_bits": 30.0},
        {"correct": True, "y_bits": 20.0},
    ]
    assert best_sample(samples) == 2
    assert best_sample([{"correct": False, "y_bits": 32}, {"correct": False, "y_bits": 32}]) == 0


def _row(
    sequence: tuple[int, ...],
    check: CheckResult,
    program: str,
    prior: ProgramPrior = "uniform",
    encoding: GzipEncoding = "bytes",
) -> dict:
    gzip_bits = sequence_gzip_bits(sequence, encoding)
    sample = score_sample(check, program, sequence, 8, prior, gzip_bits).as_dict() | {"program": program}
    return (
        {"length": len(sequence), "sequence": list(sequence), "gzip_bits": gzip_bits} | sample | {"samples": [sample]}
    )


def test_aggregate_by_hand() -> None:
    long_seq = tuple(range(1, 13))  # 12 elements, 96 raw bits
    rows = [
        _row(SEQ, CheckResult(Verdict.CORRECT, list(SEQ), 4), PROGRAM),
        _row(long_seq, CheckResult(Verdict.WRONG_OUTPUT, [1, 2], 2), PROGRAM),
        _row((5, 5), CheckResult(Verdict.TIMEOUT, error="timeout"), "while True: pass"),
    ]
    m = aggregate(rows, symbol_bits=8)
    raw = 32 + 96 + 16
    assert m["accuracy"] == pytest.approx(1 / 3)
    assert m["executable"] == pytest.approx(2 / 3)
    assert m["executable_accuracy"] == pytest.approx(1 / 2)
    assert m["compression_rate"] == pytest.approx(((1 + PROGRAM_BITS) + (1 + 96) + (1 + 16)) / raw)
    per_item = [(1 + PROGRAM_BITS) / 32, 97 / 96, 17 / 16]
    assert m["compression_rate_mean"] == pytest.approx(sum(per_item) / 3)
    backoff = PROGRAM_BITS + joined_gzip_bits([long_seq, (5, 5)]) + 3
    assert m["compression_rate_gzip_backoff"] == pytest.approx(backoff / raw)
    assert m["precision"] == pytest.approx(PROGRAM_BITS / 192)
    assert m["prefix_accuracy"] == {"16": pytest.approx(1 / 3), "32": pytest.approx(1 / 3), "64": 1 / 3, "128": 1 / 3}
    assert m["mean_correct_prefix"] == pytest.approx((4 + 2 + 0) / 3)
    assert m["verdicts"] == {"correct": 1, "timeout": 1, "wrong_output": 1}
    assert [(b["bucket"], b["n"]) for b in m["by_length"]] == [("1-16", 3)]


def test_length_buckets() -> None:
    assert [length_bucket(n) for n in (1, 16, 17, 64, 65, 128, 129, 5000)] == [
        "1-16",
        "1-16",
        "17-32",
        "33-64",
        "65-128",
        "65-128",
        "129+",
        "129+",
    ]


def test_aggregate_refuses_an_empty_set() -> None:
    with pytest.raises(ValueError, match="no items"):
        aggregate([], symbol_bits=8)


def _gzip_bits_by_zlib(data: bytes) -> int:
    return 8 * len(zlib.compress(data, 9, wbits=31))  # the gzip container, written by zlib itself


def test_precision_joint_gzip_is_the_release_formula() -> None:
    """Issue 37, item 4: the release's Precision of prompted models gzips the correct programs' texts, newline-joined,
    as one stream and their sequences (Latin-1 text, UTF-8) the same way; the per-sequence mean is another number."""
    sequences = [tuple(range(120, 200)), (255, 0, 255, 0, 7, 7, 7, 7) * 6, (3, 1, 4, 1, 5, 9, 2, 6)]
    programs = [
        "output = list(range(120, 200))",
        "output = [255, 0] * 2 + [255, 0, 7, 7, 7, 7] * 5 + [255, 0, 255, 0, 7, 7, 7, 7]",
        "output = [3, 1, 4]",  # wrong: left out of both streams
    ]
    checks = [CheckResult(Verdict.CORRECT, list(s), len(s)) for s in sequences[:2]]
    checks.append(CheckResult(Verdict.WRONG_OUTPUT, [3, 1, 4], 3))
    encodings: tuple[GzipEncoding, ...] = ("latin1-utf8", "bytes")
    for encoding in encodings:
        rows = [_row(s, c, p, "gzip", encoding) for s, c, p in zip(sequences, checks, programs, strict=True)]
        m = aggregate(rows, symbol_bits=8, encoding=encoding, prior="gzip")
        release = encoding == "latin1-utf8"
        texts = [bytes(s).decode("latin1").encode("utf-8") if release else bytes(s) for s in sequences]
        expected = _gzip_bits_by_zlib("\n".join(programs[:2]).encode("utf-8")) / _gzip_bits_by_zlib(
            b"\n".join(texts[:2])
        )
        assert abs(m["precision_joint_gzip"] - expected) < 1e-9
        per_sequence = [_gzip_bits_by_zlib(p.encode()) / _gzip_bits_by_zlib(t) for p, t in zip(programs, texts)]
        assert m["precision"] == pytest.approx(sum(per_sequence[:2]) / 2)
        assert abs(m["precision_joint_gzip"] - m["precision"]) > 0.05
    assert aggregate(rows, symbol_bits=8, prior="uniform")["precision_joint_gzip"] is None  # uniform: not gzip text
    assert aggregate(rows[2:], symbol_bits=8, prior="gzip")["precision_joint_gzip"] is None  # no correct program


def test_executable_official_drops_outputs_past_256_elements_and_empty_ones() -> None:
    """Issue 37, item 6: the release's post-processing blanks an output of more than 256 elements (and an empty
    list is not executable there either); `executable` keeps both."""
    seq = (1, 2, 3)
    lengths = [0, 1, 3, 256, 257, 1000]
    samples: list[dict[str, Any]] = []
    for n in lengths:
        verdict = Verdict.CORRECT if n == 3 else Verdict.WRONG_OUTPUT
        check = CheckResult(verdict, ([1, 2, 3] + [0] * n)[: min(n, 4)], n)
        samples.append(score_sample(check, "p", seq, 8, "gzip", 200).as_dict() | {"program": "p"})
    samples.append(score_sample(CheckResult(Verdict.RUNTIME_ERROR, error="x"), "p", seq, 8, "gzip", 200).as_dict())
    row = {"length": 3, "sequence": list(seq), "gzip_bits": 200} | samples[2] | {"samples": samples}
    m = aggregate([row], symbol_bits=8, prior="gzip")
    assert m["executable"] == pytest.approx(6 / 7)
    assert m["executable_official"] == pytest.approx(3 / 7)  # 1, 3 and 256 elements


def test_the_release_encoding_is_the_default() -> None:
    """Issue 37, item 5: the gzip back-off CompressionRate reads the release's figure by default."""
    from eval.kt.baselines import BaselineConfig
    from eval.kt.evaluate import KTEvalConfig

    assert DEFAULT_GZIP_ENCODING == "latin1-utf8" and BaselineConfig().gzip_encoding == DEFAULT_GZIP_ENCODING
    config = KTEvalConfig(dataset="d", output="o", predictions="p.jsonl")
    assert config.gzip_encoding == DEFAULT_GZIP_ENCODING
    failed = (200, 201, 202, 7)
    rows = [_row(failed, CheckResult(Verdict.WRONG_OUTPUT, [1], 1), "p", "gzip", "latin1-utf8")]
    release = _gzip_bits_by_zlib(bytes(failed).decode("latin1").encode("utf-8"))
    assert aggregate(rows, symbol_bits=8)["compression_rate_gzip_backoff"] == pytest.approx((release + 1) / 32)
