"""Prediction files (eval.predictions): rows `id` + `completions` (a list) in every evaluation, anything else refused
in one line naming the file, line and key (was: an integer completion taken as none, a string `completions` split
into one sample per character, an empty file accepted; KT and NL files used `completion`, RTCE `completions`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.predictions import read_prediction_rows


def _file(tmp_path: Path, *rows: object) -> Path:
    path = tmp_path / "predictions.jsonl"
    path.write_text("".join(f"{json.dumps(r) if not isinstance(r, str) else r}\n" for r in rows), encoding="utf-8")
    return path


def test_rows_of_the_one_shape(tmp_path: Path) -> None:
    path = _file(tmp_path, {"id": "a", "completions": ["x"]}, "", {"id": 7, "completions": ["y", None]})
    rows = [(number, key, texts) for number, _, key, texts in read_prediction_rows(path)]
    assert rows == [(1, "a", ["x"]), (3, "7", ["y", None])]


def test_the_old_single_completion_form_is_refused_not_mixed(tmp_path: Path) -> None:
    path = _file(tmp_path, {"id": "a", "completions": ["x"]}, {"id": "b", "completion": "y"})
    with pytest.raises(
        ValueError, match=r"predictions\.jsonl:2: `completion` is the old form .* `\"completions\": \[text\]`"
    ):
        list(read_prediction_rows(path))


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"id": "a", "completions": [12]}, r"predictions\.jsonl:1: `completions` holds a int, not a string"),
        ({"id": "a", "completion": "x", "completions": ["x"]}, r":1: `completion` is the old form"),
        ({"id": "a", "completions": "output = [1]"}, r":1: `completions` must be a list of strings, not str"),
        ({"id": "a", "completions": [["nested"]]}, r":1: `completions` holds a list"),
        ({"completions": ["x"]}, r":1: not a row with `id`"),
        ("{not json", r":1: not a row with `id`"),
    ],
)
def test_bad_rows_are_one_line_naming_the_place(tmp_path: Path, row: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        list(read_prediction_rows(_file(tmp_path, row)))


def test_an_empty_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="holds no prediction rows"):
        list(read_prediction_rows(_file(tmp_path, "", "  ")))
    with pytest.raises(FileNotFoundError):
        list(read_prediction_rows(tmp_path / "missing.jsonl"))
