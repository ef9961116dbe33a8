"""Write a corpus as a Hugging Face dataset (Parquet shards + README card) and read sequences to exclude."""

from __future__ import annotations

import ast
import csv
import json
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from dsl.blocks import sequence_digest
from dsl.functions import FUNCTION_NAMES
from kt_train.hf_dataset import (
    CARD_FILE,
    DATA_DIR,
    ROWS_PER_SHARD,
    CardInfo,
    SplitSize,
    clear_data,
    shard_names,
    write_card,
)

MANIFEST = "generation.json"
ROWS_PER_GROUP = 50_000

CORPUS_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("program", pa.string()),
        ("sequence", pa.list_(pa.uint8())),
        ("bits", pa.float64()),
        ("num_lines", pa.int32()),
        ("length", pa.int32()),
    ]
)


def corpus_stats(
    lengths: np.ndarray, lines: np.ndarray, bits: np.ndarray, function_masks: np.ndarray
) -> dict[str, Any]:
    """Sequence lengths, lines per program, bits and function frequencies (share of programs using each)."""
    n = max(len(lengths), 1)
    uses = {name: int(((function_masks >> k) & 1).sum()) for k, name in enumerate(FUNCTION_NAMES)}

    def summary(values: np.ndarray) -> dict[str, float]:
        if not len(values):
            return {}
        return {
            "mean": round(float(values.mean()), 3),
            "median": float(np.median(values)),
            "std": round(float(values.std()), 3),
            "min": float(values.min()),
            "max": float(values.max()),
        }

    return {
        "num_pairs": len(lengths),
        "total_bytes": int(lengths.sum()),
        "sequence_length": summary(lengths),
        "num_lines": summary(lines),
        "bits": summary(bits),
        "function_share": {name: round(uses[name] / n, 5) for name in FUNCTION_NAMES},
    }


def _card_info(name: str, manifest: dict[str, Any]) -> CardInfo:
    stats = manifest["stats"]
    shares = sorted(stats["function_share"].items(), key=lambda kv: -kv[1])
    share_rows = "\n".join(f"| {fn} | {share:.4f} |" for fn, share in shares)
    length, lines = stats["sequence_length"], stats["num_lines"]
    description = f"""KT sequence-DSL program–sequence pairs made by `kt dsl` (kt-train; paper 003, §3). Each
sequence appears once, with its shortest program by bits under the uniform prior (ties broken by program text).
Columns: `id`, `program` (official DSL text), `sequence` (bytes 0..255), `bits`, `num_lines` (output line included),
`length`. For chats that train with stock `trl sft`, run `kt dsl export-chat` on this folder.

## Statistics

| | value |
|---|---|
| pairs | {stats["num_pairs"]} |
| sequence bytes | {stats["total_bytes"]} |
| sequence length mean / median / std | {length.get("mean")} / {length.get("median")} / {length.get("std")} |
| lines per program mean / median | {lines.get("mean")} / {lines.get("median")} |
| bits mean | {stats["bits"].get("mean")} |
| candidates sampled | {manifest["candidates"]} |
| duplicates dropped | {manifest["duplicates"]} |
| excluded sequences dropped | {manifest["excluded"]} |

Share of programs using each function:

| function | share |
|---|---|
{share_rows}

## Generation settings

```json
{json.dumps(manifest["settings"], indent=2, sort_keys=True)}
```
"""
    return CardInfo(
        pretty_name=name,
        description=description,
        command=manifest["command"],
        language=("code",),
        task_categories=("text-generation",),
        tags=("kolmogorov-test", "program-synthesis", "compression"),
    )


def remove_dataset(directory: Path) -> None:
    """Delete the corpus files `write_dataset` made in `directory` (shards, card, manifest; nothing else)."""
    for shard in (directory / DATA_DIR).glob("*.parquet"):
        shard.unlink()
    for name in (CARD_FILE, MANIFEST):
        (directory / name).unlink(missing_ok=True)


def write_dataset(
    directory: Path,
    num_rows: int,
    rows: Callable[[int, int], pa.Table],
    manifest: dict[str, Any],
    name: str,
    threads: int = 1,
) -> None:
    """Parquet shards of `rows(start, stop)` under data/, the README card, then the manifest (marks a finished corpus).

    Shards are built and written on `threads` threads (pyarrow releases the GIL); output bytes do not depend on it.
    """
    data_dir = clear_data(directory)
    names = shard_names("train", max(1, -(-num_rows // ROWS_PER_SHARD)))

    def write(shard: int) -> int:
        start, stop = shard * ROWS_PER_SHARD, min((shard + 1) * ROWS_PER_SHARD, num_rows)
        num_bytes = 0
        with pq.ParquetWriter(data_dir / names[shard], CORPUS_SCHEMA, compression="zstd", write_statistics=False) as w:
            for group in range(start, stop, ROWS_PER_GROUP):  # one row group in memory at a time
                table = rows(group, min(group + ROWS_PER_GROUP, stop))
                num_bytes += table.nbytes
                w.write_table(table, row_group_size=ROWS_PER_GROUP)
        return num_bytes

    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        num_bytes = sum(pool.map(write, range(len(names))))
    write_card(directory, CORPUS_SCHEMA, {"train": SplitSize(num_rows, num_bytes)}, _card_info(name, manifest))
    tmp = directory / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, directory / MANIFEST)


def read_manifest(directory: Path) -> dict[str, Any] | None:
    path = directory / MANIFEST
    return json.loads(path.read_text()) if path.exists() else None


def _sequences_from(path: Path) -> list[list[int]]:
    if path.is_dir():
        files = sorted(path.rglob("*.parquet")) or sorted(path.glob("*.jsonl")) + sorted(path.glob("*.csv"))
        if not files:
            raise FileNotFoundError(f"--exclude {path}: no .parquet, .jsonl or .csv files inside")
        return [seq for file in files for seq in _sequences_from(file)]
    if path.suffix == ".parquet":
        return pq.read_table(path, columns=["sequence"]).column("sequence").to_pylist()
    if path.suffix == ".jsonl":
        with path.open() as f:
            return [json.loads(line)["sequence"] for line in f if line.strip()]
    if path.suffix == ".csv":  # the official release's format: sequence as a Python list literal
        with path.open(newline="") as f:
            return [ast.literal_eval(row["sequence"]) for row in csv.DictReader(f)]
    raise ValueError(f"--exclude {path}: expected a dataset directory or a .parquet / .jsonl / .csv file")


def read_exclusions(paths: list[Path]) -> np.ndarray:
    """Digests (n, 2) uint64 of every sequence in `paths` (dataset dirs or .parquet / .jsonl / .csv files)."""
    digests = bytearray()
    for path in paths:
        if not path.exists():
            raise FileNotFoundError(f"--exclude {path}: no such file or directory")
        for seq in _sequences_from(path):
            if any(not 0 <= v <= 255 for v in seq):
                continue  # not a byte sequence: the generator never makes it
            digests += sequence_digest(bytes(seq))
    return np.frombuffer(bytes(digests), dtype=np.uint64).reshape(-1, 2)
