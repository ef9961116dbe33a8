"""Read a JSONL file of existing completions (rows `id` + `completion` or `completions`), shared by the evaluations."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def read_prediction_rows(path: Path | str) -> Iterator[tuple[int, dict[str, Any], str, list[str | None]]]:
    """(line number, row, id, completions) per non-blank line. A line that is not such a row is a ValueError naming
    the file, line and key: `completion` must be a string (or null: no completion), `completions` a list of those;
    a file without any row is an error too."""
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"no predictions file {file}")
    rows = 0
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            texts = row["completions"] if "completions" in row else [row["completion"]]
            key = str(row["id"])
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValueError(f"{file}:{number}: not a row with `id` and `completion(s)`: {exc}") from None
        field = "completions" if "completions" in row else "completion"
        if not isinstance(texts, list):
            raise ValueError(f"{file}:{number}: `completions` must be a list of strings, not {type(texts).__name__}")
        for text in texts:
            if text is not None and not isinstance(text, str):
                raise ValueError(f"{file}:{number}: `{field}` holds a {type(text).__name__}, not a string (or null)")
        rows += 1
        yield number, row, key, list(texts)
    if not rows:
        raise ValueError(f"{file} holds no prediction rows (one JSON object per line with `id` and `completion`)")


__all__ = ["read_prediction_rows"]
