"""Training data: load a dataset from a directory, file or hub id; chats to prompt/completion; length filtering."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
import pyarrow.parquet as pq
from datasets import Dataset, concatenate_datasets, load_dataset, load_from_disk
from transformers.trainer_utils import IntervalStrategy

_READERS = (".parquet", ".jsonl", ".json", ".csv")


class DatasetUnavailableError(LookupError):
    """A dataset path or id that cannot be loaded (one clear line; exit status 2, like any bad input)."""


def _read_table(path: Path) -> pa.Table:
    if path.suffix == ".parquet":
        return pq.read_table(path)
    if path.suffix in (".jsonl", ".json"):
        return pa_json.read_json(path)
    return pa_csv.read_csv(path)


def _data_files(directory: Path, split: str) -> list[Path]:
    """The split's data files of a dataset folder (`data/<split>-*.parquet` as `kt` writes, else any data file)."""
    files = sorted(p for p in directory.rglob("*") if p.suffix in _READERS and p.is_file())
    named = [p for p in files if p.name.startswith(f"{split}-") or p.name.startswith(f"{split}.")]
    return named or files


def load_training_dataset(name_or_path: str, split: str = "train") -> Dataset:
    """A `save_to_disk` folder, a folder of data files (Parquet, JSONL, CSV; e.g. the `kt ...` corpora), one data
    file, or a hub id (needs the network unless cached).

    Local files are read with pyarrow straight into memory, never through the datasets cache: that cache keys a
    folder's dataset by its folder name and card, so two different corpora in folders both named `rle/` would share
    one stale cache entry.
    """
    path = Path(name_or_path)
    try:
        if path.is_dir() and (path / "dataset_info.json").is_file():
            return load_from_disk(str(path))
        if path.is_dir() and (path / "dataset_dict.json").is_file():
            return load_from_disk(str(path))[split]
        if path.is_file() or path.is_dir():
            files = [path] if path.is_file() else _data_files(path, split)
            if not files or any(f.suffix not in _READERS for f in files):
                raise DatasetUnavailableError(f"{path}: no data files ({', '.join(_READERS)})")
            return Dataset(pa.concat_tables([_read_table(f) for f in files], promote_options="default"))
        if path.is_absolute() or name_or_path.startswith("."):
            raise DatasetUnavailableError(f"{name_or_path}: no such dataset directory or file")
        return load_dataset(name_or_path, split=split)
    except DatasetUnavailableError:
        raise
    except Exception as exc:  # pyarrow and datasets raise many types; the caller prints one line
        raise DatasetUnavailableError(f"cannot load dataset {name_or_path!r} (split {split!r}): {exc}") from exc


def has_split(name_or_path: str, split: str) -> bool:
    """Whether a dataset folder, file or cached hub dataset has the split `split` (a folder of data files: files
    named `<split>-*` or `<split>.*`; one data file: only `train`)."""
    path = Path(name_or_path)
    if path.is_dir() and (path / "dataset_dict.json").is_file():
        return split in load_from_disk(str(path))
    if (path.is_dir() and (path / "dataset_info.json").is_file()) or path.is_file():
        return split == "train"
    if path.is_dir():
        files = _data_files(path, split)
        return bool(files) and all(p.name.startswith((f"{split}-", f"{split}.")) for p in files)
    try:
        from datasets import get_dataset_split_names

        return split in get_dataset_split_names(name_or_path)
    except Exception:  # an unknown or unreachable hub id has no split we can use
        return False


def load_eval_split(name_or_path: str, split: str) -> Dataset | None:
    """The split `split` of a dataset, or None when it has none (then an evaluation holds rows out of training)."""
    return load_training_dataset(name_or_path, split) if has_split(name_or_path, split) else None


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
    """Tokens of a prompt/completion row as the chat template renders it for training (a prompt-only row, as GRPO
    trains on: its prompt)."""
    ids = tokenizer.apply_chat_template(row["prompt"] + row.get("completion", []), tokenize=True)
    if hasattr(ids, "keys"):  # a BatchEncoding in recent transformers
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


def hold_out(dataset: Dataset, size: float, seed: int) -> tuple[Dataset, Dataset]:
    """(training rows, evaluation rows): `size` rows (a fraction of them when below 1) drawn with `seed`."""
    count = int(size) if size >= 1 else round(size * len(dataset))
    if not 1 <= count < len(dataset):
        raise ValueError(
            f"eval_split_size {size} holds out {count} of {len(dataset)} rows: need 1 to {len(dataset) - 1}"
        )
    split = dataset.train_test_split(test_size=count, seed=seed, shuffle=True)
    return split["train"].flatten_indices(), split["test"].flatten_indices()


def evaluates(training_args: Any) -> bool:
    """Whether the run evaluates during training (`eval_strategy` steps or epoch)."""
    return training_args.eval_strategy != IntervalStrategy.NO


def take_samples(dataset: Dataset, max_samples: int | None, seed: int) -> Dataset:
    """The first `max_samples` rows after a seeded shuffle (all rows, unshuffled, for None)."""
    if max_samples is None or max_samples >= len(dataset):
        return dataset
    return dataset.shuffle(seed=seed).select(range(max_samples)).flatten_indices()


def rows_for_steps(max_steps: int, rows_a_step: int) -> int | None:
    """Training rows a run of `max_steps` steps reads (`rows_a_step`: batch x accumulation x processes); None when
    the run is set in epochs (`max_steps` <= 0)."""
    return max_steps * rows_a_step if max_steps > 0 else None


def rows_a_step(training_args: Any) -> int:
    """Training rows one optimizer step reads, over every process (TrainingArguments' batch, accumulation, world)."""
    return (
        training_args.per_device_train_batch_size
        * training_args.gradient_accumulation_steps
        * training_args.world_size
    )


def repeated_epochs(num_rows: int, max_steps: int, rows_a_step: int) -> float | None:
    """Epochs over `num_rows` training rows when `max_steps` steps read more rows than there are (rows repeat);
    None when they do not, or the run is set in epochs."""
    needed = rows_for_steps(max_steps, rows_a_step)
    return needed / num_rows if needed is not None and 0 < num_rows < needed else None


def draw_rows(dataset: Dataset, count: int | None, seed: int) -> Dataset:
    """`count` rows drawn with `seed`, in the dataset's order (every row when it has no more, or `count` is None):
    a corpus far larger than a run reads is tokenized and filtered only in the part the run can reach."""
    if count is None or count >= len(dataset):
        return dataset
    import numpy as np

    chosen = np.sort(np.random.default_rng(seed).choice(len(dataset), size=count, replace=False))
    return dataset.select(chosen).flatten_indices()


def ordered_stream(first: Dataset, rest: Dataset, total: int, seed: int) -> Dataset:
    """`total` rows in training order, for `train_sampling_strategy: sequential`: every row of `first` as it is (a
    curriculum), then `rest` shuffled with `seed`, again with `seed + 1`, and so on until `total` rows."""
    import numpy as np

    if total <= len(first):
        raise ValueError(f"the first {len(first)} rows fill all {total} training rows: nothing else would train")
    if len(rest) == 0:
        raise ValueError("no rows to train on after the first ones")
    indices = [np.arange(len(first))]
    left, epoch = total - len(first), 0
    while left > 0:
        order = np.random.default_rng(seed + epoch).permutation(len(rest))[:left]
        indices.append(order + len(first))
        left, epoch = left - len(order), epoch + 1
    both = concatenate_datasets([first.cast(rest.features), rest])
    return both.select(np.concatenate(indices)).flatten_indices()
