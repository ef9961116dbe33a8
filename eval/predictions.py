"""Read a JSONL file of existing completions, shared by the evaluations: rows `id` + `completions` (a list: one text
per sample, as the completion files the evaluations write themselves)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

FIELD = "completions"
OLD_FIELD = "completion"
"""The single-text field of older KT and NL prediction files, refused (never mixed with the list form)."""


def read_prediction_rows(path: Path | str) -> Iterator[tuple[int, dict[str, Any], str, list[str | None]]]:
    """(line number, row, id, completions) per non-blank line. A line that is not such a row is a ValueError naming
    the file, line and key: `completions` must be a list of strings (or nulls: no completion); a row of the old form
    (`completion`, one text) and a file without any row are errors too."""
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"no predictions file {file}")
    rows = 0
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if isinstance(row, dict) and OLD_FIELD in row:
                raise ValueError(
                    f"{file}:{number}: `{OLD_FIELD}` is the old form of a predictions row: write "
                    f'`"{FIELD}": [text]` (a list, one text per sample)'
                )
            texts = row[FIELD]
            key = str(row["id"])
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValueError(f"{file}:{number}: not a row with `id` and `{FIELD}`: {exc}") from None
        if not isinstance(texts, list):
            raise ValueError(f"{file}:{number}: `{FIELD}` must be a list of strings, not {type(texts).__name__}")
        for text in texts:
            if text is not None and not isinstance(text, str):
                raise ValueError(f"{file}:{number}: `{FIELD}` holds a {type(text).__name__}, not a string (or null)")
        rows += 1
        yield number, row, key, list(texts)
    if not rows:
        raise ValueError(f"{file} holds no prediction rows (one JSON object per line with `id` and `{FIELD}`)")


__all__ = ["FIELD", "read_prediction_rows"]
