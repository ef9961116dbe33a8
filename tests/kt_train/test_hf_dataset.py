"""`kt_train.hf_dataset`: the row-id scheme and the splits a dataset keeps (every writer is tested end to end in
tests/test_datasets.py)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from datasets import load_dataset

from kt_train.hf_dataset import CardInfo, row_id, size_category, write_hf_dataset


def test_row_ids_join_parts_item_first() -> None:
    assert row_id("rtce-42-0003", "lzw", "encode") == "rtce-42-0003/lzw/encode"
    assert (
        row_id("arithmetic-k2-d2-s000-i0/procedural", "qwen-0.6b+ft")
        == "arithmetic-k2-d2-s000-i0/procedural/qwen-0.6b+ft"
    )
    assert row_id("kt-dsl", 42) == "kt-dsl/42"
    for bad in (("a b",), ("a", ""), ("a:b",), ()):
        with pytest.raises(ValueError, match="letters, digits"):
            row_id(*bad)


def test_an_empty_split_is_left_out(tmp_path: Path) -> None:
    """`datasets` cannot read an empty shard ("BatchSize must be greater than 0"): `kt nl ft-data` with few pairs per
    depth has an empty test split."""
    schema = pa.schema([("id", pa.string())])
    splits = {"train": pa.table({"id": ["a", "b"]}, schema=schema), "test": schema.empty_table()}
    write_hf_dataset(tmp_path / "d", splits, CardInfo("d", "rows"))
    assert [p.name for p in (tmp_path / "d" / "data").iterdir()] == ["train-00000-of-00001.parquet"]
    assert list(load_dataset(str(tmp_path / "d"), cache_dir=str(tmp_path / "cache"))) == ["train"]
    assert (size_category(999), size_category(1000)) == ("n<1K", "1K<n<10K")
