"""One writer for the datasets kt-train makes: Parquet shards named as `datasets` expects
(`data/<split>-00000-of-00001.parquet`) and a card whose metadata `load_dataset(DIR)` and the Hub read without a
warning: `configs`, a full `dataset_info` (features, and splits with sizes), license, language, task categories, size
category, tags, plus the command that made the dataset.

Row ids follow one scheme (`row_id`): the item's id, then the parts that tell its rows apart, joined by `/`, e.g.
`kt-dsl-42-17`, `rtce-42-0003/lzw/output_pred`, `rtce-42-0003/lzw/encode`, `arithmetic-d2-00004/e2w`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

DATA_DIR = "data"
CARD_FILE = "README.md"
ROWS_PER_SHARD = 250_000
SIZE_CATEGORIES = (
    (1_000, "n<1K"),
    (10_000, "1K<n<10K"),
    (100_000, "10K<n<100K"),
    (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"),
    (100_000_000, "10M<n<100M"),
)
ID_PART = re.compile(r"[A-Za-z0-9_.+-]+")


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


@dataclass(frozen=True)
class SplitSize:
    """A split's figures as `dataset_info` records them."""

    num_examples: int = field(metadata={"help": "rows"})
    num_bytes: int = field(metadata={"help": "bytes of the rows in Arrow memory"})


def row_id(*parts: str | int) -> str:
    """The id of a row: `parts` (item id first, or the id of the row it extends) joined by `/`; each part between
    slashes is letters, digits and `_.+-`."""
    texts = [text for part in parts for text in str(part).split("/")]
    bad = [text for text in texts if not ID_PART.fullmatch(text)]
    if not texts or bad:
        raise ValueError(f"an id part is letters, digits and _.+- only, got {bad or texts!r}")
    return "/".join(texts)


def size_category(rows: int) -> str:
    """The Hub's size category of a dataset of `rows` rows."""
    return next((name for limit, name in SIZE_CATEGORIES if rows < limit), "n>1T")


def shard_names(split: str, num_shards: int) -> list[str]:
    """The shard files of a split, as `datasets` names them."""
    return [f"{split}-{i:05d}-of-{num_shards:05d}.parquet" for i in range(num_shards)]


def split_sizes(splits: Mapping[str, pa.Table]) -> dict[str, SplitSize]:
    """The figures of each split of in-memory tables."""
    return {name: SplitSize(table.num_rows, table.nbytes) for name, table in splits.items()}


def card_text(schema: pa.Schema, sizes: Mapping[str, SplitSize], info: CardInfo) -> str:
    """The README.md of a dataset of `schema` with splits of `sizes` (YAML metadata, then the description and the
    command)."""
    import datasets
    from huggingface_hub import DatasetCard, DatasetCardData

    split_dict = datasets.SplitDict()
    for name, size in sizes.items():
        split_dict.add(datasets.SplitInfo(name=name, num_bytes=size.num_bytes, num_examples=size.num_examples))
    dataset_info = datasets.DatasetInfo(features=datasets.Features.from_arrow_schema(schema), splits=split_dict)
    dataset_info.dataset_size = sum(size.num_bytes for size in sizes.values())
    data = DatasetCardData(
        pretty_name=info.pretty_name,
        license=info.license,
        language=list(info.language),
        task_categories=list(info.task_categories),
        size_categories=[size_category(sum(size.num_examples for size in sizes.values()))],
        tags=["kt-train", *info.tags],
        configs=[{"config_name": "default", "data_files": [{"split": s, "path": f"{DATA_DIR}/{s}-*"} for s in sizes]}],
        dataset_info=dataset_info._to_yaml_dict(),
    )
    body = [f"# {info.pretty_name}", "", info.description.strip(), ""]
    if info.command:
        body += ["Made with:", "", "```", info.command, "```", ""]
    return str(DatasetCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(body)))


def write_card(directory: str | Path, schema: pa.Schema, sizes: Mapping[str, SplitSize], info: CardInfo) -> Path:
    """Write the card of a dataset whose shards are already under `directory`/data; return its path."""
    path = Path(directory) / CARD_FILE
    path.write_text(card_text(schema, sizes, info), encoding="utf-8")
    return path


def clear_data(directory: str | Path, splits: Iterable[str] | None = None) -> Path:
    """`directory`/data, created, with the shards of `splits` (every shard when None) of an earlier write removed."""
    data_dir = Path(directory) / DATA_DIR
    data_dir.mkdir(parents=True, exist_ok=True)
    patterns = ["*.parquet"] if splits is None else [f"{split}-*.parquet" for split in splits]
    for pattern in patterns:
        for stale in data_dir.glob(pattern):
            stale.unlink()
    return data_dir


def write_hf_dataset(
    directory: str | Path, splits: Mapping[str, pa.Table], info: CardInfo, rows_per_shard: int = ROWS_PER_SHARD
) -> Path:
    """Write `splits` (name -> table, one schema) as Parquet shards under `directory`/data and the card; files of an
    earlier write there are replaced. An empty split is left out (`datasets` cannot read an empty shard) unless every
    split is empty."""
    if not splits or len({table.schema for table in splits.values()}) != 1:
        raise ValueError("a dataset needs at least one split, and one schema for all")
    splits = {name: table for name, table in splits.items() if table.num_rows} or dict(list(splits.items())[:1])
    root = Path(directory)
    data_dir = clear_data(root)
    for split, table in splits.items():
        num_shards = max(1, -(-table.num_rows // rows_per_shard))
        for i, name in enumerate(shard_names(split, num_shards)):
            pq.write_table(table.slice(i * rows_per_shard, rows_per_shard), data_dir / name, compression="zstd")
    write_card(root, next(iter(splits.values())).schema, split_sizes(splits), info)
    return root


__all__ = [
    "ID_PART",
    "CardInfo",
    "SplitSize",
    "card_text",
    "clear_data",
    "row_id",
    "shard_names",
    "size_category",
    "split_sizes",
    "write_card",
    "write_hf_dataset",
]
