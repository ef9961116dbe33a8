"""One writer for the datasets kt-train makes: Parquet shards named as `datasets` expects
(`data/<split>-00000-of-00001.parquet`) and a card whose metadata `load_dataset(DIR)` and the Hub read without a
warning: `configs`, a full `dataset_info` (features, and splits with sizes), license, language, task categories, size
category, tags, plus the command that made the dataset.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

DATA_DIR = "data"
CARD_FILE = "README.md"
ROWS_PER_SHARD = 250_000
SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                   (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"))  # fmt: skip


@dataclass(frozen=True)
class CardInfo:
    """What a dataset card says beside the data's own figures."""

    pretty_name: str = field(metadata={"help": "the dataset's title"})
    description: str = field(metadata={"help": "Markdown body: what a row is, how it was made"})
    command: str | None = field(default=None, metadata={"help": "the command that rebuilds the dataset"})
    license: str = field(default="mit", metadata={"help": "the data's license (the Hub's identifiers)"})
    language: Sequence[str] = field(default=("en",), metadata={"help": "natural languages of the text"})
    task_categories: Sequence[str] = field(default=("text-generation",), metadata={"help": "the Hub's task ids"})
    tags: Sequence[str] = field(default=(), metadata={"help": "free tags"})


def size_category(rows: int) -> str:
    """The Hub's size category of a dataset of `rows` rows."""
    return next((name for limit, name in SIZE_CATEGORIES if rows < limit), "n>1T")


def shard_names(split: str, num_shards: int) -> list[str]:
    """The shard files of a split, as `datasets` names them."""
    return [f"{split}-{i:05d}-of-{num_shards:05d}.parquet" for i in range(num_shards)]


def card_text(splits: Mapping[str, pa.Table], info: CardInfo) -> str:
    """The README.md of a dataset with `splits` (YAML metadata, then the description and the command)."""
    import datasets
    from huggingface_hub import DatasetCard, DatasetCardData

    first = next(iter(splits.values()))
    features = datasets.Features.from_arrow_schema(first.schema)
    split_dict = datasets.SplitDict()
    for name, table in splits.items():
        split_dict.add(datasets.SplitInfo(name=name, num_bytes=table.nbytes, num_examples=table.num_rows))
    dataset_info = datasets.DatasetInfo(features=features, splits=split_dict)
    dataset_info.dataset_size = sum(table.nbytes for table in splits.values())
    data = DatasetCardData(
        pretty_name=info.pretty_name,
        license=info.license,
        language=list(info.language),
        task_categories=list(info.task_categories),
        size_categories=[size_category(sum(t.num_rows for t in splits.values()))],
        tags=["kt-train", *info.tags],
        configs=[
            {"config_name": "default", "data_files": [{"split": s, "path": f"{DATA_DIR}/{s}-*"} for s in splits]}
        ],
        dataset_info=dataset_info._to_yaml_dict(),
    )
    body = [f"# {info.pretty_name}", "", info.description.strip(), ""]
    if info.command:
        body += ["Made with:", "", "```", info.command, "```", ""]
    return str(DatasetCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(body)))


def write_hf_dataset(
    directory: str | Path, splits: Mapping[str, pa.Table], info: CardInfo, rows_per_shard: int = ROWS_PER_SHARD
) -> Path:
    """Write `splits` (name -> table, one schema) as Parquet shards under `directory`/data and the card; files of an
    earlier write there are replaced."""
    if not splits or len({table.schema for table in splits.values()}) != 1:
        raise ValueError("a dataset needs at least one split, and one schema for all")
    root = Path(directory)
    data_dir = root / DATA_DIR
    if data_dir.exists():
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True)
    for split, table in splits.items():
        num_shards = max(1, -(-table.num_rows // rows_per_shard))
        for i, name in enumerate(shard_names(split, num_shards)):
            pq.write_table(table.slice(i * rows_per_shard, rows_per_shard), data_dir / name, compression="zstd")
    (root / CARD_FILE).write_text(card_text(splits, info), encoding="utf-8")
    return root


__all__ = ["CardInfo", "card_text", "shard_names", "size_category", "write_hf_dataset"]
