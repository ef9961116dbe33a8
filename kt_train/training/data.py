"""Training data: load a dataset from a directory, file or hub id; chats to prompt/completion; length filtering."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from datasets import Dataset, load_dataset, load_from_disk

_FILE_BUILDERS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}


class DatasetUnavailableError(RuntimeError):
    """A dataset path or id that cannot be loaded (one clear line)."""


def load_training_dataset(name_or_path: str, split: str = "train") -> Dataset:
    """A `save_to_disk` directory, a directory of data files (with or without a README card), one data file, or a
    hub id (needs the network unless cached)."""
    path = Path(name_or_path)
    try:
        if path.is_dir() and (path / "dataset_info.json").is_file():
            return load_from_disk(str(path))
        if path.is_dir() and (path / "dataset_dict.json").is_file():
            return load_from_disk(str(path))[split]
        if path.is_file():
            builder = _FILE_BUILDERS.get(path.suffix)
            if builder is None:
                raise DatasetUnavailableError(f"{path}: unknown data file type (use {', '.join(_FILE_BUILDERS)})")
            return load_dataset(builder, data_files=str(path), split="train")
        if path.is_dir():
            return load_dataset(str(path), split=split)
        if path.is_absolute() or name_or_path.startswith("."):
            raise DatasetUnavailableError(f"{name_or_path}: no such dataset directory or file")
        return load_dataset(name_or_path, split=split)
    except DatasetUnavailableError:
        raise
    except Exception as exc:  # datasets raises many types; the caller prints one line
        raise DatasetUnavailableError(f"cannot load dataset {name_or_path!r} (split {split!r}): {exc}") from exc


def to_prompt_completion(dataset: Dataset) -> Dataset:
    """Chats (`messages`, last turn the assistant's) to conversational prompt/completion rows, so that TRL computes
    the loss on the answer only (`completion_only_loss`); rows that already are prompt/completion pass through."""
    if {"prompt", "completion"} <= set(dataset.column_names):
        return dataset
    if "messages" not in dataset.column_names:
        raise ValueError(f"need a `messages` column or `prompt`/`completion` columns, got {dataset.column_names}")

    def split(row: dict[str, Any]) -> dict[str, Any]:
        messages = row["messages"]
        if not messages or messages[-1]["role"] != "assistant":
            raise ValueError("every chat must end with an assistant turn")
        return {"prompt": messages[:-1], "completion": messages[-1:]}

    return dataset.map(split, remove_columns=dataset.column_names, desc="prompt/completion")


def chat_token_count(row: dict[str, Any], tokenizer: Any) -> int:
    """Tokens of a prompt/completion row as the chat template renders it for training."""
    ids = tokenizer.apply_chat_template(row["prompt"] + row["completion"], tokenize=True)
    if isinstance(ids, dict) or hasattr(ids, "keys"):
        ids = ids["input_ids"]
    return len(ids)


def drop_longer_than(dataset: Dataset, tokenizer: Any, max_length: int) -> tuple[Dataset, int]:
    """Keep the rows of at most `max_length` tokens (truncation would cut the answer, which comes last); also
    return how many rows were dropped."""
    lengths = dataset.map(
        lambda row: {"num_tokens": chat_token_count(row, tokenizer)}, desc="token counts", keep_in_memory=True
    )
    kept = lengths.filter(lambda row: row["num_tokens"] <= max_length, keep_in_memory=True).remove_columns(
        "num_tokens"
    )
    return kept, len(dataset) - len(kept)


def take_samples(dataset: Dataset, max_samples: int | None, seed: int) -> Dataset:
    """The first `max_samples` rows after a seeded shuffle (all rows, unshuffled, for None)."""
    if max_samples is None or max_samples >= len(dataset):
        return dataset
    return dataset.shuffle(seed=seed).select(range(max_samples)).flatten_indices()
