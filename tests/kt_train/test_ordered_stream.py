"""`ordered_stream`: a curriculum's rows first, then the others shuffled epoch after epoch, read in that order by the
trainer (`train_sampling_strategy: sequential`); `draw_rows`: the part of a large corpus a run can reach."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from datasets import Dataset
from transformers import Trainer, TrainingArguments

from kt_train.training.data import draw_rows, ordered_stream, repeated_epochs, rows_for_steps


def rows(name: str, count: int) -> Dataset:
    return Dataset.from_dict({"text": [f"{name}{i}" for i in range(count)]})


def test_first_rows_in_order_then_each_epoch_a_seeded_shuffle() -> None:
    stream = ordered_stream(rows("copy", 3), rows("row", 4), total=13, seed=7)
    texts = stream["text"]
    assert len(texts) == 13 and texts[:3] == ["copy0", "copy1", "copy2"]
    epochs = [texts[3:7], texts[7:11], texts[11:]]
    assert sorted(epochs[0]) == sorted(epochs[1]) == [f"row{i}" for i in range(4)]
    assert epochs[0] != epochs[1] and len(set(epochs[2])) == 2  # reshuffled each epoch; the last one cut short
    assert ordered_stream(rows("copy", 3), rows("row", 4), total=13, seed=7)["text"] == texts
    assert ordered_stream(rows("copy", 3), rows("row", 4), total=13, seed=8)["text"] != texts


def test_first_rows_that_fill_the_run_are_refused() -> None:
    with pytest.raises(ValueError, match="the first 5 rows fill all 5 training rows"):
        ordered_stream(rows("copy", 5), rows("row", 4), total=5, seed=0)
    with pytest.raises(ValueError, match="no rows to train on"):
        ordered_stream(rows("copy", 2), rows("row", 0), total=5, seed=0)


@pytest.mark.slow
def test_the_trainer_reads_the_stream_in_order(tmp_path: Path) -> None:
    stream = ordered_stream(rows("copy", 3), rows("row", 5), total=8, seed=1)
    args = TrainingArguments(
        output_dir=str(tmp_path),
        per_device_train_batch_size=2,
        train_sampling_strategy="sequential",
        use_cpu=True,
        report_to=[],
        remove_unused_columns=False,
    )
    trainer = Trainer(model=torch.nn.Linear(1, 1), args=args, train_dataset=stream, data_collator=lambda b: b)
    read = [row["text"] for batch in trainer.get_train_dataloader() for row in batch]
    assert read == stream["text"]


def test_draw_rows_keeps_a_seeded_subset_in_corpus_order() -> None:
    corpus = rows("row", 50)
    drawn = draw_rows(corpus, 12, seed=3)["text"]
    positions = [corpus["text"].index(text) for text in drawn]
    assert len(set(drawn)) == 12 and positions == sorted(positions)
    assert draw_rows(corpus, 12, seed=3)["text"] == drawn and draw_rows(corpus, 12, seed=4)["text"] != drawn
    assert draw_rows(corpus, 50, seed=3)["text"] == draw_rows(corpus, None, seed=3)["text"] == corpus["text"]


def test_rows_for_steps_is_none_for_a_run_in_epochs() -> None:
    assert rows_for_steps(7000, 16) == 112_000 and rows_for_steps(-1, 16) is None


def test_repeated_epochs_only_when_the_steps_read_more_rows_than_there_are() -> None:
    assert repeated_epochs(33_005, 2230, 16) == pytest.approx(1.081, abs=1e-3)  # the first feed run's rows
    assert repeated_epochs(35_680, 2230, 16) is None and repeated_epochs(10, -1, 16) is None
