"""LMiC baseline (KT paper §4, §B.2 Tab. 6) on the embedded SmolLM2-135M-Instruct: CompressionRate and speed.

Encodes the first N sequences of a KT dataset folder (DIR/data/*.parquet, `sequence` column; without --data, a
`kt dsl eval-set --bytes 20000 --seed 0` made in a temporary folder) with `eval.kt.lmic` in its default config, plus
four reference sequences of 128 numbers (uniform random bytes; 0..127; uniform random DNA-like values 0..7, coded
once as bytes and once with `max_value=7`); decodes the first --verify sequences of each group to check the round
trip. Reports CR (stored bits over 8 bits per number, 3 for DNA), the model's ideal bits, gzip -9 of the raw bytes for
reference, and encode/decode tokens/s. Writes the `kt_lmic` section of docs/benchmarks.md unless --no-doc.

    python bench/bench_lmic.py --num 12 --no-doc                      # ~5 min on 2 cores
    python bench/bench_lmic.py --data /tmp/evalset --num 50 --verify 3
"""

from __future__ import annotations

import argparse
import gzip
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchutil import invocation, kt_command, load_average, publish, run_header

KEY = "kt_lmic"
EVAL_SET = ["dsl", "eval-set", "--bytes", "20000", "--seed", "0"]


@dataclass
class Item:
    group: str
    length: int
    symbol_bits: int
    tokens: int
    num_bits: int
    model_bits: float
    gzip_bits: int
    encode_s: float
    decode_s: float | None


def references() -> list[tuple[str, list[int], int, int]]:
    """(group, sequence, symbol_bits, max_value) of the fixed reference sequences."""
    rng = random.Random(0)
    dna = [rng.randrange(8) for _ in range(128)]
    return [
        ("random bytes", [rng.randrange(256) for _ in range(128)], 8, 255),
        ("0..127", list(range(128)), 8, 255),
        ("random DNA-like", dna, 3, 255),
        ("random DNA-like, max_value 7", dna, 3, 7),
    ]


def read_sequences(data: Path, num: int) -> list[list[int]]:
    import pyarrow.parquet as pq

    sequences: list[list[int]] = []
    for path in sorted((data / "data").glob("*.parquet")):
        sequences += [list(s) for s in pq.read_table(path, columns=["sequence"]).column("sequence").to_pylist()]
        if len(sequences) >= num:
            break
    if not sequences:
        raise SystemExit(f"no sequences under {data}/data/*.parquet")
    return sequences[:num]


def measure(coder, group: str, sequence: list[int], symbol_bits: int, verify: bool) -> Item:
    start = time.perf_counter()
    code = coder.encode(sequence)
    encode_s = time.perf_counter() - start
    decode_s = None
    if verify:
        start = time.perf_counter()
        if coder.decode(code) != sequence:
            raise SystemExit(f"{group}: decode(encode(x)) != x")
        decode_s = time.perf_counter() - start
    gzip_bits = 8 * len(gzip.compress(bytes(sequence), compresslevel=9, mtime=0))
    item = Item(
        group,
        len(sequence),
        symbol_bits,
        code.num_tokens,
        code.num_bits,
        code.model_bits,
        gzip_bits,
        encode_s,
        decode_s,
    )
    print(
        f"{group}: {item.length} numbers, {item.tokens} tokens, {item.num_bits} bits "
        f"(CR {item.num_bits / (symbol_bits * item.length):.3f}), {encode_s:.1f} s",
        file=sys.stderr,
        flush=True,
    )
    return item


def summary_row(group: str, items: list[Item]) -> str:
    raw = sum(i.symbol_bits * i.length for i in items)
    total = sum(i.num_bits for i in items) / raw
    mean = statistics.mean(i.num_bits / (i.symbol_bits * i.length) for i in items)
    ideal = sum(i.model_bits for i in items) / raw
    gz = sum(i.gzip_bits for i in items) / raw
    tokens = sum(i.tokens for i in items)
    encode = tokens / sum(i.encode_s for i in items)
    decoded = [i for i in items if i.decode_s is not None]
    decode = f"{sum(i.tokens for i in decoded) / sum(i.decode_s for i in decoded):.1f}" if decoded else "-"
    per_128 = sum(i.encode_s for i in items) / sum(i.length for i in items) * 128
    return (
        f"| {group} | {len(items)} | {statistics.mean(i.length for i in items):.1f} | {tokens / len(items):.0f} | "
        f"{total:.3f} | {mean:.3f} | {ideal:.3f} | {gz:.3f} | {encode:.1f} | {decode} | {per_128:.1f} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="KT dataset folder (default: a fresh seed-0 eval set of 20 KB)")
    parser.add_argument("--num", type=int, default=12, help="first sequences of the dataset to code")
    parser.add_argument("--verify", type=int, default=1, help="sequences of each group also decoded")
    parser.add_argument("--no-doc", action="store_true", help="print the section instead of writing the doc")
    args = parser.parse_args(argv)

    from eval.kt.lmic import LMiCCoder, LMiCConfig

    load = load_average()
    with tempfile.TemporaryDirectory(prefix="bench-lmic-") as tmp:
        data = args.data
        if data is None:
            data = Path(tmp) / "evalset"
            subprocess.run([*kt_command(), *EVAL_SET, "--output", str(data)], check=True, capture_output=True)
        sequences = read_sequences(data, args.num)
    config = LMiCConfig()
    coders = {255: LMiCCoder(config), 7: LMiCCoder(LMiCConfig(max_value=7))}
    source = str(args.data) if args.data else "`kt " + " ".join(EVAL_SET) + "`"
    groups: dict[str, list[Item]] = {}
    for i, sequence in enumerate(sequences):
        groups.setdefault("KT eval set", []).append(
            measure(coders[255], "KT eval set", sequence, 8, verify=i < args.verify)
        )
    for group, sequence, symbol_bits, max_value in references():
        groups[group] = [measure(coders[max_value], group, sequence, symbol_bits, verify=args.verify > 0)]

    lines = [
        *run_header(invocation("bench_lmic.py", argv)),
        "",
        "| sequences | n | numbers (mean) | tokens (mean) | CR total | CR mean | ideal CR | gzip CR | "
        "encode tokens/s | decode tokens/s | s per 128 numbers |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *(summary_row(group, items) for group, items in groups.items()),
        "",
        f"- Data: the first {len(sequences)} sequences of {source}; reference sequences drawn with seed 0.",
        f"- Coder: `eval.kt.lmic.LMiCCoder` defaults (separator {config.separator!r}, BOS context, grammar-restricted "
        f"alphabet, EOS end marker, {config.dtype}, {config.num_threads} torch thread); round trips checked on the "
        "first sequence of each group (decode tokens/s).",
        "- CR total: stored bits (32 per range-coder word) over raw bits (8 per number, 3 for DNA), summed over the "
        "group; CR mean: the mean of per-sequence CRs; ideal CR: the model's -sum(log2 p) instead of stored bits; "
        "gzip CR: `gzip.compress(bytes(seq), 9)` of the same sequences, for reference.",
        f"- Load average at the start: {load:.2f}; at the end: {load_average():.2f}.",
    ]
    return publish(KEY, "\n".join(lines), args.no_doc)


if __name__ == "__main__":
    sys.exit(main())
