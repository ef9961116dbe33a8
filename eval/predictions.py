"""Read a JSONL file of existing completions (rows `id` + `completion` or `completions`), shared by the evaluations."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def read_prediction_rows(path: Path | str) -> Iterator[tuple[int, dict[str, Any], str, list[str | None]]]:
    """(line number, row, id, completions) per non-blank line; a line that is not such a row is a ValueError."""
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"no predictions file {file}")
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            texts = row["completions"] if "completions" in row else [row["completion"]]
            key = str(row["id"])
            completions = [t if isinstance(t, str) else None for t in texts]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValueError(f"{file}:{number}: not a row with `id` and `completion(s)`: {exc}") from None
        yield number, row, key, completions


__all__ = ["read_prediction_rows"]
